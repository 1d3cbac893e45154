"Newcomer frictions, tried as a new user would: make_env's seed, an env not reset, done/success never stale, preset names."
import contextlib, io, json
import pytest, yaml
from pettingllms_nb.core.registry import make_env, make_agent
from pettingllms_nb.core.env import NotResetError
from pettingllms_nb.core.agent import take_turn, run_sync
from pettingllms_nb.core.config import load_config, ConfigError, list_presets, describe_presets
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.envs.toy import RelayState, oracle_policy


def test_make_env_with_a_seed_is_reset_to_that_problem():
    env = make_env('toy_relay', seed=4)
    again = make_env('toy_relay')
    again.reset(4)
    assert (env.seed, env.turn, env.state) == (4, 0, again.state)
    assert env.problem_uid == 'toy_relay/seed=4'
    sudoku, by_hand = make_env('stateful_env', seed=2, benchmark='sudoku'), make_env('stateful_env', benchmark='sudoku')
    by_hand.reset(2)
    assert sudoku.state.to_dict() == by_hand.state.to_dict()


def test_an_env_that_was_not_reset_says_so():
    env = make_env('toy_relay')
    for read in (lambda: env.state, lambda: env.done, lambda: env.success, lambda: env.state.count):
        with pytest.raises(NotResetError, match=r"has not been reset: call env\.reset\(seed\)"): read()
    assert 'not reset' in repr(env) and 'not reset' in env._repr_html_()
    scout = make_agent('scout')
    with pytest.raises(NotResetError, match='reset'): scout.update_from_env(env, 0)
    with pytest.raises(TypeError, match=r"call env\.reset\(seed\)"): type(env)(seed=1)   # a constructor picks no problem


def test_done_and_success_follow_every_state_change():
    "Edits by hand, a replaced state, an agent's step, a clone, the turn counter: `done`/`success` are never stale."
    env = make_env('toy_relay', seed=0)
    assert (env.done, env.success) == (False, False)
    env.state.count = env.state.target                 # a field edited in place
    assert (env.done, env.success) == (True, True)
    env.state.count -= 1
    assert (env.done, env.success) == (False, False)   # and back: nothing sticky
    env.state = RelayState(target=3, count=4)          # the whole state replaced
    assert (env.done, env.success) == (True, False)   # past the target: over, not solved
    branch = env.clone()
    branch.state.count = 3
    assert (branch.success, env.success) == (True, False)   # a clone's state is its own, and so are its flags
    env.reset(0)
    scout, runner = make_agent('scout'), make_agent('runner')
    scout.update_from_env(env, 0); take_turn(scout, env, f"#### [{env.state.target}]")
    runner.update_from_env(env, 0)
    runner.update_from_model(f"#### [{env.state.hint}]")
    run_sync(runner.step(env))                         # stepped without refresh(): success is there already
    assert env.success and env.done
    env.reset(0)
    env.turn = env.max_turns                           # out of turns
    assert env.done and not env.success
    env.turn = 0
    assert not env.done
    with pytest.raises(AttributeError, match='computed from the state'): env.success = True


def test_engine_results_record_the_live_flags():
    tr = rollout('toy_relay', oracle_policy, seeds=range(4))
    assert all(s.done == s.success for s in tr if s.role == 'runner') and tr.success_rate() == 1.0


def test_a_preset_name_that_is_almost_right_suggests_the_preset():
    with pytest.raises(ConfigError, match="did you mean.*'stateful_sudoku'"): load_config('sudoku')
    with pytest.raises(ConfigError, match="did you mean 'tiny_plan_path'"): load_config('tiny_plan_pth')


def test_every_preset_has_a_one_line_description_the_cli_lists():
    from pettingllms_nb.cli import main
    d = describe_presets()
    assert sorted(d) == list_presets() and all(d.values()), [k for k, v in d.items() if not v]
    assert all('\n' not in v and len(v) <= 120 for v in d.values())
    with contextlib.redirect_stdout(io.StringIO()) as out: assert main(['presets']) == 0
    assert [l.split(None, 1) for l in out.getvalue().splitlines()] == [[k, v] for k, v in d.items()]


def test_cli_config_prints_the_merged_yaml():
    from pettingllms_nb.cli import main
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(['config', 'tiny_plan_path_lora', 'training.lr=0.002', 'env.max_turns=2']) == 0
    printed = yaml.safe_load(out.getvalue())
    assert printed == load_config('tiny_plan_path_lora', ['training.lr=0.002', 'env.max_turns=2']).to_dict()
    assert (printed['specialization'], printed['training']['lr'], printed['env']['max_turns']) == ('lora', 0.002, 2)
    assert printed['training']['warmstart_steps'] == 200          # from _tiny_plan_path, two `defaults:` levels down


# -- the second hour (issue 25): the CLI's own words ------------------------------------------------------------------
@pytest.mark.parametrize('override,says', [
    ('training.lr=abc', "training.lr='abc': allowed values are numbers"),
    ('env.max_turns=two', "env.max_turns='two': allowed values are integers"),
    ('training.normalize_std=maybe', "training.normalize_std='maybe': allowed values are true or false"),
    ('training.logger=3', "training.logger=3: allowed values are a list"),
])
def test_type_errors_are_said_in_the_projects_words(override, says):
    "A value of the wrong type reads like every other bad value: key, value, what is allowed (not OmegaConf's text)."
    with pytest.raises(ConfigError) as info: load_config('tiny_plan_path', [override])
    assert len(info.value.errors) == 1 and info.value.errors[0].startswith(says), info.value.errors
    assert 'could not be converted' not in str(info.value) and 'AnyNode' not in str(info.value)


def test_seeds_is_a_count_or_a_list_and_says_so():
    "`--seeds` of check-env and rollout: `4` is seeds 0-3, `0,3,5` those seeds; anything else is one line, rc 2."
    from pettingllms_nb.cli import main, seed_list, build_parser
    assert seed_list('3') == [0, 1, 2] and seed_list('0,3,5') == [0, 3, 5]
    for cmd in ('check-env', 'rollout'):
        helps = build_parser()._subparsers._group_actions[0].choices[cmd].format_help()
        assert 'a count (4: seeds 0-3) or a list (0,3,5)' in ' '.join(helps.split()), cmd
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop: main(['rollout', 'tiny_plan_path', '--seeds', '0,x'])
    assert stop.value.code == 2 and "'0,x': expected a count >= 1 (e.g. 4: seeds 0-3) or a list of seeds" in err.getvalue()


def test_rollout_runs_the_seeds_it_was_given(tmp_path):
    from pettingllms_nb.cli import main
    from pettingllms_nb.engine.trace import Trace
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(['rollout', 'tiny_plan_path', '--seeds', '3,5', '--policy', 'oracle', '--out', str(tmp_path / 't.jsonl')]) == 0
        assert main(['rollout', 'tiny_plan_path', '--seeds', '2', '--policy', 'oracle', '--out', str(tmp_path / 'n.jsonl')]) == 0
    assert Trace.load(tmp_path / 't.jsonl').meta['seeds'] == [3, 5] and Trace.load(tmp_path / 'n.jsonl').meta['seeds'] == [0, 1]


# -- run folders and checkpoints (issue 25) ---------------------------------------------------------------------------
def _cli(*argv) -> tuple:
    "(exit status, stderr) of `pettingllms-nb ARGV` run in this process."
    from pettingllms_nb.cli import main
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err): rc = main(list(argv))
    return rc, err.getvalue()


def test_train_refuses_a_folder_that_holds_a_run(tmp_path):
    "A second `train` into a run folder says so in one line (rc 2) instead of appending to it; nothing is touched."
    (tmp_path / 'metrics.jsonl').write_text('{"step": 0}\n')
    rc, err = _cli('train', 'tiny_plan_path', '--out', str(tmp_path))
    assert rc == 2 and err.count('\n') == 1, err
    assert f"{tmp_path} already holds a run (metrics.jsonl): pass --resume to continue it or --fresh to start over" in err
    assert (tmp_path / 'metrics.jsonl').read_text() == '{"step": 0}\n'
    rc, err = _cli('train', 'tiny_plan_path', '--out', str(tmp_path), '--resume', '--fresh')
    assert rc == 2 and 'pass one of them' in err


def test_train_fresh_starts_over(tmp_path):
    (tmp_path / 'metrics.jsonl').write_text('{"step": 99}\n')
    rc, err = _cli('train', 'tiny_plan_path', 'training.total_training_steps=1', 'training.warmstart_steps=0', 'training.val_freq=0',
                   'training.train_batch_size=1', 'training.train_sample_num=2', '--out', str(tmp_path), '--fresh')
    assert rc == 0, err
    steps = [json.loads(l)['step'] for l in (tmp_path / 'metrics.jsonl').read_text().splitlines()]
    assert steps == [1], steps


def test_eval_checks_the_checkpoint_it_is_given(tmp_path):
    "A missing checkpoint is one line (rc 2); one trained for another environment is refused by name, unless --force."
    rc, err = _cli('eval', 'tiny_plan_path', '--checkpoint', str(tmp_path / 'nope'))
    assert rc == 2 and err.count('\n') == 1 and 'not a checkpoint (no trainer_state.json)' in err, err
    ck = tmp_path / 'checkpoints' / 'step_000003'; ck.mkdir(parents=True)
    (ck / 'trainer_state.json').write_text('{}')
    (ck / 'config.yaml').write_text(load_config('tiny_search').to_yaml())
    rc, err = _cli('eval', 'tiny_plan_path', '--checkpoint', str(ck))
    assert rc == 2 and err.count('\n') == 1, err
    assert "env.name: the checkpoint was trained with 'search_env', the config asks for 'stateful_env'" in err
    assert "(--force evaluates it anyway)" in err


def test_a_missing_extra_names_the_command_that_works_here_once():
    "An unavailable part says why and one install command: `pip install -e` of this clone here (a wheel: the index)."
    from pettingllms_nb.core.registry import Registry, UnavailableError, install_command
    assert install_command('web') == "pip install -e '.[web]'"          # the tests run from the clone's root
    ghost = Registry(builtins={'no_such_module_for_a_test': ('web', [('env', 'ghost_env')])}, plugin_group=None)
    with pytest.raises(UnavailableError) as info: ghost.get('env', 'ghost_env')
    assert str(info.value).count('pip install') == 1 and str(info.value).endswith("install it with: pip install -e '.[web]'")
    said = Registry(builtins={}, plugin_group=None)
    said.mark_unavailable('env', 'own_words', 'm', "ImportError: needs x: pip install 'pettingllms-nb[web]'", 'web')
    with pytest.raises(UnavailableError) as info: said.get('env', 'own_words')
    assert str(info.value).count('pip install') == 1


def test_an_env_whose_extra_is_missing_is_refused_before_any_step(monkeypatch):
    "Without rapidfuzz web_env is listed unavailable with what is missing, and check-env refuses it in one line (rc 2)."
    import importlib.util
    from pettingllms_nb.core import registry as reg_mod
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *a: None if name == 'rapidfuzz' else real(name, *a))
    r = reg_mod.Registry(builtins={'pettingllms_nb.envs.web.env': ('web', [('env', 'web_env')])}, plugin_group=None)
    assert 'web_env' not in r.names('env') and [row[2] for row in r.show()] == ['unavailable']
    with pytest.raises(reg_mod.UnavailableError, match=r"needs rapidfuzz, which is not installed; install it with: pip install -e '\.\[web\]'"):
        r.get('env', 'web_env')
    monkeypatch.setitem(reg_mod.registry.entries['env'], 'web_env', r.entries['env']['web_env'])
    rc, err = _cli('check-env', 'web_env')
    first = err.splitlines()[0]   # (a second line says how to see the traceback)
    assert rc == 2 and "env 'web_env' is unavailable" in first and 'install it with' in first and 'no env or preset' not in err, err


def test_missing_data_is_refused_before_any_model_is_built(tmp_path, monkeypatch):
    "Issue 25: `train tiny_search env.dataset=bamboogle` and `train tiny_alfworld env.benchmark=alfworld env.size=null` died 20-25 s in, with a traceback."
    import time
    from pettingllms_nb.data.sources import DataMissing
    from pettingllms_nb.training.trainer import Trainer
    monkeypatch.setenv('PLLM_DATA', str(tmp_path / 'data'))          # an empty data directory
    monkeypatch.setenv('ALFWORLD_DATA', str(tmp_path / 'alfworld'))   # and no ALFWorld folder
    t0 = time.perf_counter()
    rc, err = _cli('train', 'tiny_search', 'env.source=bamboogle', '--out', str(tmp_path / 'run'))
    assert rc == 2 and err.splitlines()[0] == (
        "pettingllms-nb train: env.source='bamboogle': data source 'bamboogle' (search_env, split 'test') is not in the "
        f"data directory {tmp_path / 'data'}: get it with `pettingllms-nb data prepare bamboogle` "
        "(`pettingllms-nb data list` shows every source)"), err
    rc, err = _cli('train', 'tiny_search', 'env.dataset=bamboogle', '--out', str(tmp_path / 'run'))
    assert rc == 2 and "env.dataset='bamboogle': contradicts env.source='generated'" in err, err
    rc, err = _cli('rollout', 'search_env', 'env.source=null', 'env.dataset=bamboogle', '--seeds', '1')
    assert rc == 2 and "env.dataset='bamboogle': a real question set is read from its file, and none is given" in err, err
    rc, err = _cli('eval', 'tiny_alfworld', 'env.source=alfworld', 'env.size=null', '--out', str(tmp_path / 'run'))
    assert rc == 2 and "env.source='alfworld': data source 'alfworld' (alfworld_env, split 'valid_seen')" in err, err
    with pytest.raises(DataMissing, match="data prepare bamboogle"):
        Trainer('tiny_search', ['env.source=bamboogle'], out_dir=tmp_path / 'run')
    assert time.perf_counter() - t0 < 30 and not (tmp_path / 'run').exists()   # nothing made for the run

"Newcomer frictions, tried as a new user would: make_env's seed, an env not reset, done/success never stale, preset names."
import contextlib, io
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

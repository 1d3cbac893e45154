"alfworld_env (pettingllms_nb.envs.alfworld): generated tasks, the ALFWorld loader, TextWorld games, invalid actions, replay clones."
import asyncio, hashlib, json, math, os, random, subprocess, sys, time
from pathlib import Path

import pytest

pytest.importorskip("textworld", reason="alfworld_env needs the [alfworld] extra")
pytest.importorskip("alfworld", reason="alfworld_env needs the [alfworld] extra")

from pettingllms_nb.core.agent import run_sync, take_turn
from pettingllms_nb.core.config import VAL_SEED_BASE, env_kwargs, load_config
from pettingllms_nb.core.registry import BUILTINS, Registry, registry
from pettingllms_nb.engine.check_env import GARBAGE, check_env
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.training.advantages import at_grpo, grpo
from pettingllms_nb.envs.alfworld.agents import AlfworldExecutor, AlfworldPlanner, parse_action, parse_compact
from pettingllms_nb.envs.alfworld.data import (OBJECTS, TASK_TYPES, TOOLS, generate_solvable, load_alfworld, make_textworld_game,
                                               milestones, progress, write_alfworld_layout)
from pettingllms_nb.envs.alfworld.engine import INVALID_FEEDBACK, AlfredEngine, SimulatorError
from pettingllms_nb.envs.alfworld.env import WALKTHROUGHS, AlfworldEnv
from pettingllms_nb.envs.alfworld.prompts import commands_in, expand_command, read_compact

ROOT = Path(__file__).resolve().parents[1]
ORACLE, RANDOM = registry.scripted('alfworld_env', 'oracle'), registry.scripted('alfworld_env', 'random')
PRESETS = ['alfworld', 'alfworld_single', 'gpu_alfworld_qwen3_1.7b_lora', 'gpu_alfworld_real_qwen3_1.7b_lora',
           'tiny_alfworld', 'tiny_alfworld_lora', 'tiny_alfworld_single']


# -- generated tasks ---------------------------------------------------------------------------

@pytest.mark.parametrize('task_type', sorted(TASK_TYPES))
def test_every_task_type_is_generated_and_solvable(task_type):
    for seed in (1, 2):
        t = generate_solvable(seed, task_type)
        assert t.goal.task_type == TASK_TYPES[task_type] and t.walkthrough
        eng = AlfredEngine(t.game())
        assert t.sentence in eng.last.feedback
        seen = [progress(t.goal, eng.facts())]
        for c in t.walkthrough:
            assert c in eng.last.admissible, (c, eng.last.admissible)
            obs = eng.step(c)
            seen.append(progress(t.goal, eng.facts()))
            assert (seen[-1] == 1.0) == obs.won     # progress reaches 1 exactly when the simulator says won
        assert obs.won and seen[0] == 0.0 and seen == sorted(seen)


def test_generation_is_a_function_of_the_seed():
    a, b, c = generate_solvable(5), generate_solvable(5), generate_solvable(6)
    assert a.pddl() == b.pddl() and a.walkthrough == b.walkthrough
    assert a.pddl() != c.pddl()


def test_tables_follow_alfred():
    "Our canContain and affordance tables are subsets of ALFRED's own (alfworld.gen.constants)."
    import alfworld.gen.constants as C
    for obj, (aff, receps) in OBJECTS.items():
        for r in receps.split():
            assert obj in C.VAL_RECEPTACLE_OBJECTS[r], (r, obj)
        for verb, key in (('heat', 'Heatable'), ('cool', 'Coolable'), ('clean', 'Cleanable')):
            if verb in aff.split(): assert obj in C.VAL_ACTION_OBJECTS[key], (verb, obj)
    assert {v[1] for v in TOOLS.values()} <= set(C.RECEPTACLES)


def _win_rate(policy, seeds, max_turns=50, **kw):
    t = rollout('alfworld_env', policy, seeds=seeds, max_turns=max_turns, **kw)
    types = {s.state_after['task_type'] for s in t if s.turn_idx == 0}
    return sum(e.success for e in t.episodes) / len(t.episodes), types, t


def test_oracle_wins_held_out_tasks_quick():
    rate, types, t = _win_rate(ORACLE, range(VAL_SEED_BASE, VAL_SEED_BASE + 6), max_turns=20)
    assert rate == 1.0
    assert all(e.rewards['alfworld_planner'] > 0 for e in t.episodes)


@pytest.mark.slow
def test_oracle_wins_100_held_out_tasks_of_all_six_types():
    rate, types, _ = _win_rate(ORACLE, range(VAL_SEED_BASE, VAL_SEED_BASE + 100))
    assert rate == 1.0
    assert types == set(TASK_TYPES.values())


@pytest.mark.slow
def test_random_admissible_actions_win_rarely():
    rate, _, t = _win_rate(RANDOM, range(VAL_SEED_BASE, VAL_SEED_BASE + 12))
    assert rate <= 0.25, rate
    assert all(s.state_after['invalid_actions'] == 0 for s in t)   # random picks admissible commands only


def test_single_agent_baseline():
    rate, _, _ = _win_rate(ORACLE, [VAL_SEED_BASE + 1], max_turns=20, turn_order=['alfworld_single_agent'])
    assert rate == 1.0


# -- invalid actions ---------------------------------------------------------------------------

def test_invalid_commands_never_crash_and_are_never_substituted():
    env = AlfworldEnv(); env.reset(21)
    ex = AlfworldExecutor()
    rng = random.Random(0)
    junk = [g for g in GARBAGE if g] + ["Action: " + ''.join(rng.choice('abc xyz019!?') for _ in range(rng.randint(1, 60)))
                                        for _ in range(20)] + ["Action: go to the moon", "Action: " + "x" * 300]
    for i, g in enumerate(junk):
        before = (list(env.sim_log), env.sim.last.fingerprint, env.state.progress)
        ex.update_from_env(env, i)
        r = take_turn(ex, env, g)
        assert (list(env.sim_log), env.sim.last.fingerprint, env.state.progress) == before
        if ex.format_error is None:
            assert env.state.last_valid is False and env.state.observation == INVALID_FEEDBACK
            assert ex.reward_terms['invalid'] == -1.0 and r < 0
        else: assert ex.reward_terms['format'] == -1.0
    assert env.state.invalid_actions == sum(1 for h in env.state.history if not h['valid']) > 0


def test_garbage_planner_keeps_the_plan():
    env = AlfworldEnv(); env.reset(21)
    pl = AlfworldPlanner(); pl.update_from_env(env, 0)
    take_turn(pl, env, "Plan:\n1. find the target\n2. put it away")
    for g in GARBAGE:
        pl.update_from_env(env, 0); take_turn(pl, env, g)
        assert pl.format_error and env.state.plan == ['find the target', 'put it away']


# -- replay clones -----------------------------------------------------------------------------

@pytest.mark.skipif(not Path('/proc/self/maps').exists(), reason='counts mapped libraries through /proc (Linux)')
def test_planner_libraries_number_the_most_games_alive_at_once():
    "Each live game maps its own 33 MB copy of libdownward.so; closed games give theirs to the next, so none is loaded anew."
    from pettingllms_nb.envs.alfworld.data import generate_task
    def copies(): return len({l.split()[-2] for l in open('/proc/self/maps') if 'libdownward' in l})
    tasks = [generate_task(s, None, 3) for s in range(12)]
    first = [AlfredEngine(t.game()) for t in tasks]
    peak = copies()
    for e in first: e.close()
    again = [AlfredEngine(t.game()) for t in tasks]
    assert copies() == peak
    for e in again: e.close()
    with pytest.raises(AttributeError): first[0].step('look')   # a closed game fails in Python, not in the library
    t = generate_solvable(3)
    eng = AlfredEngine(t.game())
    for c in t.walkthrough: obs = eng.step(c)
    assert obs.won and copies() == peak   # a pooled library still plays


@pytest.mark.skipif(not Path('/proc/self/maps').exists(), reason='counts mapped libraries through /proc (Linux)')
def test_a_warm_start_keeps_a_chunk_of_rooms_alive_not_all():
    "warm_start_pairs plays its problems `chunk` at a time: 12 rooms in chunks of 4 map about 4 planner copies, not 12."
    code = ("import sys\nfrom pettingllms_nb.core.config import load_config\n"
            "from pettingllms_nb.training.trainer import warm_start_pairs\n"
            "pairs = warm_start_pairs(load_config('tiny_alfworld'), n_seeds=12, chunk=int(sys.argv[1]))\n"
            "print(len(pairs), len({l.split()[-2] for l in open('/proc/self/maps') if 'libdownward' in l}))")
    def run(chunk):
        r = subprocess.run([sys.executable, '-c', code, str(chunk)], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr[-2000:]
        return [int(x) for x in r.stdout.split()[-2:]]
    (n4, libs4), (n12, libs12) = run(4), run(12)
    assert n4 == n12 and libs4 <= 6 and libs12 >= 12, (libs4, libs12)

def test_replay_clones_equal_the_original():
    env = AlfworldEnv(); env.reset(33)
    rng = random.Random(1)
    for step in range(12):
        c = env.clone()
        cmd = rng.choice(env.state.admissible) if step % 4 else 'not a command'
        for e in (env, c): run_sync(e.act(cmd))
        assert c.sim.last.fingerprint == env.sim.last.fingerprint        # observation, admissible, inventory, won
        assert c.sim.facts() == env.sim.facts() and c.state.to_dict() == env.state.to_dict()
        assert c.sim is not env.sim
    late = env.clone()                                              # a clone of a long history, built from scratch
    assert late.sim.last.fingerprint == env.sim.last.fingerprint and len(late.sim_log) == len(env.sim_log)


def test_replay_is_the_same_as_resimulating():
    env = AlfworldEnv(); env.reset(34)
    rng = random.Random(2)
    for _ in range(8): run_sync(env.act(rng.choice(env.state.admissible)))
    slow = env.game.engine()
    for cmd, _ in env.sim_log: slow.step(cmd)
    fast = env.game.engine(); fast.replay(env.sim_log)
    assert fast.last.fingerprint == slow.last.fingerprint == env.sim.last.fingerprint


def test_tree_sampling_branches_on_replayed_clones():
    t = rollout('alfworld_env', ORACLE, mode='tree', sample_num=2, seeds=[VAL_SEED_BASE + 7], max_turns=15)
    assert t.episodes[0].success
    t = rollout('alfworld_env', RANDOM, mode='tree', sample_num=3, seeds=[VAL_SEED_BASE + 7], max_turns=3)
    ex = [s for s in t if s.role == 'alfworld_executor' and s.turn_idx == 0]
    assert len(ex) == 3 and len({s.state_after['observation'] for s in ex}) >= 2   # branches really differ


def test_grammar_memos_render_the_same_text():
    "A seeded random walk renders identically with and without the engine's memoised TextWorld parses."
    code = ("import hashlib, json, random\nfrom pettingllms_nb.envs.alfworld.data import generate_solvable\n"
            "from pettingllms_nb.envs.alfworld.engine import AlfredEngine\n"
            "e = AlfredEngine(generate_solvable(8, 3).game()); rng = random.Random(3); out = [e.last.fingerprint]\n"
            "for _ in range(12): out.append(e.step(rng.choice(e.last.admissible)).fingerprint)\n"
            "print(hashlib.md5(json.dumps(out).encode()).hexdigest())")
    run = lambda memo: subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                                      env={**os.environ, 'PETTINGLLMS_NB_TW_MEMO': memo}).stdout.strip()
    assert run('1') == run('0') != ''


# -- simulator failures ------------------------------------------------------------------------

def test_simulator_failure_is_an_infra_error_not_a_reward(monkeypatch):
    env = AlfworldEnv(timeout=0.5); env.reset(40)
    cmd = WALKTHROUGHS[env.problem_uid][0]
    ex = AlfworldExecutor()
    import textworld
    env.sim.step = lambda c: textworld.start('/engine/crashed.z8')   # fails inside TextWorld: the simulator's failure
    ex.update_from_env(env, 0); r = take_turn(ex, env, f"Action: {cmd}")
    assert ex.infra_error and "engine/crashed" in ex.infra_error and env.state.infra_errors == 1
    assert r is None and ex.agent_reward is None and ex.reward_terms == {}   # not scored: no reward, no term
    assert env.state.history == []
    env._sim = env.sim_build(); env.sim.step = lambda c: time.sleep(2)   # a simulator that hangs
    ex.update_from_env(env, 0); r = take_turn(ex, env, f"Action: {cmd}")
    assert "within 0.5 s" in ex.infra_error and env.state.infra_errors == 2
    assert r is None and ex.reward_terms == {}
    time.sleep(2)
    env.timeout = 120.0                                                # a replay on a loaded machine may take a while
    ex.update_from_env(env, 0); r = take_turn(ex, env, f"Action: {cmd}")   # rebuilt by replay; the episode goes on
    assert ex.infra_error is None and env.state.last_valid is True
    assert r is not None and set(ex.reward_terms) == {'useful', 'won', 'invalid', 'format'}   # scored again


def test_a_bug_in_our_engine_code_fails_the_rollout_naming_env_agent_and_turn(monkeypatch):
    "Only a failure inside the simulator's packages is infrastructure; one raised in our code is a bug that stops the run."
    from pettingllms_nb.core.agent import StepError
    from pettingllms_nb.envs.alfworld import engine
    AlfworldEnv().reset(41)
    monkeypatch.setattr(engine.AlfredEngine, 'step', lambda self, c: 1 / 0)
    with pytest.raises(StepError, match=r"env 'alfworld_env'.*agent 'alfworld_executor', turn 0.*ZeroDivisionError"):
        rollout('alfworld_env', ORACLE, seeds=[41], max_turns=2)


def test_infra_error_reaches_the_trace(monkeypatch):
    import textworld
    from pettingllms_nb.envs.alfworld import engine
    AlfworldEnv().reset(41)                 # generate (and solve) the task before the simulator breaks
    monkeypatch.setattr(engine.AlfredEngine, 'step', lambda self, c: textworld.start('/broken/simulator.z8'))
    for mode in ('independent', 'tree'):
        t = rollout('alfworld_env', ORACLE, seeds=[41], max_turns=2, mode=mode, sample_num=2)
        first = next(s for s in t if s.role == 'alfworld_executor')
        assert 'OSError' in first.infra_error and 'broken/simulator' in first.infra_error and first.reward is None and first.reward_terms == {}
        assert first.state_after['infra_errors'] == 1 and first.state_after['history'] == []
        hit = [s for s in t if s.infra_error]
        assert hit and all(s.role == 'alfworld_executor' and s.reward is None and s.reward_terms == {} for s in hit)
        assert all(s.reward is not None for s in t if s.role == 'alfworld_planner')    # the planner was carried out
        for adv in (at_grpo(t), grpo(t)):
            assert all(adv[i] is None for i, s in enumerate(t) if s.infra_error)        # in no advantage group
        assert all(e.infra_errors for e in t.episodes) and math.isnan(t.success_rate())   # in no success rate
        assert t.summary()['infra_errors'] == len(hit) and t.summary()['infra_episodes'] == len(t.episodes)


# -- the real ALFWorld data --------------------------------------------------------------------

def _fixture(root):
    "A small tree in ALFWorld's json_2.1.1 layout: two playable games, one unsolvable, one movable, one sliced."
    good = [generate_solvable(s, tt) for s, tt in ((50, 4), (51, 2))]
    write_alfworld_layout(root, good, 'valid_seen')
    bad = generate_solvable(52, 1); bad.walkthrough = None
    write_alfworld_layout(root, [bad], 'valid_seen')
    for kind in ('pick_and_place_with_movable_recep-Apple-Bowl-Fridge-1', 'pick_heat_then_place_in_recep-AppleSliced-None-DiningTable-1'):
        src = next((root / 'json_2.1.1/valid_seen').glob('pick_heat*'))
        (root / 'json_2.1.1/valid_seen' / kind).mkdir()
        for trial in src.iterdir():
            (root / 'json_2.1.1/valid_seen' / kind / trial.name).mkdir()
            for f in trial.iterdir(): (root / 'json_2.1.1/valid_seen' / kind / trial.name / f.name).write_bytes(f.read_bytes())
    return good


def test_real_data_loader_on_a_local_fixture(tmp_path, monkeypatch):
    good = _fixture(tmp_path)
    games = load_alfworld('valid_seen', data_path=tmp_path)
    assert sorted(map(repr, (g.goal for g in games))) == sorted(map(repr, (t.goal for t in good)))          # unsolvable, movable, sliced left out
    assert [g.goal.task_type for g in load_alfworld('valid_seen', tmp_path, task_types=[2])] == ['look_at_obj_in_light']
    monkeypatch.setenv('ALFWORLD_DATA', str(tmp_path))
    env = AlfworldEnv(benchmark='alfworld', split='valid_seen')
    t = rollout('alfworld_env', ORACLE, seeds=[0, 1], max_turns=20, benchmark='alfworld', split='valid_seen')
    assert [e.success for e in t.episodes] == [True, True]
    assert {e.problem_uid.split('/')[1] for e in t.episodes} == {'alfworld'}
    env.reset(0)
    assert env.state.source == 'alfworld' and env.state.task in {x.sentence for x in good}


def test_missing_alfworld_data_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv('ALFWORLD_DATA', str(tmp_path / 'nowhere'))
    with pytest.raises(FileNotFoundError, match="alfworld-download"): AlfworldEnv(benchmark='alfworld', split='train')
    with pytest.raises(ValueError, match="expected one of"): load_alfworld('test', tmp_path)


# -- TextWorld games ---------------------------------------------------------------------------

def test_textworld_games_are_a_second_benchmark(tmp_path, monkeypatch):
    monkeypatch.setenv('PETTINGLLMS_NB_CACHE', str(tmp_path))
    make_textworld_game(3, 'custom')
    t = rollout('alfworld_env', ORACLE, seeds=[3], max_turns=30, benchmark='textworld', challenge='custom')
    assert t.episodes[0].success
    last = [s for s in t if s.role == 'alfworld_executor'][-1]
    assert last.state_after['progress'] == 1.0 and last.state_after['source'] == 'textworld'
    env = AlfworldEnv(benchmark='textworld', games=str(tmp_path / 'textworld'))
    env.reset(0)
    c = env.clone(); cmd = env.state.admissible[0]
    for e in (env, c): run_sync(e.act(cmd))
    assert c.sim.last.fingerprint == env.sim.last.fingerprint


# -- the environment's contract ----------------------------------------------------------------

def test_check_env_passes():
    assert check_env('alfworld_env').ok
    assert check_env('tiny_alfworld', seeds=range(2)).ok


@pytest.mark.parametrize('name', PRESETS)
def test_presets_load(name):
    cfg = load_config(name)
    assert cfg.env.name == 'alfworld_env'
    if name.startswith('gpu_'):
        t = cfg.training
        assert (cfg.env.max_turns, t.train_sample_num, cfg.specialization, t.device) == (50, 8, 'lora', 'cuda')
        assert cfg.base_models.policy_0.path.startswith('Qwen/Qwen3-')
    if name.startswith('tiny_'): assert cfg.base_models.policy_0.path == 'tiny' and env_kwargs(cfg)['prompt_style'] == 'compact'


def test_unavailable_without_the_extra_says_why(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda n, *a: None if n == 'alfworld' else real(n, *a))
    for k in [k for k in sys.modules if k.startswith('pettingllms_nb.envs.alfworld.') and not k.endswith(('.engine', '.data', '.state', '.render', '.prompts'))]:
        monkeypatch.delitem(sys.modules, k)
    mod = 'pettingllms_nb.envs.alfworld.agents'
    r = Registry(builtins={mod: BUILTINS[mod]}, plugin_group=None)
    rows = {row[1]: row for row in r.show()}
    assert rows['alfworld_env'][2] == 'unavailable' and "pettingllms-nb[alfworld]" in rows['alfworld_env'][4]
    assert rows['alfworld_env.oracle'][2] == 'unavailable'


def test_state_card_is_registered():
    from pettingllms_nb.widgets.render import render_state
    env = AlfworldEnv(); env.reset(3)
    env.state.plan = ['<img src=x onerror=alert(1)>']
    h = render_state(env.state)
    assert 'pllm-alfworld' in h and '<img' not in h and env.state.admissible[0] in h


def test_parse_action_is_total():
    rng = random.Random(0)
    for _ in range(300):
        s = ''.join(rng.choice('Action: \n\t`"\'.#*abc1\x00\u2028') for _ in range(rng.randint(0, 80)))
        try: parse_action(s)
        except Exception as e: assert type(e).__name__ == 'FormatError'


# -- the compact style (tiny models) -----------------------------------------------------------

def _tiny_rollout(preset, policy, seeds):
    cfg = load_config(preset)
    kw = env_kwargs(cfg)
    return rollout('alfworld_env', policy, seeds=seeds, turn_order=list(cfg.multi_agent_interaction.turn_order), **kw)


@pytest.mark.parametrize('preset', ['tiny_alfworld', 'tiny_alfworld_single'])
def test_compact_oracle_replies_are_short_and_read_off_the_prompt(preset):
    "Every compact oracle reply is one short command that stands for one its prompt lists: a model that imitates it can succeed."
    t = _tiny_rollout(preset, ORACLE, range(VAL_SEED_BASE, VAL_SEED_BASE + 6))
    assert t.success_rate() == 1.0
    for s in t:
        text, cmds = s.prompt['text'], commands_in(s.prompt['text'])
        assert len(s.completion) <= 30 and expand_command(s.completion, cmds) in cmds, (text, s.completion)
        assert len(text) <= 400 and s.format_error is None
        if s.role == 'alfworld_executor': assert s.completion == read_compact(text)['plan']   # it plays the subgoal
    from pettingllms_nb.engine.policies import Request
    req = next(s for s in t if s.turn_idx == 2)    # the compact oracle answers from the prompt alone, no walkthrough:
    assert ORACLE(Request(req.role, req.prompt, problem_uid='no such problem')) == req.completion


@pytest.mark.slow
@pytest.mark.parametrize('preset', ['tiny_alfworld', 'tiny_alfworld_single'])
def test_tiny_presets_oracle_wins_and_random_rarely(preset):
    seeds = range(VAL_SEED_BASE, VAL_SEED_BASE + 24)
    oracle, rand = _tiny_rollout(preset, ORACLE, seeds), _tiny_rollout(preset, RANDOM, seeds)
    assert oracle.success_rate() == 1.0
    assert {s.state_after['task_type'] for s in oracle} == set(TASK_TYPES.values())
    assert rand.success_rate() <= 0.2, rand.success_rate()


def test_compact_replies_play_their_command():
    "A short command plays the admissible one it stands for; a full one works too; garbage is a format error."
    env = AlfworldEnv(prompt_style='compact', size=3, task_types=[1]); env.reset(11)
    ex = AlfworldExecutor()
    first = WALKTHROUGHS[env.problem_uid][:2]                # go to the object's receptacle, take it (in full)
    for reply in (first[0], ' '.join(first[1].split(' ')[:2]), 'Action: look'):   # in full, `take apple`, garbage
        ex.update_from_env(env, env.turn); take_turn(ex, env, reply)
    assert [h['command'] for h in env.state.history] == first
    assert ex.format_error and env.state.invalid_actions == 0
    ex.update_from_env(env, env.turn); take_turn(ex, env, 'go to the moon')
    assert env.state.last_valid is False and env.state.invalid_actions == 1 and ex.reward_terms['invalid'] == -1.0


def test_parse_compact_is_total():
    rng = random.Random(0)
    for _ in range(300):
        s = ''.join(rng.choice('go totake 1\n\t.#abc\x00\u2028') for _ in range(rng.randint(0, 90)))
        try: assert parse_compact(s).isprintable()
        except Exception as e: assert type(e).__name__ == 'FormatError'


# -- the package -------------------------------------------------------------------------------

def test_package_parts():
    from envparts import check_all_names, check_reexports, fresh_registry
    check_reexports('alfworld', ['AlfworldEnv', 'AlfworldState', 'AlfworldPlanner', 'AlfworldExecutor', 'AlfworldSingleAgent',
                                 'generate_solvable', 'load_alfworld', 'oracle_policy', 'random_policy'])
    check_all_names('alfworld')
    seen = fresh_registry('alfworld_env', ['oracle', 'random'])
    assert seen['env'] == 'pettingllms_nb.envs.alfworld.env'
    assert seen['agents'] == ['alfworld_executor', 'alfworld_planner', 'alfworld_single_agent']
    assert seen['scripted'] == ['pettingllms_nb.envs.alfworld.oracle'] * 2 and 'pllm-alfworld' in seen['card']

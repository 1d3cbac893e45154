"""The demo as a small experiment: the interval maths on hand-computed cases, the board tools on hand-computed boards,
the tool game through `check_env` and its oracle, a stopped run resuming from the rows it kept, and (slow) the same
machine writing the same `summary.json` twice.
"""
import json, os, subprocess, sys
from pathlib import Path

import pytest

from pettingllms_nb.training.intervals import bootstrap_means, difference, interval
from pettingllms_nb.envs.stateful.games.plan_path import PlanPathState, bfs_moves
from pettingllms_nb.envs.stateful.tools import (board_dist, board_free, board_map, board_ways, board_prelude,
                                                call_output, call_program, follow_output, random_call, read_map)

# the board of the tools notebook: the goal top right, a wall pocket in the middle, the way round it along row 2
HAND = ["..#.",
        ".##.",
        "....",
        "#..."]
GOAL = (0, 3)


# -- intervals -----------------------------------------------------------------------------------------------------

def test_one_seed_two_episodes():
    "Replicates are 0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4: the 95% interval is all of [0, 1]."
    iv = interval([[1, 0]])
    assert (iv.mean, iv.lo, iv.hi, iv.seeds, iv.episodes) == (0.5, 0.0, 1.0, 1, 2)
    assert set(bootstrap_means([[1, 0]], n_boot=500)) == {0.0, 0.5, 1.0}


def test_both_levels_are_resampled():
    "Seeds that disagree need the seed level, episodes that disagree need the episode level."
    disagree, agree = [[1, 1], [0, 0]], [[1, 0], [1, 0]]
    ends = lambda m, r: (interval(m, resample=r).lo, interval(m, resample=r).hi)
    assert ends(disagree, ('episodes',)) == (0.5, 0.5) and ends(disagree, ('seeds',)) == (0.0, 1.0)
    assert ends(agree, ('episodes',)) == (0.0, 1.0) and ends(agree, ('seeds',)) == (0.5, 0.5)
    assert ends(disagree, ('seeds', 'episodes')) == (0.0, 1.0)


def test_all_solved_and_per_seed_means():
    iv = interval([[1, 1, 1], [1, 0, 1], [1, 1, 0]])
    assert iv.per_seed == [1.0, 2 / 3, 2 / 3] and abs(iv.mean - 7 / 9) < 1e-12
    assert (interval([[1] * 10] * 3).lo, interval([[1] * 10] * 3).hi) == (1.0, 1.0)


def test_agrees_with_the_normal_approximation():
    "60 of 100: 0.6 ± 1.96·sqrt(0.24/100) = [0.504, 0.696]."
    iv = interval([[1] * 60 + [0] * 40])
    assert abs(iv.lo - 0.504) <= 0.015 and abs(iv.hi - 0.696) <= 0.015


def test_paired_difference_by_hand():
    "One episode apart in four: 1/4 × Binomial(4, 1/4), CDF 0.32, 0.74, 0.95, 0.996: interval [0, 0.75]."
    d = difference([[1, 1, 1, 0]], [[1, 1, 0, 0]])
    assert (d.mean, d.lo, d.hi) == (0.25, 0.0, 0.75)
    same = difference([[1, 0, 1]] * 2, [[1, 0, 1]] * 2)
    assert (same.mean, same.lo, same.hi) == (0.0, 0.0, 0.0)


def test_seeded_and_exact():
    m = [[1, 0, 1, 1, 0], [0, 0, 1, 1, 1], [1, 1, 1, 0, 0]]
    a, b = bootstrap_means(m, n_boot=300, seed=7), bootstrap_means(m, n_boot=300, seed=7)
    assert a == b and a != bootstrap_means(m, n_boot=300, seed=8)
    assert all(abs(x * 15 - round(x * 15)) < 1e-9 for x in a)   # each replicate is a count over K·N = 15


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"same episodes; got \[2, 1\]"): interval([[1, 0], [1]])
    with pytest.raises(ValueError, match="expected a probability"): interval([[1]], level=95)
    with pytest.raises(ValueError, match="same seeds × episodes"): difference([[1, 0]], [[1, 0, 0]])


# -- board tools ---------------------------------------------------------------------------------------------------

def test_distances_by_hand():
    assert board_map(HAND, GOAL) == "78#0\n6##1\n5432\n#543"
    assert [board_dist(HAND, GOAL, *rc) for rc in [(0, 3), (1, 3), (2, 2), (3, 3), (2, 0), (1, 0), (0, 0), (0, 1)]] \
        == [0, 1, 3, 3, 5, 6, 7, 8]
    assert [board_dist(HAND, GOAL, *rc) for rc in [(1, 1), (0, 2), (4, 0), (-1, 0), ('0', 0), (True, 0)]] == [-1] * 6
    assert board_map([".#.", "##.", "..."], (0, 0)) == "0#?\n##?\n???"   # walled in


def test_ways_and_free_neighbours_by_hand():
    assert board_ways(HAND, GOAL) == "DL#G\nD##U\nRRRU\n#UUU"
    assert [board_free(HAND, *rc) for rc in [(0, 0), (2, 1), (3, 1), (0, 3), (1, 1), (9, 9)]] \
        == ['DR', 'DLR', 'UR', 'D', '', '']


def test_the_follower_reads_what_a_plan_agent_would():
    g = PlanPathState(grid=HAND, start=[0, 0], goal=list(GOAL), pos=[0, 0])
    shortest = bfs_moves(HAND, (0, 0), GOAL)
    assert follow_output(g, board_map(HAND, GOAL)) == shortest == follow_output(g, board_ways(HAND, GOAL))
    assert follow_output(g, "10##\n####\n####\n####") == ['R']        # a lie is followed; the game judges it
    assert follow_output(g, "RRD") is None and follow_output(g, "78#0\n6##1") is None and follow_output(g, None) is None
    assert read_map("x\n" + board_map(HAND, GOAL), 4, 4)[3] == [None, 5, 4, 3]


def test_the_sandbox_runs_the_same_functions():
    import random
    from pettingllms_nb.sandbox.program import run_program
    g = PlanPathState(grid=HAND, start=[0, 0], goal=list(GOAL), pos=[0, 0])
    rng = random.Random(0)
    calls = [('ways',), ('dmap',), ('dist', 0, 1), ('free', 2, 1)] + [random_call(g, rng) for _ in range(4)]
    program = '\n'.join(call_program(*c) for c in calls)
    r = run_program(board_prelude(g) + program)
    assert r.verdict == 'OK' and r.stdout == ''.join(call_output(g, *c) for c in calls)


# -- the tool game -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ["tiny_plan_path_tool", "tiny_plan_path_tool_single"])
def test_the_tool_game_passes_check_env(preset):
    from pettingllms_nb.engine.check_env import check_env
    from pettingllms_nb.envs.stateful import oracle_policy, default_worker
    for policy in (None, oracle_policy):
        report = check_env(preset, worker=default_worker(), policy=policy, raise_on_fail=False)
        assert report.ok, report


def test_the_oracle_solves_the_tool_game_in_both_systems():
    from pettingllms_nb.engine.rollout import rollout
    from pettingllms_nb.envs.stateful import oracle_policy, default_worker
    two = rollout('tiny_plan_path_tool', oracle_policy, seeds=range(12), worker=default_worker())
    one = rollout('tiny_plan_path_tool_single', oracle_policy, seeds=range(12), worker=default_worker())
    assert two.success_rate() == one.success_rate() == 1.0
    assert {e.turns for e in one.episodes} == {2}                      # a call, then the way
    assert all(s.completion == 'print(ways())' for s in two if s.role == 'tool_call_agent')


# -- determinism ---------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_same_machine_writes_the_same_summary(tmp_path):
    "Two smoke-sized runs (two training seeds; one and two worker processes) write the same summary.json."
    def run(out, workers, hashseed):
        env = {**os.environ, 'PYTHONHASHSEED': hashseed}
        cli = "import sys; from pettingllms_nb.cli import main; sys.exit(main(sys.argv[1:]))"
        subprocess.run([sys.executable, '-c', cli, 'demo', '--quick', '--no-anchors', '--seeds', '2', '--workers',
                        str(workers), '--out', str(out)], check=True, env=env, capture_output=True)
        return (out / 'summary.json').read_bytes()
    a, b = run(tmp_path / 'a', 2, '1'), run(tmp_path / 'b', 1, '2')
    assert a == b
    s = json.loads(a)
    assert s['training_seeds'] == [0, 1] and 'seconds' not in json.dumps(s)


# -- a stopped run resumes ------------------------------------------------------------------------------------------

def test_a_kept_result_is_reused_only_for_the_same_job(tmp_path):
    from pettingllms_nb.demo import _job, _keep, _kept
    job, folder = _job('row', name='r', seed=0, overrides=('a=1',)), tmp_path / 'row'
    assert _kept(folder, job) is None                                   # nothing kept yet
    folder.mkdir(); (folder / 'checkpoint.bin').write_bytes(b'half')    # what a killed job leaves
    assert _kept(folder, job) is None and not folder.exists()           # emptied, never read
    folder.mkdir(); _keep(folder, job, {'successes': [1.0, 0.0]})
    assert _kept(folder, job) == {'successes': [1.0, 0.0]}              # tuples and lists compare equal via JSON
    assert _kept(folder, _job('row', name='r', seed=1, overrides=['a=1'])) is None and not folder.exists()
    folder.mkdir(); (folder / 'job.json').write_text('{"job": {"job": "row"')   # torn or hand-edited
    assert _kept(folder, job) is None and not folder.exists()


def test_a_kept_result_is_not_reused_once_its_preset_has_changed():
    "The job names the merged config's digest: editing a preset's file (not only its name and overrides) is a new job."
    from pettingllms_nb.demo import _config_digest
    a = _config_digest('tiny_sokoban', ['training.seed=0'])
    assert a == _config_digest('tiny_sokoban', ['training.seed=0'])
    assert a != _config_digest('tiny_sokoban', ['training.seed=0', 'training.lr=0.002'])


def test_a_kept_base_is_used_where_it_is_now(tmp_path):
    "A warm start kept in a folder that has moved since is found at its new place, not at the path it was built at."
    from pettingllms_nb.demo import _build_base, _config_digest, _job, _keep, SYSTEMS_TRAINED
    old, new = tmp_path / 'old' / 'seed_0', tmp_path / 'new' / 'seed_0'
    job = _job('warm start', preset='tiny_plan_path', overrides=['training.seed=0'], threads=1, systems=SYSTEMS_TRAINED,
               config=_config_digest('tiny_plan_path', ['training.seed=0']))
    _keep(old, job, str(old)); (old / 'config.json').write_text('{}')
    old.parent.rename(new.parent)
    assert _build_base('tiny_plan_path', ['training.seed=0'], str(new)) == str(new)   # kept: nothing rebuilt
    assert (new / 'config.json').read_text() == '{}'


@pytest.mark.slow
def test_a_stopped_run_finishes_with_the_same_summary(tmp_path, capsys):
    "A run whose last row was lost (its folder holds only a checkpoint) reruns that row alone; the summary is the same."
    from pettingllms_nb.demo import run_training, _rows_dir, ROWS
    first = run_training(tmp_path, quick=True, workers=1, n_boot=200)
    lost = _rows_dir(tmp_path, ROWS[-1][0], 0)
    (lost / 'job.json').unlink(); (lost / 'stale.tmp').write_text('x')
    again = run_training(tmp_path, quick=True, workers=1, n_boot=200)
    assert again == first and not (lost / 'stale.tmp').exists()
    timing = json.loads((tmp_path / 'timing.json').read_text())
    assert len(timing['kept_from_an_earlier_run']) == len(ROWS) - 1
    assert f"Kept {len(ROWS) - 1} of {len(ROWS)} rows" in capsys.readouterr().out
    fresh = run_training(tmp_path, quick=True, workers=1, n_boot=200, fresh=True)
    assert fresh == first and json.loads((tmp_path / 'timing.json').read_text())['kept_from_an_earlier_run'] == []


# -- every environment ----------------------------------------------------------------------------------------------

from pettingllms_nb.demo import DEMO_GAMES, DEMO_ALIASES, demo_game, demo_systems


@pytest.mark.parametrize('game', sorted(DEMO_GAMES))
def test_every_game_has_its_three_systems(game):
    """Each game's presets load: one agent, two agents on one shared policy, two agents with one LoRA adapter each; the warm
    start demonstrates both systems with the env's own oracle and random policy."""
    from pettingllms_nb.core.config import load_config, agent_roles
    from pettingllms_nb.core.registry import registry
    g = DEMO_GAMES[game]
    single, pair, lora = (load_config(g[k]) for k in ('single', 'pair', 'lora'))
    assert len(agent_roles(single)) == 1 and len(agent_roles(pair)) == 2 and agent_roles(lora) == agent_roles(pair)
    assert pair.specialization == 'prompt' and lora.specialization == 'lora'
    assert single.env.name == pair.env.name == lora.env.name and pair.training.warmstart_steps > 0
    assert demo_systems(game) == [agent_roles(single), agent_roles(pair)]
    for name in ('oracle', 'random'): registry.scripted(pair.env.name, name)   # raises when one is missing


def test_a_game_is_named_by_its_key_or_its_environment():
    assert demo_game('search_env') == 'search' and demo_game('sudoku') == 'sudoku'
    assert all(demo_game(a) in DEMO_GAMES for a in DEMO_ALIASES)
    with pytest.raises(ValueError, match="game='chess'.*allowed"): demo_game('chess')


@pytest.mark.parametrize('game', [g for g in sorted(DEMO_GAMES) if g not in ('plan_path', 'plan_path_tool')])
def test_every_game_runs_its_smoke_sized_demo(game, tmp_path, monkeypatch):
    "The demo's every row on a smoke-sized run of each game: a summary with all six rows, anchors of its env."
    from pettingllms_nb.demo import run_demo, ROWS
    monkeypatch.setenv('PETTINGLLMS_NB_CACHE', str(tmp_path / 'cache'))
    out = run_demo(tmp_path / game, quick=True, workers=1, game=game)
    s = json.loads((tmp_path / game / 'summary.json').read_text())
    assert list(s['rows']) == [r[0] for r in ROWS] and s['game'] == game and s['test_episodes'] == 8
    anchors = out['anchors']['results']
    assert anchors and all(r['oracle']['success_rate'] == 1.0 for r in anchors.values())   # the oracle of every system


def test_the_demo_bar_counts_training_steps_across_processes(capsys):
    "Issue 25: the demo's bar sat at 0/6 rows for 9 minutes; now it counts every row's training steps as they happen."
    from pettingllms_nb import demo
    def job(n, ticks):
        for _ in range(n): ticks.put(1)
        return n
    assert demo._run_counted(job, [(2,), (3,)], 1, 'demo rows', True, 5) == [2, 3]
    err = capsys.readouterr().err
    assert 'demo rows' in err and '5/5' in err, err
    seen = []
    demo._run_counted(lambda ticks: seen.append(ticks), [()], 1, 'quiet', False, 1)
    assert seen == [None] and capsys.readouterr().err == ''   # no bar: the jobs get no queue


@pytest.mark.parametrize('game', ['plan_path', 'sudoku', 'search'])
def test_every_estimator_row_is_a_valid_config(game):
    "`demo --compare-estimators`: each estimator's overrides load on the game's two-agent preset (GiGPO with independent rollouts)."
    from pettingllms_nb.core.config import load_config
    from pettingllms_nb.demo import ESTIMATOR_ROWS, ESTIMATOR_COMPARISONS
    algos = [load_config(DEMO_GAMES[game]['pair'], train or []).training.algorithm for _, _, train in ESTIMATOR_ROWS]
    assert algos == ['at_grpo', 'at_grpo', 'grpo', 'dr_mas', 'rloo', 'gigpo', 'at_grpo']
    names = [n for n, *_ in ESTIMATOR_ROWS]
    assert all(a in names and b in names for _, a, b in ESTIMATOR_COMPARISONS) and len(ESTIMATOR_COMPARISONS) == len(names) - 1


def test_the_estimator_bench_writes_one_table(tmp_path, monkeypatch):
    from pettingllms_nb.cli import main
    from pettingllms_nb.demo import ESTIMATOR_ROWS, ESTIMATOR_COMPARISONS
    monkeypatch.setenv('PETTINGLLMS_NB_CACHE', str(tmp_path / 'cache'))
    assert main(['demo', '--compare-estimators', '--quick', '--workers', '1', '--out', str(tmp_path / 'e')]) == 0
    s = json.loads((tmp_path / 'e' / 'summary.json').read_text())
    assert list(s['rows']) == [n for n, *_ in ESTIMATOR_ROWS] and list(s['differences']) == [w for w, *_ in ESTIMATOR_COMPARISONS]
    trained = [r for r in s['rows'].values() if r['per_seed']['0'].get('trained_steps')]
    assert len(trained) == len(ESTIMATOR_ROWS) - 1 and (tmp_path / 'e' / 'curves.png').exists()

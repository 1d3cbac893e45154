"Generated games (Plan-Path, Sudoku, Sokoban) and `stateful_env`: generators, oracles, the reference's defects 3-5, garbage, determinism."
import json, math, random, re
from types import SimpleNamespace

import pytest

from pettingllms_nb.core.registry import make_env, registry, UnavailableError, RegistryError
from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.envs.games.plan_path import generate_plan_path, solve_plan_path, bfs_moves, PlanPathState
from pettingllms_nb.envs.games.sudoku import (generate_sudoku, count_solutions, is_valid_grid, solve_sudoku, SudokuState,
                                              random_solution)
from pettingllms_nb.envs.games.sokoban import generate_sokoban, solve_sokoban, SokobanState
from pettingllms_nb.envs.stateful import (StatefulEnv, StatefulState, ToolCallAgent, PlanAgent, StatefulSingleAgent, GAMES,
                                          TOOL_MARKER, oracle_response, random_response, oracle_policy, random_policy,
                                          try_action, verdict_ok)

AGENTS = {'tool_call_agent': ToolCallAgent, 'plan_agent': PlanAgent, 'stateful_single_agent': StatefulSingleAgent}
PAIR, SINGLE = ('tool_call_agent', 'plan_agent'), ('stateful_single_agent',)


class EchoWorker:
    "A fake execution worker: executes nothing, echoes the literal of the programs `tool_program` writes."
    async def run(self, code, stdin="", expected=None, time_limit=None, memory_limit=None):
        m = re.fullmatch(r"actions = (.*)\nprint\('\*\*Actions List\*\*:', actions\)", code.strip())
        if not m: return SimpleNamespace(verdict='RE', stdout='', stderr='Traceback (most recent call last): ...')
        return SimpleNamespace(verdict='OK', stdout=f"{TOOL_MARKER} {m.group(1)}\n", stderr='')

WORKER = EchoWorker()


def act(agent, env, response, turn=None, worker=WORKER):
    "One agent cycle, as the rollout engine drives it."
    agent.update_from_env(env, env.turn if turn is None else turn)
    agent.update_from_model(response)
    run_sync(agent.step(env, worker))
    env.refresh()
    return agent.calculate_reward(env)


def episode(benchmark, seed, order=PAIR, reply=oracle_response, worker=WORKER, **params):
    env = StatefulEnv(benchmark, **params)
    env.reset(seed)
    agents = {r: AGENTS[r]() for r in order}
    while not env.done:
        for role in order:
            if env.done: break
            act(agents[role], env, reply(role, env), worker=worker)
        if not env.done: env.end_turn()
    return env, agents


# ---------------------------------------------------------------- Sudoku (defect 3)
@pytest.mark.parametrize("size,seeds", [(4, 200), (9, 20)])
def test_sudoku_unique_solution_and_clues_agree(size, seeds):
    for seed in range(seeds):
        s = generate_sudoku(random.Random(seed), size)
        assert count_solutions(s.puzzle, 2) == 1, seed
        assert is_valid_grid(s.solution), seed
        assert all(s.puzzle[r][c] in (0, s.solution[r][c]) for r in range(size) for c in range(size)), seed
        assert s.holes > 0 and s.grid == s.puzzle and not s.solved


def test_sudoku_valid_grid_that_changes_clues_is_not_success():
    for seed in range(30):
        s = generate_sudoku(random.Random(seed))
        impostor = [[{1: 2, 2: 1}.get(v, v) for v in row] for row in s.solution]
        assert is_valid_grid(impostor) and impostor != s.solution
        res = s.clone().apply(impostor)
        assert res['invalid'] > 0 and not res['solved']
        # through the environment: the single agent submits it
        env = StatefulEnv('sudoku'); env.reset(seed)
        act(StatefulSingleAgent(), env, f"#### {json.dumps(impostor)}")
        assert not env.success
        assert all(env.state.game.grid[r][c] == s.puzzle[r][c] for r in range(4) for c in range(4) if s.puzzle[r][c])
    # a valid full grid unrelated to the puzzle is not a success either
    other = random_solution(random.Random(99), 4)
    s = generate_sudoku(random.Random(0))
    if other != s.solution:
        t = s.clone(); t.apply(other)
        assert not t.solved


def _leaks(g: SudokuState):
    "Text fragments that would reveal solution cells the current grid does not already show."
    n, out = g.size, []
    if g.grid != g.solution: out += [json.dumps(g.solution), str(g.solution), json.dumps(g.solution, separators=(',', ':'))]
    b = {4: 2, 9: 3}[n]
    for r, row in enumerate(g.solution):
        if g.grid[r] == row: continue
        out += [json.dumps(row), str(row), ' '.join(map(str, row)),
                ' | '.join(' '.join(map(str, row[i:i + b])) for i in range(0, n, b))]
        if n == 9: out.append(''.join(map(str, row)))
    return out


@pytest.mark.parametrize("size,seeds", [(4, 100), (9, 5)])
def test_no_prompt_contains_the_solution(size, seeds):
    rng = random.Random(0)
    for seed in range(seeds):
        env = StatefulEnv('sudoku', size=size); env.reset(seed)
        prompts = [AGENTS[r]().update_from_env(env, 0)['text'] for r in AGENTS]
        tool = ToolCallAgent()
        act(tool, env, random_response('tool_call_agent', env, rng))       # a random (wrong) tool proposal
        prompts.append(PlanAgent().update_from_env(env, 0)['text'])
        act(PlanAgent(), env, random_response('plan_agent', env, rng))     # random placements on the real grid
        env.end_turn()
        prompts += [AGENTS[r]().update_from_env(env, 1)['text'] for r in AGENTS]
        prompts.append(env.state.summary())
        for p in prompts:
            for frag in _leaks(env.state.game):
                assert frag not in p, (seed, frag)


def test_sudoku_prompt_format_example_is_not_a_grid():
    env = StatefulEnv('sudoku'); env.reset(0)
    for r in AGENTS:
        text = AGENTS[r]().update_from_env(env, 0)['text']
        assert '[[row, col, value], ...]' in text
        for m in re.finditer(r"\[\[[\d,\s\[\]]+\]\]", text):   # every literal grid shown is the puzzle/current grid (has holes)
            assert any(0 in row for row in json.loads(m.group(0)))


# ---------------------------------------------------------------- Sokoban (defect 4)
def test_sokoban_levels_solvable_by_solver():
    for seed in range(200):
        lv = generate_sokoban(random.Random(seed))
        plan = solve_sokoban(lv)
        assert plan is not None and len(plan) == lv.optimal_len <= lv.max_steps, seed
        assert not lv.solved and not lv.deadlocked
        lv.apply(plan)
        assert lv.solved and not lv.capped, seed
    for seed in range(30):
        lv = generate_sokoban(random.Random(seed), num_boxes=2)
        lv.apply(solve_sokoban(lv))
        assert lv.solved, seed


def _wasteful_moves(g: SokobanState, n: int):
    "A move list of length n that never solves the level (oscillation or wall bumps)."
    for a, b in (('U', 'D'), ('D', 'U'), ('L', 'R'), ('R', 'L'), ('U', 'U'), ('D', 'D'), ('L', 'L'), ('R', 'R')):
        moves = [a, b] * (n // 2) + [a] * (n % 2)
        c = g.clone(); c.apply(moves)
        if not c.solved and not c.deadlocked: return moves
    raise AssertionError("no wasteful sequence found")


def test_sokoban_move_cap_is_failure():
    for seed in range(50):
        env = StatefulEnv('sokoban', max_steps=8); env.reset(seed)
        plan = PlanAgent()
        act(plan, env, f"#### {json.dumps(_wasteful_moves(env.state.game, 5))}")
        assert not env.done
        env.end_turn()
        act(plan, env, f"#### {json.dumps(_wasteful_moves(env.state.game, 5))}")
        g = env.state.game
        assert g.steps == g.max_steps == 8 and g.capped
        assert env.done and not env.success, seed
        assert plan.reward_terms['stuck'] == -1.0 and plan.reward_terms['solved'] == 0.0
        # further moves are ignored, success stays False
        g.apply(solve_sokoban(g) or ['U'])
        env.refresh()
        assert env.done and not env.success


# ---------------------------------------------------------------- Plan-Path (defect 5)
def test_plan_path_prompts_show_current_position():
    for seed in range(50):
        env = StatefulEnv('plan_path'); env.reset(seed)
        g = env.state.game
        path = solve_plan_path(g)
        k = 1 + seed % (len(path) - 1)
        act(PlanAgent(), env, f"#### {json.dumps(path[:k])}")
        env.end_turn()
        assert g.pos != g.start and not env.done
        board = g.render().splitlines()
        assert board[g.pos[0]][g.pos[1]] == '@' and '@' not in board[g.start[0]][g.start[1]]
        for role in AGENTS:
            text = AGENTS[role]().update_from_env(env, env.turn)['text']
            assert f"Current position: {tuple(g.pos)}" in text, (seed, role)
            assert g.render() in text
            assert f'"pos": {json.dumps(g.pos)}' in text
            assert f"Current position: {tuple(g.start)}" not in text


def test_plan_path_generation():
    for seed in range(200):
        p = generate_plan_path(random.Random(seed))
        path = bfs_moves(p.grid, p.start, p.goal)
        assert p.start != p.goal and path is not None and len(path) == p.shortest_path_len >= 2


# ---------------------------------------------------------------- oracles through the env
@pytest.mark.parametrize("benchmark", list(GAMES))
@pytest.mark.parametrize("order", [PAIR, SINGLE])
def test_oracle_solves_every_seed(benchmark, order):
    wins = 0
    for seed in range(100):
        env, agents = episode(benchmark, seed, order)
        wins += env.success
        assert env.done and env.turn == 0   # solved in the first turn
        if order == PAIR: assert agents['tool_call_agent'].success and env.state.tool_eval['solved']
    assert wins == 100


@pytest.mark.parametrize("benchmark", list(GAMES))
def test_random_play_rewards_small_and_finite(benchmark):
    rng = random.Random(0)
    for seed in range(20):
        for order in (PAIR, SINGLE):
            env, agents = episode(benchmark, seed, order, reply=lambda role, env: random_response(role, env, rng))
            for a in agents.values():
                assert math.isfinite(a.agent_reward) and -1.2 <= a.agent_reward <= 2.0
                assert all(math.isfinite(v) for v in a.reward_terms.values())


# ---------------------------------------------------------------- garbage
GARBAGE = ["", None, "<script>alert(1)</script>", "x" * 300_000, "#### " + "R" * 10_000, 42, 3.5, ["U", "R"],
           {"moves": ["U"]}, b"#### [\"U\"]", "#### []", "#### [[[[", "#### {\"not\": \"a list\"}", "\x00\xff\ufffd",
           "```python\n", "```python\n```", "#### [[0, 0, 99]]", "#### [\"up\", \"teleport\"]", "I refuse.", "#### [1e999]"]


@pytest.mark.parametrize("benchmark", list(GAMES))
def test_garbage_is_a_format_error(benchmark):
    start = StatefulEnv(benchmark).reset(0)
    for role, cls in AGENTS.items():
        for junk in GARBAGE:
            env = StatefulEnv(benchmark); env.reset(0)
            a = cls()
            r = act(a, env, junk)
            assert a.format_error is not None, (role, junk)
            assert a.current_action is None and math.isfinite(r) and r < 0
            assert not env.success and env.state.game == start.game, (role, junk)


def test_tool_output_errors_are_never_actions():
    env = StatefulEnv('plan_path'); env.reset(0)
    good = oracle_response('tool_call_agent', env)

    class Crash:
        async def run(self, code, **kw): return SimpleNamespace(verdict='RE', stdout='**Actions List**: ["U"]', stderr='Traceback ...')

    class Broken:
        async def run(self, code, **kw): raise OSError("pool died")

    class Chatty:
        async def run(self, code, **kw): return SimpleNamespace(verdict='OK', stdout='Traceback: no path found\n', stderr='')

    for worker, verdict, no_action in ((Crash(), 'RE', -1.0), (Broken(), 'worker_error', 0.0), (Chatty(), 'OK', -1.0)):
        a = ToolCallAgent()
        act(a, env, good, worker=worker)
        assert env.state.tool_verdict == verdict and env.state.tool_action is None and env.state.tool_eval.get('solved') is None
        assert a.reward_terms['no_action'] == no_action and a.format_error is None
    assert verdict_ok('OK') and verdict_ok('AC') and not verdict_ok('RE') and not verdict_ok('IE')


# ---------------------------------------------------------------- determinism, clones, serialisation
@pytest.mark.parametrize("benchmark", list(GAMES))
def test_reset_deterministic_and_clone_independent(benchmark):
    for seed in range(10):
        a, b = StatefulEnv(benchmark), StatefulEnv(benchmark)
        assert a.reset(seed) == b.reset(seed) and a.state.to_json() == b.state.to_json()
        assert a.problem_uid == b.problem_uid
        c = a.clone()
        act(PlanAgent(), c, oracle_response('plan_agent', c))
        assert c.success and not a.success and a.state == b.state
        c2 = a.clone()
        c2.state.game.moves.append('X') if hasattr(c2.state.game, 'moves') else c2.state.game.grid[0].append(0)
        c2.state.code_history.append('x')
        assert a.state == b.state
        back = StatefulState.from_dict(json.loads(c.state.to_json()))
        assert back == c.state and type(back.game) is type(c.state.game)
    assert len({StatefulEnv(benchmark).reset(s).to_json() for s in range(10)}) == 10


def test_problem_uids_identify_problems():
    uids = {}
    for bench, params in (('plan_path', {}), ('plan_path', {'size': 6}), ('sudoku', {}), ('sudoku', {'size': 9}),
                          ('sokoban', {}), ('sokoban', {'num_boxes': 2})):
        for seed in range(3):
            env = StatefulEnv(bench, **params); env.reset(seed)
            uids.setdefault(env.problem_uid, env.state.to_json())
            assert uids[env.problem_uid] == env.state.to_json()
    assert len(uids) == 18


def test_config_errors_and_aliases():
    with pytest.raises(ValueError, match=r"benchmark='chess'; allowed: \['plan_path', 'sokoban', 'sudoku'\]"):
        StatefulEnv('chess')
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['num_boxes'\]; allowed: \['max_holes', 'size'\]"):
        StatefulEnv('sudoku', num_boxes=3)
    assert StatefulEnv('sudoku', holes=6).reset(1).game.holes == 6   # the config notebook's `env.kwargs.holes`
    with pytest.raises(ValueError, match="sokoban num_boxes=0"):
        StatefulEnv('sokoban', num_boxes=0)
    assert make_env('stateful_env', benchmark='suduku', map_size=4).benchmark == 'sudoku'
    assert StatefulEnv('plan_path', dataset='polaris', split='train').params['size'] == 8
    assert set(registry.agents_for('stateful_env')) >= set(AGENTS)
    assert StatefulEnv.default_turn_order == list(PAIR) and StatefulEnv().max_turns == 4


def test_scripted_policies_through_rollout():
    from pettingllms_nb.engine.rollout import rollout
    for bench in GAMES:
        tr = rollout('stateful_env', oracle_policy, seeds=range(4), worker=WORKER, benchmark=bench)
        assert [e.success for e in tr.episodes] == [True] * 4
        tr = rollout('stateful_env', random_policy, mode='tree', n=2, seeds=[0], worker=WORKER, benchmark=bench, max_turns=2)
        assert all(math.isfinite(s.reward) for s in tr)


@pytest.mark.parametrize("benchmark", list(GAMES))
def test_check_env_passes(benchmark):
    from pettingllms_nb.engine.check_env import check_env
    for policy in (None, oracle_policy):
        check_env('stateful_env', benchmark=benchmark, worker=WORKER, policy=policy)
    check_env('stateful_env', benchmark=benchmark, worker=WORKER, turn_order=list(SINGLE), policy=oracle_policy)


# ---------------------------------------------------------------- the real sandbox (when it is available)
def _sandbox():
    try:
        from pettingllms_nb.envs.stateful import default_worker
        return default_worker()
    except (ImportError, RegistryError, UnavailableError) as e:
        pytest.skip(f"sandbox worker unavailable: {e}")


def test_oracle_through_the_real_sandbox():
    _sandbox()
    for bench in GAMES:
        for seed in range(2):
            env, agents = episode(bench, seed, PAIR, worker=None)   # None: the agent uses the registered sandbox
            assert env.success and env.state.tool_verdict == 'OK' and agents['tool_call_agent'].success, (bench, seed)
    env = StatefulEnv('plan_path'); env.reset(0)
    a = ToolCallAgent()
    act(a, env, "```python\nprint('**Actions List**: [\"U\"]')\nraise SystemExit(1)\n```", worker=None)
    assert env.state.tool_verdict == 'RE' and env.state.tool_action is None
    act(a, env, "```python\nimport os\nprint(sorted(os.environ))\n```", worker=None)
    assert env.state.tool_verdict == 'OK' and env.state.tool_action is None and a.reward_terms['no_action'] == -1.0


def test_presets_build_and_solve():
    from pettingllms_nb.core.config import list_presets, load_config, env_kwargs, agent_roles
    names = [n for n in list_presets() if n.startswith('stateful_')]
    assert names
    for name in names:
        cfg = load_config(name)
        env = make_env(cfg.env.name, **env_kwargs(cfg))
        order = tuple(agent_roles(cfg))
        env.reset(0)
        agents = {r: AGENTS[r]() for r in order}
        for role in order:
            if not env.done: act(agents[role], env, oracle_response(role, env))
        assert env.success, name

"Generated games (Plan-Path, Sudoku, Sokoban) and `stateful_env`: generators, oracles, the reference's defects 3-5, garbage, determinism."
import json, math, random, re, warnings
from types import SimpleNamespace

import pytest

from echoworker import EchoWorker

from pettingllms_nb.core.registry import make_env, registry, UnavailableError, RegistryError
from pettingllms_nb.core.agent import take_turn
from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.envs.stateful.games.plan_path import generate_plan_path, solve_plan_path, bfs_moves, PlanPathState
from pettingllms_nb.envs.stateful.games.sudoku import (generate_sudoku, count_solutions, is_valid_grid, solve_sudoku, SudokuState,
                                              random_solution)
from pettingllms_nb.envs.stateful.games.sokoban import generate_sokoban, solve_sokoban, SokobanState
from pettingllms_nb.envs.stateful import (StatefulEnv, StatefulState, ToolCallAgent, PlanAgent, StatefulSingleAgent, GAMES,
                                          TOOL_MARKER, oracle_response, random_response, oracle_policy, random_policy,
                                          try_action, verdict_ok, demonstration, sft_pairs, compact_action, compact_program,
                                          game_from_prompt, respond, PROMPT_STYLES)

AGENTS = {'tool_call_agent': ToolCallAgent, 'plan_agent': PlanAgent, 'stateful_single_agent': StatefulSingleAgent}
PAIR, SINGLE = ('tool_call_agent', 'plan_agent'), ('stateful_single_agent',)


WORKER = EchoWorker()


def act(agent, env, response, turn=None, worker=WORKER):
    "One agent cycle, as the rollout engine drives it."
    agent.update_from_env(env, env.turn if turn is None else turn)
    return take_turn(agent, env, response, worker)


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
        assert plan is not None and len(plan) == lv.optimal_len <= lv.max_moves, seed
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
        env = StatefulEnv('sokoban', max_moves=8); env.reset(seed)
        plan = PlanAgent()
        act(plan, env, f"#### {json.dumps(_wasteful_moves(env.state.game, 5))}")
        assert not env.done
        env.end_turn()
        act(plan, env, f"#### {json.dumps(_wasteful_moves(env.state.game, 5))}")
        g = env.state.game
        assert g.moves_used == g.max_moves == 8 and g.capped
        assert env.done and not env.success, seed
        assert plan.reward_terms['stuck'] == -1.0 and plan.reward_terms['solved'] == 0.0
        # further moves are ignored, success stays False
        g.apply(solve_sokoban(g) or ['U'])
        env.refresh()
        assert env.done and not env.success


def test_sokoban_old_names_still_work_and_warn():
    "`max_steps`/`steps` (before `max_moves`/`moves_used`) still work, each use warning with the new name."
    with pytest.warns(DeprecationWarning, match=r"StatefulEnv\(max_steps=...\) is deprecated; use max_moves=8"):
        env = StatefulEnv('sokoban', max_steps=8)
    assert env.params['max_moves'] == 8 and 'max_steps' not in env.params
    same = StatefulEnv('sokoban', max_moves=8)
    env.reset(3); same.reset(3)
    assert env.problem_uid == same.problem_uid and 'max_moves=8' in env.problem_uid
    with pytest.warns(DeprecationWarning, match="use max_moves=9"):
        assert generate_sokoban(random.Random(2), max_steps=9).max_moves == 9
    assert StatefulEnv.check_params({'benchmark': 'sokoban', 'max_steps': 8}) == []   # a config still validates
    with pytest.raises(TypeError, match="pass max_moves= only"): StatefulEnv('sokoban', max_steps=8, max_moves=9)
    g = env.state.game
    g.apply(['U', 'D', 'U'])
    new = g.to_dict()
    saved = {('steps' if k == 'moves_used' else 'max_steps' if k == 'max_moves' else k): v for k, v in new.items()}
    assert 'moves_used' not in saved and (saved['steps'], saved['max_steps']) == (3, 8)
    for load in (SokobanState.from_dict, lambda d: SokobanState(**d)):
        with pytest.warns(DeprecationWarning) as caught: old = load(saved)
        assert old == g and sorted(str(w.message).split('; use ')[1].split('=')[0] for w in caught) == ['max_moves', 'moves_used']
    st = env.state.to_dict()   # a whole saved trace state (StatefulState) with the old game keys
    with pytest.warns(DeprecationWarning) as caught: assert StatefulState.from_dict({**st, 'game': saved}) == env.state
    assert len(caught) == 2 and any('use moves_used=3' in str(w.message) for w in caught)
    with pytest.warns(DeprecationWarning, match=r"SokobanState.steps is deprecated; use .moves_used"): assert g.steps == 3
    with pytest.warns(DeprecationWarning, match=r"SokobanState.max_steps is deprecated; use .max_moves"): g.max_steps = 9
    assert g.max_moves == 9 and 'steps' not in g.to_dict() and 'max_steps' not in g.to_dict()
    with warnings.catch_warnings():   # the new names never warn
        warnings.simplefilter('error', DeprecationWarning)
        assert SokobanState.from_dict(new).moves_used == 3 and StatefulEnv('sokoban', max_moves=8).params['max_moves'] == 8


def test_no_deprecated_name_in_a_normal_rollout():
    "The library itself never uses Sokoban's old names: a whole tiny_sokoban rollout (oracle and random) warns nothing about them."
    from pettingllms_nb.engine.rollout import rollout
    old = re.compile(r"\b(max_steps|steps)\b")
    with warnings.catch_warnings(record=True) as caught:   # recorded, not raised: an agent's step turns an exception into an infra error
        warnings.simplefilter('always', DeprecationWarning)
        for policy in (oracle_policy, random_policy):
            tr = rollout('tiny_sokoban', policy, seeds=range(3))
            assert tr.episodes and not any(s.infra_error for s in tr.steps)
            assert all('moves_used' in s.state_after['game'] for s in tr.steps if s.state_after)
        env, _ = episode('sokoban', 0, reply=lambda r, e: random_response(r, e, random.Random(0)), max_moves=6)
        assert env.done and env.state.game.moves_used <= 6
        tr._repr_html_(max_rows=2)
    assert not [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning) and old.search(str(w.message))]


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

    for worker, verdict, no_action in ((Crash(), 'RE', -1.0), (Broken(), 'IE', None), (Chatty(), 'OK', -1.0)):
        a = ToolCallAgent()
        act(a, env, good, worker=worker)
        assert env.state.tool_verdict == verdict and env.state.tool_action is None and env.state.tool_eval.get('solved') is None
        assert a.reward_terms.get('no_action') == no_action and a.format_error is None   # None: the IE step is not scored
        assert (a.agent_reward is None) == (verdict == 'IE')
        assert (a.infra_error is not None) == (verdict == 'IE')   # only the sandbox's own failure is marked
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
        for v in vars(c2.state.game).values():   # every list of the game's state, and the first list inside it
            if isinstance(v, list): (v[0] if v and isinstance(v[0], list) else v).append(0)
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
    with pytest.raises(ValueError, match=r"benchmark='chess'; allowed: \['blocksworld', 'eight_queens', 'plan_path', 'sokoban', 'sudoku'\]"):
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
        tr = rollout('stateful_env', random_policy, mode='tree', sample_num=2, seeds=[0], worker=WORKER, benchmark=bench, max_turns=2)
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
    cfgs = {n: load_config(n) for n in list_presets() if n.startswith(('stateful_', 'tiny_'))}
    names = [n for n, c in cfgs.items() if c.env.name == 'stateful_env']   # tiny presets of other envs have their own tests
    assert len(names) >= 8, names
    for name in names:
        cfg = cfgs[name]
        env = make_env(cfg.env.name, **env_kwargs(cfg))
        order = tuple(agent_roles(cfg))
        env.reset(0)
        agents = {r: AGENTS[r]() for r in order}
        worker = None if env_kwargs(cfg).get('toolkit') else WORKER   # tool mode: the real sandbox runs the tools
        for turn in range(cfg.env.max_turns):   # the oracle may ask the board first (tool mode), then play
            if env.done: break
            role = order[turn % len(order)]
            act(agents[role], env, oracle_response(role, env), worker=worker)
        assert env.success, name


# ---------------------------------------------------------------- the compact prompt style (tiny models)
def compact_env(benchmark='plan_path', seed=0, **params):
    env = StatefulEnv(benchmark, prompt_style='compact', **params)
    env.reset(seed)
    return env


def test_compact_prompts_are_short_fixed_layouts():
    for seed in range(50):
        env = compact_env(size=4, seed=seed)
        board = env.state.game.compact()
        assert board == env.state.game.render() and len(board) == 4 * 5 - 1
        prompts = {r: AGENTS[r]().update_from_env(env, 0) for r in AGENTS}
        assert prompts['tool_call_agent']['text'] == f"T\n{board}\n"
        assert prompts['plan_agent']['text'] == f"P\n{board}\nt:-\n"
        assert prompts['stateful_single_agent']['text'] == f"S\n{board}\n"
        assert all(p['system'] == '' and p['image'] is None and len(p['text']) < 120 for p in prompts.values())
        act(ToolCallAgent(), env, demonstration('tool_call_agent', env))
        plan = PlanAgent().update_from_env(env, 0)['text']
        assert plan == f"P\n{board}\nt:{''.join(solve_plan_path(env.state.game))}\n" and len(plan) < 120
    sd = compact_env('sudoku')
    assert ToolCallAgent().update_from_env(sd, 0)['text'] == "T\n" + '\n'.join(''.join(str(v) if v else '.' for v in row) for row in sd.state.game.grid) + "\n"
    sk = compact_env('sokoban')
    assert StatefulSingleAgent().update_from_env(sk, 0)['text'] == f"S\n{sk.state.game.render()}\n"
    with pytest.raises(ValueError, match=r"prompt_style='short'; allowed: \['full', 'compact'\]"):
        StatefulEnv(prompt_style='short')
    assert StatefulEnv().prompt_style == 'full' and compact_env().clone().prompt_style == 'compact'
    full = StatefulEnv(); full.reset(3)
    assert compact_env(seed=3).problem_uid == full.problem_uid   # the style is how the problem is shown, not the problem


def test_compact_prompts_show_the_current_state():
    for seed in range(50):
        env = compact_env(size=4, seed=seed)
        g = env.state.game
        path = solve_plan_path(g)
        if len(path) < 2: continue
        act(PlanAgent(), env, ''.join(path[:1 + seed % (len(path) - 1)]))
        env.end_turn()
        assert g.pos != g.start and not env.done
        for role in AGENTS:
            text = AGENTS[role]().update_from_env(env, env.turn)['text']
            rows = text.split('\n')[1:5]
            assert rows[g.pos[0]][g.pos[1]] == '@' and rows[g.start[0]][g.start[1]] == '.', (seed, role)
            assert rows == g.compact().splitlines()
    # Sokoban: the player and the boxes where they are now; Sudoku: the entries made so far
    env = compact_env('sokoban')
    act(PlanAgent(), env, ''.join(solve_sokoban(env.state.game)[:2]))
    assert StatefulSingleAgent().update_from_env(env, 1)['text'] == f"S\n{env.state.game.render()}\n"
    env = compact_env('sudoku')
    first = solve_sudoku(env.state.game)[:2]
    act(PlanAgent(), env, ' '.join(f"{r}{c}{v}" for r, c, v in first))
    text = StatefulSingleAgent().update_from_env(env, 1)['text']
    assert all(text.split('\n')[1 + r][c] == str(v) for r, c, v in first)


def test_compact_prompts_never_contain_the_solution():
    rng = random.Random(0)
    for size, seeds in ((4, 50), (9, 5)):
        for seed in range(seeds):
            env = compact_env('sudoku', seed=seed, size=size)
            g = env.state.game
            solution = '\n'.join(''.join(map(str, row)) for row in g.solution)
            prompts = [AGENTS[r]().update_from_env(env, 0)['text'] for r in AGENTS]
            act(ToolCallAgent(), env, random_response('tool_call_agent', env, rng))
            prompts.append(PlanAgent().update_from_env(env, 0)['text'])
            for p in prompts:
                board = p.split('\nt:')[0].split('\n', 1)[1].rstrip('\n')
                assert board == g.compact() and solution not in p
                assert all(line != ''.join(map(str, g.solution[r])) for r, line in enumerate(board.splitlines()) if 0 in g.grid[r])


def test_compact_answers_parse():
    env = compact_env(size=4, seed=1)
    moves = solve_plan_path(env.state.game)
    for role in ('plan_agent', 'stateful_single_agent'):
        a = AGENTS[role](); a.update_from_env(env, 0)
        for ans in (''.join(moves), f"#### {''.join(moves)}", f"#### {json.dumps(moves)}", f"Thinking.\n#### {json.dumps(moves)}",
                    ''.join(moves).lower(), ''.join(moves) + "\ntrailing text"):
            assert a.update_from_model(ans) == moves and a.format_error is None, (role, ans)
    # Sudoku: rcv triples (spaces or commas), or the full forms
    env = compact_env('sudoku', seed=2)
    want = solve_sudoku(env.state.game)
    triples = ' '.join(f"{r}{c}{v}" for r, c, v in want)
    assert compact_action(want) == triples
    a = PlanAgent(); a.update_from_env(env, 0)
    for ans in (triples, triples.replace(' ', ','), triples.replace(' ', ', '), f"#### {triples}", f"#### {json.dumps(want)}",
                f"#### {json.dumps(env.state.game.solution)}"):
        assert a.update_from_model(ans) in (want, env.state.game.solution) and a.format_error is None, ans
    # the tool agent: a bare one-line program or a fenced one; its output read as a bare action or the marker form
    t = ToolCallAgent(); t.update_from_env(compact_env(size=4, seed=1), 0)
    assert t.update_from_model('print("RD")') == 'print("RD")'
    assert t.update_from_model('```python\nprint("RD")\n```') == 'print("RD")'
    assert t.update_from_model('  print("RD")\n') == 'print("RD")'
    for stdout, action in (("RD\n", ['R', 'D']), (f"{TOOL_MARKER} RD\n", ['R', 'D']), (f'{TOOL_MARKER} ["R", "D"]\n', ['R', 'D'])):
        class Prints:
            async def run(self, code, **kw): return SimpleNamespace(verdict='OK', stdout=stdout, stderr='')
        env = compact_env(size=4, seed=1)
        act(ToolCallAgent(), env, 'print("RD")', worker=Prints())
        assert env.state.tool_action == action and env.state.tool_eval and env.state.game.steps == 0, stdout
    for stdout, action in (("023 114\n", [[0, 2, 3], [1, 1, 4]]), (f"{TOOL_MARKER} [[0, 2, 3]]", [[0, 2, 3]])):
        class Prints:
            async def run(self, code, **kw): return SimpleNamespace(verdict='OK', stdout=stdout, stderr='')
        env = compact_env('sudoku', seed=0)
        act(ToolCallAgent(), env, 'print("023 114")', worker=Prints())
        assert env.state.tool_action == action, stdout


COMPACT_GARBAGE = GARBAGE + ["RRX", "R R Z", "print(", "print('R'", "023 11", "0233", "093", "020", "999 999", "  ",
                             "up, sideways", "\n\n", "```\n```", "lorem ipsum " * 2000]


@pytest.mark.parametrize("benchmark", list(GAMES))
def test_compact_garbage_is_a_format_error(benchmark):
    start = compact_env(benchmark).state.game
    for role, cls in AGENTS.items():
        for junk in COMPACT_GARBAGE:
            env = compact_env(benchmark)
            a = cls()
            r = act(a, env, junk)
            assert a.format_error is not None, (role, junk)
            assert a.current_action is None and math.isfinite(r) and r < 0
            assert not env.success and env.state.game == start, (role, junk)


def test_compact_program_checks_without_running():
    for ok in ('print("RD")', 'x = "RD"; print(x)', '```python\nimport os\nprint(os.getcwd())\n```'):
        assert compact_program(ok)
    # the plan agent's answer, prose, a comment, no call (so nothing printed), broken or oversized code, non-text
    for junk in ("", "RRD", "023 114", "I refuse.", "#### RRD", "# just a comment", "x = 1", "up, sideways", "print(",
                 "x" * 30_000, None, b"print(1)", "\x00"):
        with pytest.raises(Exception) as info: compact_program(junk)
        assert type(info.value).__name__ == 'FormatError', junk


@pytest.mark.parametrize("benchmark", list(GAMES))
@pytest.mark.parametrize("order", [PAIR, SINGLE])
def test_compact_oracle_solves_every_seed(benchmark, order):
    params = {'size': 4} if benchmark == 'plan_path' else {}
    for seed in range(100):
        env = StatefulEnv(benchmark, prompt_style='compact', **params)
        env.reset(seed)
        agents = {r: AGENTS[r]() for r in order}
        for role in order:
            act(agents[role], env, demonstration(role, env))
        assert env.success and env.done and env.turn == 0, (benchmark, seed)
        assert all(a.format_error is None for a in agents.values())
        if order == PAIR:
            assert agents['tool_call_agent'].success and env.state.tool_verdict == 'OK'
            assert agents['plan_agent'].current_prompt['text'].endswith(f"t:{compact_action(env.state.tool_action)}\n")


def test_compact_random_replies_are_well_formed():
    rng = random.Random(0)
    for benchmark in GAMES:
        for seed in range(10):
            for order in (PAIR, SINGLE):
                env = StatefulEnv(benchmark, prompt_style='compact'); env.reset(seed)
                agents = {r: AGENTS[r]() for r in order}
                while not env.done:
                    for role in order:
                        if env.done: break
                        reply = random_response(role, env, rng)
                        assert '\n' not in reply and '#' not in reply
                        r = act(agents[role], env, reply)
                        assert agents[role].format_error is None and math.isfinite(r)
                    if not env.done: env.end_turn()


def test_demonstration_mixes_oracle_and_random():
    env = compact_env(size=4, seed=5)
    oracle = ''.join(solve_plan_path(env.state.game))
    assert demonstration('plan_agent', env) == oracle and demonstration('tool_call_agent', env) == f'print("{oracle}")'
    rng = random.Random(0)
    hits = sum(demonstration('stateful_single_agent', env, rng, p_oracle=0.7) == oracle for _ in range(400))
    assert 0.6 < hits / 400 < 0.9
    assert demonstration('plan_agent', env, random.Random(1), 0.0) == random_response('plan_agent', env, random.Random(1))
    with pytest.raises(ValueError, match="needs an rng"): demonstration('plan_agent', env, p_oracle=0.5)
    with pytest.raises(ValueError, match="p_oracle=1.5"): demonstration('plan_agent', env, random.Random(0), 1.5)
    # the full style is unchanged
    full = StatefulEnv('plan_path'); full.reset(5)
    assert demonstration('plan_agent', full).endswith(f"#### {json.dumps(solve_plan_path(full.state.game))}")
    assert oracle_response('tool_call_agent', full).startswith("I search") and "```python" in oracle_response('tool_call_agent', full)


def _replay_pairs(env_kwargs, roles, seed):
    "The (prompt, target) pairs of one oracle episode, driven by hand through the agents and the echo worker."
    env = StatefulEnv(**env_kwargs); env.reset(seed)
    agents, out = {r: AGENTS[r]() for r in roles}, []
    while not env.done:
        for role in roles:
            if env.done: break
            a = agents[role]
            prompt = a.update_from_env(env, env.turn)
            target = oracle_response(role, env)
            a.update_from_model(target)
            solve = GAMES[env.benchmark].solve(env.state.game)
            if role == 'tool_call_agent': assert a.current_action == respond(role, solve, style=env.prompt_style) or env.prompt_style == 'full'
            else: assert a.current_action == solve, (role, target)     # the target parses to the oracle action
            out.append((prompt, target))
            run_sync(a.step(env, WORKER)); env.refresh()
        if not env.done: env.end_turn()
    return out


@pytest.mark.parametrize("benchmark", list(GAMES))
def test_sft_pairs_are_what_the_agents_see(benchmark):
    kw = dict(benchmark=benchmark, prompt_style='compact', max_turns=3)
    for roles in (list(PAIR), list(SINGLE)):
        pairs = sft_pairs(kw, roles, seeds=range(20))
        assert pairs == [p for seed in range(20) for p in _replay_pairs(kw, roles, seed)]
        assert len(pairs) == 20 * len(roles)
        assert all(isinstance(p, dict) and p['system'] == '' and isinstance(t, str) and t for p, t in pairs)
    # the plan agent's `t:` shows the tool agent's proposal, which is the oracle's
    pairs = sft_pairs(kw, list(PAIR), seeds=range(5))
    for (tool_prompt, tool_target), (plan_prompt, plan_target) in zip(pairs[::2], pairs[1::2]):
        assert tool_target == f'print("{plan_target}")' and plan_prompt['text'].endswith(f"t:{plan_target}\n")
        assert tool_prompt['text'][2:] == plan_prompt['text'][2:].rsplit('t:', 1)[0]


def test_sft_pairs_with_random_targets():
    kw = dict(benchmark='plan_path', size=4, prompt_style='compact', max_turns=3)
    a = sft_pairs(kw, list(PAIR), seeds=range(30), p_oracle=0.5, rng=random.Random(7))
    assert a == sft_pairs(kw, list(PAIR), seeds=range(30), p_oracle=0.5, rng=random.Random(7))     # deterministic
    assert len(a) > 60 and len({p['text'] for p, _ in a}) > 40      # unsolved games go on: later turns are demonstrated
    assert any(p['text'].startswith('T') and '@' in p['text'] for p, _ in a)
    assert len(sft_pairs(kw, list(PAIR), seeds=range(30), p_oracle=0.5, turns=1)) == 60
    assert sft_pairs(dict(benchmark='sudoku'), list(SINGLE), seeds=[0])[0][1].endswith(']]')     # the full style works too
    with pytest.raises(ValueError, match=r"unknown role\(s\) \['critic'\]"): sft_pairs(kw, ['critic'], seeds=[0])


def test_sft_pairs_match_the_real_sandbox():
    worker = _sandbox()
    for kw in (dict(benchmark='plan_path', size=4, prompt_style='compact'), dict(benchmark='sokoban', prompt_style='compact'),
               dict(benchmark='sudoku', prompt_style='compact'), dict(benchmark='plan_path')):
        assert sft_pairs(kw, list(PAIR), seeds=range(2), worker=worker) == sft_pairs(kw, list(PAIR), seeds=range(2)), kw


def test_compact_through_the_real_sandbox():
    _sandbox()
    for bench in GAMES:
        env = compact_env(bench, seed=1)
        t = ToolCallAgent()
        act(t, env, demonstration('tool_call_agent', env), worker=None)
        assert env.state.tool_verdict == 'OK' and t.success and GAMES[bench].played(env.state.game) == 0, bench
    env = compact_env()
    act(ToolCallAgent(), env, 'print("RD"); raise SystemExit(1)', worker=None)
    assert env.state.tool_verdict == 'RE' and env.state.tool_action is None
    act(ToolCallAgent(), env, 'print(undefined_name)', worker=None)          # runs, fails, no action; not a format error
    assert env.state.tool_verdict == 'RE' and env.state.tool_action is None


def test_scripted_policies_in_compact_style():
    from pettingllms_nb.engine.rollout import rollout
    for bench in GAMES:
        for order in (list(PAIR), list(SINGLE)):
            tr = rollout('stateful_env', oracle_policy, seeds=range(4), worker=WORKER, benchmark=bench, prompt_style='compact',
                         turn_order=order)
            assert [e.success for e in tr.episodes] == [True] * 4, (bench, order)
        tr = rollout('stateful_env', random_policy, mode='tree', sample_num=2, seeds=[0], worker=WORKER, benchmark=bench,
                     prompt_style='compact', max_turns=2)
        assert all(math.isfinite(s.reward) for s in tr)
    env = compact_env('sokoban', seed=4)
    g = game_from_prompt(PlanAgent().update_from_env(env, 0)['text'])
    assert g.render() == env.state.game.render() and solve_sokoban(g) == solve_sokoban(env.state.game)
    with pytest.raises(ValueError, match="no compact tag line"): game_from_prompt("hello\nworld")


@pytest.mark.parametrize("benchmark", list(GAMES))
def test_check_env_passes_in_compact_style(benchmark):
    from pettingllms_nb.engine.check_env import check_env
    for policy in (None, oracle_policy):
        check_env('stateful_env', benchmark=benchmark, worker=WORKER, policy=policy, prompt_style='compact')
    check_env('stateful_env', benchmark=benchmark, worker=WORKER, turn_order=list(SINGLE), policy=oracle_policy, prompt_style='compact')


def test_tiny_presets_fit_their_lengths():
    from pettingllms_nb.core.config import load_config, env_kwargs, agent_roles
    for name in ('tiny_plan_path', 'tiny_plan_path_single', 'tiny_plan_path_lora'):
        cfg = load_config(name)
        kw = env_kwargs(cfg)
        assert kw['prompt_style'] == 'compact' and kw['benchmark'] == 'plan_path' and kw['max_turns'] in (3, 4)
        pairs = sft_pairs(kw, agent_roles(cfg), seeds=range(300))
        longest_prompt, longest_target = max(len(p['text']) for p, _ in pairs), max(len(t) for _, t in pairs)
        # the chat template adds about 20 tokens around a prompt, and one end-of-sequence token follows a target
        assert longest_prompt + 24 <= cfg.training.max_prompt_length, (name, longest_prompt)
        assert longest_target + 1 <= cfg.training.max_response_length, (name, longest_target)
        assert cfg.specialization == ('lora' if name.endswith('_lora') else 'prompt')


# ---------------------------------------------------------------- the package's layout (issue 10)
def test_sandbox_failures_are_infra_errors_never_scores():
    "A sandbox that raises or answers IE: the step is marked (agent and trace), and nothing penalises the agent."
    from pettingllms_nb.engine.rollout import rollout

    class Broken:
        async def run(self, code, **kw): raise ConnectionError("pool died")

    class FailingSandbox:
        async def run(self, code, **kw): return SimpleNamespace(verdict='IE', stdout='', stderr='bwrap: no namespace')

    for worker, why in ((Broken(), 'ConnectionError: pool died'), (FailingSandbox(), 'bwrap: no namespace')):
        env = StatefulEnv('plan_path'); env.reset(0)
        a = ToolCallAgent()
        r = act(a, env, oracle_response('tool_call_agent', env), worker=worker)
        assert env.state.tool_verdict == 'IE' and why in a.infra_error and a.format_error is None
        assert a.reward_terms == {} and r is None and a.agent_reward is None   # not scored: no term, no reward
        tr = rollout('stateful_env', oracle_policy, seeds=range(2), worker=worker, benchmark='plan_path')
        tool_steps = tr.filter(role='tool_call_agent')
        assert tool_steps and all(s.infra_error and why in s.infra_error for s in tool_steps)
        assert not any(s.infra_error for s in tr.filter(role='plan_agent'))
        assert all(s.reward is None for s in tool_steps) and all(e.infra_errors for e in tr.episodes)
    a = ToolCallAgent(); env = StatefulEnv('plan_path'); env.reset(0)
    act(a, env, "```python\nprint(undefined_name)\n```", worker=EchoWorker())
    assert a.infra_error is None and a.reward_terms['no_action'] == -1.0   # the program's own crash is the agent's


def test_oracle_action_is_public_and_plans_from_now():
    from pettingllms_nb.envs.stateful import oracle_action
    for bench in GAMES:
        env = StatefulEnv(bench); env.reset(3)
        g = env.state.game
        assert oracle_action(g) == GAMES[bench].solve(g) and try_action(g, oracle_action(g))['solved']
    corner = SokobanState(height=5, width=5, walls=[[r, c] for r in range(5) for c in range(5) if r in (0, 4) or c in (0, 4)],
                          goals=[[2, 2]], boxes=[[1, 1]], player=[3, 3])
    assert corner.deadlocked and set(oracle_action(corner, random.Random(1))) <= set('UDLR')   # unsolvable: a random action


def test_package_reexports_every_public_name():
    import importlib
    import pettingllms_nb.envs.stateful as pkg
    from pettingllms_nb.envs.stateful.__init__ import _PARTS
    for part, names in _PARTS.items():
        module = importlib.import_module(f'pettingllms_nb.envs.stateful.{part}')
        assert sorted(names) == sorted(module.__all__), part
        assert all(getattr(pkg, n) is getattr(module, n) for n in names), part
    before = ['AGENT_CLASSES', 'ALIASES', 'COMPACT_TAGS', 'GAMES', 'Game', 'GameAgent', 'IGNORED_PARAMS', 'INFRA_VERDICTS',
              'MAX_CODE_CHARS', 'OK_VERDICTS', 'PARAM_ALIASES', 'PLAN_INTRO', 'PLAN_REWARDS', 'PROMPT_STYLES', 'PlanAgent',
              'ROLES', 'SINGLE_INTRO', 'STATE_LABEL', 'StatefulEnv', 'StatefulSingleAgent', 'StatefulState', 'TOOL_INTRO',
              'TOOL_MARKER', 'TOOL_REWARDS', 'ToolCallAgent', 'compact_action', 'compact_program', 'compact_prompt',
              'default_worker', 'demonstration', 'describe_task', 'game_from_prompt', 'oracle_policy', 'oracle_response',
              'play', 'prompt_style_of', 'random_policy', 'random_response', 'respond', 'sft_pairs', 'tool_program',
              'try_action', 'verdict_ok']
    assert all(hasattr(pkg, n) for n in before)
    from pettingllms_nb.widgets import render
    from pettingllms_nb.envs.stateful.games import plan_path, sudoku, sokoban
    assert (render.plan_path_svg, render.sudoku_svg, render.sokoban_svg) == (plan_path.plan_path_svg, sudoku.sudoku_svg,
                                                                             sokoban.sokoban_svg)
    with pytest.raises(AttributeError): render.chess_svg


def test_no_log_and_no_method_names_in_any_all():
    import importlib, inspect
    from pettingllms_nb.envs.stateful.__init__ import _PARTS
    mods = [importlib.import_module(f'pettingllms_nb.envs.stateful.{m}') for m in [*_PARTS, 'games.plan_path', 'games.sudoku',
                                                                                 'games.sokoban']]
    classes = [c for m in mods for c in vars(m).values() if inspect.isclass(c) and c.__module__ == m.__name__]
    methods = {n for c in classes for n, v in vars(c).items() if callable(v) or isinstance(v, property)} - {c.__name__ for c in classes}
    for m in mods:
        assert 'log' not in m.__all__ and not set(m.__all__) & methods, (m.__name__, set(m.__all__) & methods)
        assert not any(hasattr(m, n) for n in ('board_html',)), m.__name__      # one drawing per game: the SVG


def test_each_game_draws_one_picture():
    from pettingllms_nb.widgets.render import board_svg, render_state
    for bench, mark in (('plan_path', 'walker'), ('sudoku', 'clue'), ('sokoban', 'player')):
        g = StatefulEnv(bench).reset(2).game
        assert board_svg(g) in g._repr_html_() and f"class='{mark}'" in board_svg(g)
        assert render_state(g) == g._repr_html_() and 'pllm-kv' not in g._repr_html_()   # the picture, not a field table
        assert str(getattr(g, 'solution', 'no solution field')) not in g._repr_html_()


def test_builtins_register_everything_in_a_fresh_interpreter():
    "Registry.load imports what BUILTINS names: the env, its agents and its scripted policies, nothing imported first."
    import subprocess, sys
    code = ("import json\nfrom pettingllms_nb.core.registry import registry\n"
            "print(json.dumps([registry.get('env', 'stateful_env').__module__, registry.agents_for('stateful_env'),\n"
            "      registry.scripted('stateful_env', 'oracle').__module__, registry.scripted('stateful_env', 'random').__name__]))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, check=True).stdout
    env_module, agents, oracle_module, random_name = json.loads(out)
    assert (env_module, oracle_module, random_name) == ('pettingllms_nb.envs.stateful.env', 'pettingllms_nb.envs.stateful.oracle',
                                                        'random_policy')
    assert set(AGENTS) <= set(agents)


def test_sokoban_old_and_new_names_together_and_empty_old_keys():
    "Both spellings of the move cap at once is refused, even at the default value; an old key holding None sets nothing."
    import random
    from pettingllms_nb.envs.stateful.games.sokoban import generate_sokoban, SokobanState
    with pytest.raises(TypeError, match='pass max_moves= only'): generate_sokoban(random.Random(0), max_moves=50, max_steps=40)
    assert generate_sokoban(random.Random(0)).max_moves == 50
    assert SokobanState(steps=None).moves_used == 0 and SokobanState.from_dict({**SokobanState().to_dict(), 'max_moves': 9}).max_moves == 9


# ---------------------------------------------------------------- Eight Queens and Blocksworld (issue 31)
def test_queens_oracle_completes_any_board_the_agents_left():
    from pettingllms_nb.envs.stateful.games.eight_queens import generate_queens, solve_queens, queens_solutions, attacks
    for seed in range(40):
        rng = random.Random(seed)
        n = rng.choice([4, 5, 6, 7, 8, 10])
        g = generate_queens(rng, n, rng.randrange(n))
        g.apply(GAMES['eight_queens'].random_action(g, rng))                 # wherever the agents put their queens
        given = list(g.givens)
        g.apply(solve_queens(g))
        assert g.solved and g.givens == given and all(g.cols[r] == c for r, c in enumerate(given) if c >= 0)
        assert not any(attacks(r, g.cols[r], r2, g.cols[r2]) for r in range(n) for r2 in range(r + 1, n))
    many = StatefulEnv('eight_queens', size=8, givens=0)
    assert len({tuple(s) for s in queens_solutions(8)}) == 92 and many.reset(0).game.cols == [-1] * 8


def test_blocksworld_plans_are_shortest_and_legal():
    from pettingllms_nb.envs.stateful.games.blocksworld import BlocksState, plan, key, moves_from, random_stacks
    start = key([['a', 'b', 'c']])
    depth, todo = {start: 0}, [start]              # every arrangement of 3 blocks, by its distance from `start`
    while todo:
        u = todo.pop(0)
        for _, v in moves_from(u):
            if v not in depth: depth[v] = depth[u] + 1; todo.append(v)
    assert len(depth) == 13 and max(depth.values()) == 4
    for v, d in depth.items():
        p = plan([list(s) for s in start], [list(s) for s in v])
        g = BlocksState(size=3, stacks=[['a', 'b', 'c']], goal=[list(s) for s in v])
        res = g.apply(p) if p else {'invalid': 0}
        assert len(p) == d and g.solved and res['invalid'] == 0, (v, p)
    rng = random.Random(0)
    for _ in range(20):
        a, b = random_stacks(rng, 6), random_stacks(rng, 6)
        assert len(plan(a, b)) <= 10


def test_new_games_read_their_compact_prompts_back():
    for bench, kw in (('eight_queens', dict(size=7, givens=4)), ('blocksworld', dict(size=4))):
        env = StatefulEnv(bench, prompt_style='compact', **kw)
        env.reset(3)
        text = PlanAgent().update_from_env(env, 0)['text']
        g = game_from_prompt(text)
        assert g.render() == env.state.game.render() and GAMES[bench].solve(g) == GAMES[bench].solve(env.state.game)

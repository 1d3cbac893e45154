"""Engine overhead: agent-turns per second of `rollout` with a zero-cost scripted policy, against bare loops.

Three ways to play the same Plan-Path episodes (single agent, no sandbox, the same fixed answer every turn):
  engine      rollout(...) with a ScriptedPolicy that returns a constant string (records a full Trace)
  bare cycle  the agent's own methods called in a plain loop (update_from_env, update_from_model, step, reward)
  bare state  only the game's state functions (apply the parsed moves, check solved)
Printed side by side from one run; the ratios are what to quote.

    python bench/bench_engine.py [--seeds 200] [--turns 4]
"""
import argparse, asyncio, time
from pettingllms_nb.core.registry import make_env, make_agent
from pettingllms_nb.engine.rollout import rollout

ANSWER = '#### ["R", "D"]'


def engine(seeds, turns):
    t = rollout('stateful_env', lambda req: ANSWER, turn_order=['stateful_single_agent'], seeds=seeds, max_turns=turns,
                benchmark='plan_path', size=6)
    return len(t)


def bare_cycle(seeds, turns): return asyncio.run(_bare_cycle(seeds, turns))


async def _bare_cycle(seeds, turns):
    n = 0
    for s in seeds:
        env = make_env('stateful_env', benchmark='plan_path', size=6, max_turns=turns); env.reset(s)
        agent = make_agent('stateful_single_agent')
        for t in range(turns):
            agent.update_from_env(env, t); agent.update_from_model(ANSWER)
            await agent.step(env); env.refresh(); agent.calculate_reward(env); n += 1
            if env.done: break
            env.end_turn()
            if env.done: break
    return n


def bare_state(seeds, turns):
    n = 0
    for s in seeds:
        env = make_env('stateful_env', benchmark='plan_path', size=6, max_turns=turns); env.reset(s)
        g = env.state.game
        for t in range(turns):
            g.apply(['R', 'D']); n += 1
            if g.solved: break
    return n


def timed(fn, *a, repeat=3):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter(); n = fn(*a); dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    return n, best


if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--seeds', type=int, default=200); ap.add_argument('--turns', type=int, default=4)
    a = ap.parse_args()
    seeds = range(a.seeds)
    rows = [(name, *timed(fn, seeds, a.turns)) for name, fn in (('engine', engine), ('bare cycle', bare_cycle), ('bare state', bare_state))]
    base = {name: n / dt for name, n, dt in rows}
    print(f"{'method':<12} {'agent-turns':>11} {'seconds':>8} {'turns/s':>10}")
    for name, n, dt in rows: print(f"{name:<12} {n:>11} {dt:>8.3f} {n / dt:>10.0f}")
    print(f"\nengine / bare cycle = {base['engine'] / base['bare cycle']:.2f}x   "
          f"engine / bare state = {base['engine'] / base['bare state']:.3f}x")

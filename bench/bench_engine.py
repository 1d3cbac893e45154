"""Engine overhead: agent-turns per second of `rollout` with a zero-cost scripted policy, against bare loops.

Three ways to play the same Plan-Path episodes (single agent, no sandbox, the same fixed answer every turn):
  engine      rollout(...) with a ScriptedPolicy that returns a constant string (records a full Trace)
  bare cycle  the agent's own methods called in a plain loop (update_from_env, update_from_model, step, reward)
  bare state  only the game's state functions (apply the parsed moves, check solved)
Printed side by side from one run, in CPU time of this process (what a loaded machine disturbs least) and in wall
time; the CPU-time ratios are what to quote. The methods are interleaved over the repeats and the best of each kept.

    python bench/bench_engine.py [--seeds 200] [--turns 4] [--repeat 5] [--mode independent|tree]
"""
import argparse, asyncio, time
from _load import load_report
from pettingllms_nb.core.registry import make_env, make_agent
from pettingllms_nb.engine.rollout import rollout

ANSWER = '#### ["R", "D"]'


def engine(seeds, turns, mode='independent'):
    t = rollout('stateful_env', lambda req: ANSWER, turn_order=['stateful_single_agent'], seeds=seeds, max_turns=turns,
                benchmark='plan_path', size=6, mode=mode)
    return len(t)


def bare_cycle(seeds, turns, mode='independent'): return asyncio.run(_bare_cycle(seeds, turns))


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


def bare_state(seeds, turns, mode='independent'):
    n = 0
    for s in seeds:
        env = make_env('stateful_env', benchmark='plan_path', size=6, max_turns=turns); env.reset(s)
        g = env.state.game
        for t in range(turns):
            g.apply(['R', 'D']); n += 1
            if g.solved: break
    return n


METHODS = (('engine', engine), ('bare cycle', bare_cycle), ('bare state', bare_state))


def measure(seeds, turns, repeat, mode):
    "Best CPU and wall seconds of each method, the methods taking turns in every repeat."
    best = {name: [None, float('inf'), float('inf')] for name, _ in METHODS}
    for _ in range(repeat):
        for name, fn in METHODS:
            c0, w0 = time.process_time(), time.perf_counter()
            n = fn(seeds, turns, mode)
            c, w = time.process_time() - c0, time.perf_counter() - w0
            b = best[name]; b[0], b[1], b[2] = n, min(b[1], c), min(b[2], w)
    return best


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, default=200); ap.add_argument('--turns', type=int, default=4)
    ap.add_argument('--repeat', type=int, default=5); ap.add_argument('--mode', default='independent')
    a = ap.parse_args()
    with load_report('bench_engine'):
        engine(range(5), a.turns, a.mode)   # imports and registries warmed before timing
        best = measure(range(a.seeds), a.turns, a.repeat, a.mode)
        print(f"{'method':<12} {'agent-turns':>11} {'CPU s':>7} {'wall s':>7} {'turns/CPU s':>12}")
        for name, (n, c, w) in best.items(): print(f"{name:<12} {n:>11} {c:>7.3f} {w:>7.3f} {n / c:>12.0f}")
        rate = {name: n / c for name, (n, c, w) in best.items()}
        wall = {name: n / w for name, (n, c, w) in best.items()}
        print(f"\nCPU time : engine / bare cycle = {rate['engine'] / rate['bare cycle']:.2f}x   "
              f"engine / bare state = {rate['engine'] / rate['bare state']:.3f}x")
        print(f"wall time: engine / bare cycle = {wall['engine'] / wall['bare cycle']:.2f}x   "
              f"engine / bare state = {wall['engine'] / wall['bare state']:.3f}x")

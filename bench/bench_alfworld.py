"""alfworld_env's simulator costs: reset and step time, and cloning by replay against cloning by re-simulation.

For generated tasks of a given room size: a cold first load (nothing cached), a warm load and reset of another game
(the grammar template and the planner libraries reused), a step, and, after `--depth` commands, a clone three ways:
  - re-simulate: a fresh engine that plays every command again through TextWorld's `step` (what replaying naively costs);
  - replay:      `AlfredEngine.replay` (the planner's operators applied directly, only the last step rendered);
  - lazy clone:  `AlfworldEnv.clone()` itself (copies the state and the log; nothing is built until the clone acts),
                 then its first step (which replays).
Each clone's observation and admissible commands are checked equal to the original's. One run prints the ratios.

    python bench/bench_alfworld.py [--size 12] [--depth 10] [--games 5] [--memo 0|1]
"""
import argparse, os, random, statistics, time
from _load import load_report

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--size', type=int, default=12, help='receptacles per generated room')
    ap.add_argument('--depth', type=int, default=10, help='commands played before cloning')
    ap.add_argument('--games', type=int, default=5)
    ap.add_argument('--memo', default='1', help="0: run without the engine's memoised TextWorld parses")
    a = ap.parse_args()
    os.environ['PETTINGLLMS_NB_TW_MEMO'] = a.memo
    t0 = time.perf_counter()
    from pettingllms_nb.core.agent import run_sync
    from pettingllms_nb.envs.alfworld.data import generate_task
    from pettingllms_nb.envs.alfworld.engine import AlfredEngine, game_data
    from pettingllms_nb.envs.alfworld.env import AlfworldEnv, generated_game
    t_import = time.perf_counter() - t0

    tasks = [generate_task(1000 + i, size=a.size) for i in range(a.games)]
    t0 = time.perf_counter(); first = AlfredEngine(tasks[0].game()); t_cold = time.perf_counter() - t0
    loads, steps, resim, replay, lazy, first_step = [], [], [], [], [], []
    for i, t in enumerate(tasks):
        t0 = time.perf_counter(); eng = AlfredEngine(t.game()); loads.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); eng.reset(); resets = time.perf_counter() - t0
        rng, hist = random.Random(i), []
        for _ in range(a.depth):
            cmd = rng.choice(eng.last.admissible)
            t0 = time.perf_counter(); obs = eng.step(cmd); steps.append(time.perf_counter() - t0)
            hist.append((cmd, obs.action_id))
        want = eng.last.fingerprint
        t0 = time.perf_counter(); slow = AlfredEngine(t.game())
        for cmd, _ in hist: slow.step(cmd)
        resim.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); fast = AlfredEngine(t.game()); fast.replay(hist); replay.append(time.perf_counter() - t0)
        assert slow.last.fingerprint == fast.last.fingerprint == want, "a clone differs from the original"
        for e in (slow, fast): e.close()
        eng.close()

    env = AlfworldEnv(size=a.size)
    for i in range(a.games):
        env.reset(1000 + i)
        rng = random.Random(i)
        for _ in range(a.depth): run_sync(env.act(rng.choice(env.state.admissible)))
        t0 = time.perf_counter(); c = env.clone(); lazy.append(time.perf_counter() - t0)
        cmd = rng.choice(env.state.admissible)
        t0 = time.perf_counter(); run_sync(c.act(cmd)); first_step.append(time.perf_counter() - t0)
        run_sync(env.act(cmd))
        assert c.sim.last.fingerprint == env.sim.last.fingerprint, "a lazy clone differs from the original"

    ms = lambda xs: 1000 * statistics.median(xs)
    print(f"alfworld_env simulator, generated rooms of {a.size} receptacles, {a.games} games, clones after {a.depth} commands"
          f" (memoised parses: {a.memo != '0'})")
    print(f"  import the alfworld_env modules      {1000 * t_import:8.0f} ms")
    print(f"  first load (cold caches)             {1000 * t_cold:8.0f} ms")
    print(f"  load + reset, another game (median)  {ms(loads):8.0f} ms   reset alone {1000 * resets:.0f} ms")
    print(f"  step (median of {len(steps)})               {ms(steps):8.1f} ms")
    print(f"  clone by re-simulation               {ms(resim):8.0f} ms")
    print(f"  clone by replay                      {ms(replay):8.0f} ms   {ms(resim) / ms(replay):5.1f}x faster than re-simulation")
    print(f"  lazy env.clone()                     {ms(lazy):8.3f} ms   (the game is built when the clone first acts)")
    print(f"  the clone's first step (replays)     {ms(first_step):8.0f} ms   = {ms(first_step) / ms(steps):5.1f} steps")

if __name__ == '__main__':
    with load_report('bench_alfworld'): main()

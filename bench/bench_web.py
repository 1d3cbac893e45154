"""web_env throughput: shop episodes per second in text mode and in Chromium, and the browser pool's scaling.

Every episode is a held-out shop goal played by the scripted oracle (navigator and verifier, ~8 turns, every order
right), so both modes do the same work; the browser runs without screenshots unless --screenshots.
  text        the shop's pages read in-process (TextBrowser), no browser
  browser     the same episodes in Chromium through the shared pool
  eviction    the same 4 episodes at once on a pool of 4 contexts (no eviction) and on a pool of 2 (evicted pages come
              back by reloading their last page in their session), both with 2 operations at once: the ratio is what
              a pool smaller than the episodes in flight costs (goal: at most 2x)
  pool k      k episodes at once on a pool of k contexts (k = 1..4), in waves of k; the ratio to k = 1 is the scaling
Printed side by side from one run; the ratios are what to quote (this machine's other load moves the absolute numbers).

    python bench/bench_web.py [--episodes 40] [--browser-episodes 8] [--max-contexts 4] [--screenshots]
"""
import argparse, atexit, os, time
from _load import load
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.envs.web.browser import browser_available, browser_processes, close_browsers, set_pool_size
from pettingllms_nb.envs.web.oracle import oracle_policy
from pettingllms_nb.envs.web.shop import close_shop_servers


def play(seeds, backend, screenshots=False):
    t = rollout('web_env', oracle_policy, seeds=list(seeds), split='test', backend=backend, max_turns=14, screenshots=screenshots)
    assert all(e.success for e in t.episodes), [e.problem_uid for e in t.episodes if not e.success]
    return len(t.episodes), len(t)


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def eviction(screenshots, n=4, k=2):
    "Episodes/s, evictions, page reads, restores and replays of the same `n` episodes on pools of `n` and of `k` contexts."
    from pettingllms_nb.envs.web import browser as B
    out, counts = {}, []
    real = B.BrowserPage.__init__
    def counted(self, *a, **kw): real(self, *a, **kw); counts.append(self)
    for size in (n, k):
        pool = set_pool_size(size, max_active=k)
        play(range(990, 990 + n), 'browser', screenshots)          # warm: Chromium started, pages cached
        e0, counts[:] = pool.evictions, []
        B.BrowserPage.__init__ = counted
        try: (eps, steps), dt = timed(play, range(n), 'browser', screenshots)
        finally: B.BrowserPage.__init__ = real
        out[size] = (eps / dt, pool.evictions - e0, sum(p.reads for p in counts), sum(p.restores for p in counts),
                     sum(p.replays for p in counts), steps)
    return out


def pool_scaling(k, waves, screenshots):
    "Episodes per second with `k` episodes at once on a pool of `k` contexts (k operations may run at once)."
    set_pool_size(k, max_active=k)
    play(range(900, 900 + k), 'browser', screenshots)          # warm: Chromium started, pages cached
    n, dt = 0, 0.0
    for w in range(waves):
        (eps, _), d = timed(play, range(w * k, (w + 1) * k), 'browser', screenshots)
        n, dt = n + eps, dt + d
    return n, dt


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--episodes', type=int, default=40, help='text-mode episodes')
    ap.add_argument('--browser-episodes', type=int, default=8, help='browser episodes (and per pool size)')
    ap.add_argument('--max-contexts', type=int, default=4)
    ap.add_argument('--screenshots', action='store_true', help='take a screenshot after every step, as the state card shows')
    a = ap.parse_args()
    print(f"web_env bench: {os.cpu_count()} cores, load average at start {load()}")
    atexit.register(lambda: print(f"web_env bench: load average at end {load()}"))
    (n, steps), dt = timed(play, range(a.episodes), 'text')
    text_eps = n / dt
    print(f"{'text mode':<22}{n:>5} episodes {steps:>6} steps {dt:8.2f} s {text_eps:9.2f} episodes/s")
    why = browser_available()
    if why:
        print(f"browser: skipped ({why})")
        raise SystemExit(0)
    try:
        set_pool_size(max(8, a.browser_episodes))                        # a context for every episode: no eviction
        play(range(990, 992), 'browser', a.screenshots)                  # start Chromium outside the timing
        (n, steps), dt = timed(play, range(a.browser_episodes), 'browser', a.screenshots)
        br_eps = n / dt
        print(f"{'browser mode':<22}{n:>5} episodes {steps:>6} steps {dt:8.2f} s {br_eps:9.2f} episodes/s"
              f"   text/browser = {text_eps / br_eps:.0f}x")
        ev = eviction(a.screenshots)
        for size, (eps, evicted, reads, restores, replays, steps) in ev.items():
            print(f"{f'4 on a pool of {size}':<22}    4 episodes {steps:>6} steps {4 / eps:8.2f} s {eps:9.2f} episodes/s"
                  f"   {evicted} evictions, {reads} page reads, {restores} restores, {replays} replays")
        print(f"{'eviction costs':<22}x{ev[4][0] / ev[2][0]:.2f} (4 on 4 / 4 on 2 episodes/s; goal: at most 2x)")
        base = None
        for k in range(1, a.max_contexts + 1):
            n, dt = pool_scaling(k, max(1, a.browser_episodes // k), a.screenshots)
            eps = n / dt
            base = base or eps
            print(f"{f'pool of {k} context(s)':<22}{n:>5} episodes        {dt:15.2f} s {eps:9.2f} episodes/s   x{eps / base:.2f} vs 1")
    finally:
        close_browsers()
        close_shop_servers()
    assert browser_processes() == [], 'Chromium processes left running'

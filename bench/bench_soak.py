"""A long tree-mode training run: does anything grow per step? RSS, open descriptors, child processes, browser contexts
and the shop's server-side sessions, sampled every N steps, with their growth per 100 steps after the first 100.

Each preset trains from its tiny base (no warm start: the soak is about resources, not learning) in tree mode, with
validation and checkpoints off so every step is a training step. The goal is flat: no growth of sessions, contexts,
processes or descriptors, and RSS growth under 5% per 100 steps after the first 100 (what issue 26 asks): printed
from the sample at step 100 to the last, and from the least-squares line through all the samples from step 100.

    python bench/bench_soak.py [--presets tiny_web_shop tiny_alfworld] [--steps 300] [--every 25] [--backend text|browser]

`python bench/bench_web.py` measures the browser pool's throughput with eviction against without.
"""
import argparse, os, sys, tempfile, time
from _load import load_report


def rss_mb(pid:int|str='self') -> float:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith('VmRSS:'): return int(line.split()[1]) / 1024
    except OSError: pass
    return 0.0


def children() -> list:
    "Every live descendant process of this one (pids)."
    import psutil
    return [p.pid for p in psutil.Process().children(recursive=True) if p.is_running()]


def sample(step:int, t0:float) -> dict:
    from pettingllms_nb.envs.web import env as W, browser as B
    kids = children()
    pool = B._POOL[0] if B._POOL and not B._POOL[0]._closed else None
    return {'step': step, 'seconds': round(time.monotonic() - t0, 1), 'rss_mb': round(rss_mb(), 1),
            'children_rss_mb': round(sum(rss_mb(p) for p in kids), 1), 'fds': len(os.listdir('/proc/self/fd')),
            'children': len(kids), 'contexts': len(pool._leases) if pool is not None else 0,
            'sessions': sum(len(app.sessions) for app in set(W._APPS.values()))}


def growth(rows:list, key:str, after:int=100) -> tuple:
    "(per 100 steps, as % of the value at `after` per 100 steps) from the sample at `after` to the last."
    base = next((r for r in rows if r['step'] >= after), None)
    last = rows[-1]
    if base is None or last['step'] == base['step']: return float('nan'), float('nan')
    per100 = (last[key] - base[key]) * 100 / (last['step'] - base['step'])
    return per100, (100 * per100 / base[key]) if base[key] else float('nan')


def slope(rows:list, key:str, after:int=100) -> tuple:
    "`growth` from the least-squares line through every sample from `after` on (one noisy sample moves it less)."
    pts = [(r['step'], r[key]) for r in rows if r['step'] >= after]
    if len(pts) < 3: return float('nan'), float('nan')
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    per100 = 100 * sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return per100, (100 * per100 / my) if my else float('nan')


def soak(preset:str, steps:int, every:int, backend:str) -> list:
    from pettingllms_nb.training.trainer import Trainer
    overrides = [f'training.total_training_steps={steps}', 'training.rollout_mode=tree', 'training.val_freq=0',
                 'training.save_freq=0', 'training.warmstart_steps=0']
    if preset.startswith('tiny_web'):
        overrides += [f'env.kwargs.backend={backend}', 'agent_policy_configs.agent_configs.agent_0.kwargs.credit=null',
                      'agent_policy_configs.agent_configs.agent_1.kwargs.credit=null']
    rows, t0 = [], time.monotonic()
    with tempfile.TemporaryDirectory() as out:
        tr = Trainer(preset, overrides, out_dir=out, progress=False)
        rows.append(sample(0, t0))
        def cb(trainer, m):
            if trainer.step % every == 0:
                rows.append(sample(trainer.step, t0))
                r = rows[-1]
                print(f"  {preset} step {r['step']:4d}  {r['seconds']:7.1f}s  RSS {r['rss_mb']:7.1f} MB "
                      f"(children {r['children_rss_mb']:6.1f})  fds {r['fds']:4d}  children {r['children']:3d}  "
                      f"contexts {r['contexts']:2d}  sessions {r['sessions']:4d}", flush=True)
        tr.fit(callback=cb)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--presets', nargs='+', default=['tiny_web_shop', 'tiny_alfworld'])
    ap.add_argument('--steps', type=int, default=300)
    ap.add_argument('--every', type=int, default=25)
    ap.add_argument('--backend', default='text', choices=['text', 'browser'], help="the web shop's backend")
    a = ap.parse_args()
    summary = []
    for preset in a.presets:
        print(f"{preset}: {a.steps} tree-mode steps, sampled every {a.every}", flush=True)
        rows = soak(preset, a.steps, a.every, a.backend)
        summary.append((preset, {k: growth(rows, k) for k in ('rss_mb', 'fds', 'children', 'contexts', 'sessions')},
                        slope(rows, 'rss_mb')))
    print("\ngrowth per 100 steps after step 100 (flat is the goal; RSS also as % of its value at step 100)")
    for preset, g, (s100, spct) in summary:
        cells = '  '.join(f"{k} {v[0]:+.1f}" + (f" ({v[1]:+.1f}%)" if k == 'rss_mb' else '') for k, v in g.items())
        print(f"  {preset:16} {cells}")
        print(f"  {'':16} RSS by the least-squares line through the samples from step 100: {s100:+.1f} MB ({spct:+.1f}%)")


if __name__ == '__main__':
    with load_report('bench_soak'): rc = main()
    sys.exit(rc)

"""Scale-out, simulated: programs/second of the Ray sandbox pool with 1 to 8 actors standing in for nodes, beside
the local pool, side by side in one run.

A private Ray cluster on this machine (no dashboard, loopback only); each actor has one slot, like a node that
gives the pool one core. Two workloads (see nbs/scale/073_scale_out):
  cpu      a short CPU-bound program: bounded here by this machine's cores (on a cluster each actor brings its own)
  latency  a program that mostly waits (a stand-in for a simulator, a browser, a retrieval call)
Prints programs/s per pool size, the speedup over one actor, and the local pool (`SandboxWorker`, a thread per
core) on the same programs. The machine is shared: the load average is printed before and after.

    python bench/bench_scale.py [--actors 1,2,4,8] [--programs 48] [--workload latency,cpu] [--json FILE]
"""
import argparse, json, os, time
from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.sandbox import SandboxWorker, _cores
from pettingllms_nb.scale.cluster import ray_init, ray_shutdown
from pettingllms_nb.scale.simulate import WORKLOADS, throughput_curve, _timed


def local_pool(workload, programs):
    code, expected = WORKLOADS[workload]
    w = SandboxWorker(workers=_cores())
    try:
        run_sync(_timed(w, code, expected, 2 * _cores()))
        dt, rs = run_sync(_timed(w, code, expected, programs))
    finally: w.close()
    return {'workers': _cores(), 'seconds': round(dt, 3), 'per_s': round(programs / dt, 2),
            'ok': sum(r.verdict == 'AC' for r in rs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--actors', default='1,2,4,8')
    ap.add_argument('--programs', type=int, default=48)
    ap.add_argument('--workload', default='latency,cpu')
    ap.add_argument('--json', default=None, help='also write the figures to this JSON file')
    a = ap.parse_args()
    actors = [int(x) for x in a.actors.split(',')]
    print(f"load average before: {os.getloadavg()}  cores: {_cores()}")
    t0 = time.perf_counter()
    ray_init(num_cpus=max(2, _cores()))
    print(f"ray started in {time.perf_counter() - t0:.1f} s")
    out = {}
    try:
        for wl in a.workload.split(','):
            curve = throughput_curve(actors, wl, a.programs)
            loc = local_pool(wl, a.programs)
            out[wl] = {'ray': [p.to_dict() for p in curve], 'local': loc}
            print(f"\n{wl}: {a.programs} programs per point")
            print(f"{'actors':>7} {'programs/s':>11} {'speedup':>8} {'vs local pool':>14}  verdicts")
            for p in curve:
                print(f"{p.actors:>7} {p.per_s:>11.2f} {p.speedup:>8.2f} {p.per_s / loc['per_s']:>14.2f}  {p.verdicts}")
            print(f"  local pool ({loc['workers']} threads): {loc['per_s']:.2f} programs/s ({loc['ok']} AC)")
    finally: ray_shutdown()
    print(f"\nload average after: {os.getloadavg()}")
    if a.json:
        with open(a.json, 'w') as f: json.dump(out, f, indent=2)


if __name__ == '__main__':
    main()

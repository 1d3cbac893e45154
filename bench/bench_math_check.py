"""Throughput of the maths answer checker: answers checked per second on one worker process vs a pool of every core.

1,000 (gold, prediction) pairs cycling through the SANDBOX.md equivalence cases and some AIME-style integers and
fractions (with a fresh number in each, so nothing is a repeat). Workers are started and warmed before timing. Every
job has a hard timeout, so the run cannot hang.

Besides answers per second, it reads the workers' own scheduler statistics (Linux /proc/PID/schedstat): a worker's
capacity is the answers it could check per second if it never waited (answers / its CPU seconds), and the pool's
share of capacity is what it achieved over what its workers could have done (the goal: at least 80%). On a machine
loaded by other work the workers also wait for a core, which that share counts against the pool; so it also prints
how busy the workers were: on a core or runnable and waiting for one, i.e. not idle waiting for the pool to send
work. That is the pool's own part; the load average is printed beside both.

    python bench/bench_math_check.py [--n 1000] [--workers N] [--timeout 5]
"""
import argparse, os, time
from _load import load_report
from pettingllms_nb.envs.math.checker import EQUIVALENCE_CASES, check_many, checker_pool, explain_many

def pairs(n):
    "n (gold, prediction) pairs: the equivalence cases and varied numeric answers."
    base = [(g, p) for g, p, _ in EQUIVALENCE_CASES]
    out = []
    for k in range(n):
        kind = k % 4
        if kind == 0: out.append(base[(k // 4) % len(base)])
        elif kind == 1: out.append((str(k), f"The answer is $\\boxed{{{k:03d}}}$."))
        elif kind == 2: out.append((f"\\frac{{{k}}}{{{k + 1}}}", f"\\boxed{{\\frac{{{2 * k}}}{{{2 * k + 2}}}}}"))
        else: out.append((f"{k}\\sqrt{{2}}", f"\\boxed{{\\sqrt{{{2 * k * k}}}}}"))
    return out

def worker_cpu(workers) -> tuple[float, float]:
    "Seconds the pool's live worker processes have run on a core, and have waited for one (Linux /proc schedstat)."
    run = wait = 0.0
    for w in checker_pool(workers).workers:
        try: r, q, _ = open(f"/proc/{w.proc.pid}/schedstat").read().split()
        except (OSError, ValueError): continue
        run, wait = run + int(r) / 1e9, wait + int(q) / 1e9
    return run, wait

def timed(ps, workers, timeout):
    "Wall seconds, the results, and the workers' CPU seconds for checking `ps` on `workers` processes."
    (r0, q0), t0 = worker_cpu(workers), time.perf_counter()
    res = explain_many(ps, workers=workers, timeout=timeout)
    dt, (r1, q1) = time.perf_counter() - t0, worker_cpu(workers)
    return dt, res, (r1 - r0, q1 - q0)

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=int, default=1000)
    ap.add_argument('--workers', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--timeout', type=float, default=5.0)
    a = ap.parse_args()
    ps = pairs(a.n)
    with load_report('bench_math_check'):
        for w in sorted({1, a.workers}): check_many(ps[:4 * w], workers=w)   # start and warm the workers
        t1, r1, c1 = timed(ps, 1, a.timeout)
        tn, rn, cn = timed(ps, a.workers, a.timeout)
        assert r1 == rn, "the pool and the single worker disagree"
        credited, timeouts = sum(ok for ok, _ in rn), sum(why == 'timeout' for _, why in rn)
        print(f"answers: {a.n} ({credited} credited, {timeouts} timed out); cores: {os.cpu_count()}")
        for w, t, (run, wait) in ((1, t1, c1), (a.workers, tn, cn)):
            cap = w * a.n / run if run else float('nan')
            print(f"{w} worker{'s' if w > 1 else ' '}{' ' * (4 - len(str(w)))}: {a.n / t:8.1f} answers/s  ({t:.2f} s); "
                  f"capacity {cap:.1f} answers/s ({run:.2f} CPU s): share of capacity {a.n / t / cap:.0%}; "
                  f"busy (on a core or waiting for one) {(run + wait) / (w * t):.0%} of the time")
        print(f"pool / single : {t1 / tn:8.2f}x")

if __name__ == '__main__':
    main()

"""Throughput of the maths answer checker: answers checked per second on one worker process vs a pool of every core.

1,000 (gold, prediction) pairs cycling through the SANDBOX.md equivalence cases and some AIME-style integers and
fractions (with a fresh number in each, so nothing is a repeat). Workers are started and warmed before timing. Every
job has a hard timeout, so the run cannot hang.

    python bench/bench_math_check.py [--n 1000] [--workers N] [--timeout 5]
"""
import argparse, os, time
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

def timed(ps, workers, timeout):
    t0 = time.perf_counter()
    res = explain_many(ps, workers=workers, timeout=timeout)
    return time.perf_counter() - t0, res

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=int, default=1000)
    ap.add_argument('--workers', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--timeout', type=float, default=5.0)
    a = ap.parse_args()
    ps = pairs(a.n)
    for w in sorted({1, a.workers}): check_many(ps[:4 * w], workers=w)   # start and warm the workers
    t1, r1 = timed(ps, 1, a.timeout)
    tn, rn = timed(ps, a.workers, a.timeout)
    assert r1 == rn, "the pool and the single worker disagree"
    credited, timeouts = sum(ok for ok, _ in rn), sum(why == 'timeout' for _, why in rn)
    print(f"answers: {a.n} ({credited} credited, {timeouts} timed out); cores: {os.cpu_count()}")
    print(f"1 worker      : {a.n / t1:8.1f} answers/s  ({t1:.2f} s)")
    print(f"{a.workers} workers{' ' * (6 - len(str(a.workers)))}: {a.n / tn:8.1f} answers/s  ({tn:.2f} s)")
    print(f"pool / single : {t1 / tn:8.2f}x")

if __name__ == '__main__':
    main()

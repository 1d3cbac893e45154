"""Throughput of the sandbox: programs/second with full isolation vs a bare `subprocess.run([sys.executable, '-c', code])`.

All run the same small programs through a thread pool of the same size, side by side in one process, alternating
rounds so that load from elsewhere on the machine hits them alike. Prints programs/second for each (best round) and
the ratios. A third line, `bare -S`, starts the interpreter the way the sandbox does (`-s -S`, no site-packages): the
difference between it and the sandbox is the price of the isolation itself (bubblewrap, the launcher, the cleanup).

    python bench/bench_sandbox.py [--n 48] [--rounds 3] [--workers N] [--isolation bwrap|rlimits+uid|rlimits-only]
"""
import argparse, statistics, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pettingllms_nb.sandbox import Sandbox, _cores, isolation_level, outputs_match

PROGRAMS = [
    ("a, b = map(int, input().split())\nprint(a + b)", "{i} {j}\n", lambda i, j: str(i + j)),
    ("n = int(input())\nprint(sum(k * k for k in range(n)))", "{i}000\n", lambda i, j: str(sum(k * k for k in range(i * 1000)))),
    ("s = input()\nprint(s[::-1].upper())", "ab{i}cd{j}\n", lambda i, j: f"ab{i}cd{j}"[::-1].upper()),
    ("import math\nprint(math.factorial({i}) % 1000003)", "", lambda i, j: str(__import__('math').factorial(i) % 1000003)),
]

def jobs(n):
    "n (code, stdin, expected) triples cycling through PROGRAMS."
    out = []
    for k in range(n):
        code, stdin, want = PROGRAMS[k % len(PROGRAMS)]
        i, j = k + 3, 2 * k + 1
        out.append((code.format(i=i), stdin.format(i=i, j=j), want(i, j)))
    return out

def bare(job, flags=()):
    code, stdin, want = job
    p = subprocess.run([sys.executable, *flags, '-c', code], input=stdin.encode(), capture_output=True)
    return p.returncode == 0 and outputs_match(p.stdout, want)

def bare_S(job): return bare(job, ('-s', '-S'))

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=int, default=48, help="programs per round")
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--workers', type=int, default=_cores())
    ap.add_argument('--isolation', default=None, help="force an isolation level (default: the best available)")
    a = ap.parse_args()
    level = a.isolation or isolation_level()
    js = jobs(a.n)
    rates = {'bare': [], 'bare -S': [], 'sandbox': []}
    with Sandbox(workers=a.workers, isolation=level, time_limit=2.0) as sb, ThreadPoolExecutor(a.workers) as pool:
        sb.run_many(js[:a.workers]); list(pool.map(bare, js[:a.workers]))   # warm up both
        for _ in range(a.rounds):
            for name, fn in (('bare', bare), ('bare -S', bare_S)):
                t = time.perf_counter(); ok = list(pool.map(fn, js)); dt = time.perf_counter() - t
                assert all(ok), "a bare run failed: the benchmark programs are wrong"
                rates[name].append(len(js) / dt)
            t = time.perf_counter(); rs = sb.run_many(js); dt = time.perf_counter() - t
            assert all(r.verdict == 'AC' for r in rs), [str(r) for r in rs if r.verdict != 'AC'][:3]
            rates['sandbox'].append(len(js) / dt)
    best = {k: max(v) for k, v in rates.items()}
    print(f"machine: {_cores()} cores; pool: {a.workers} workers; {a.n} programs x {a.rounds} rounds; isolation: {level}")
    for k, v in rates.items():
        print(f"{k:>8}: {best[k]:6.1f} programs/s (best round; median {statistics.median(v):.1f})")
    print(f"   ratio sandbox / bare:    {best['sandbox'] / best['bare']:.2f}")
    print(f"   ratio sandbox / bare -S: {best['sandbox'] / best['bare -S']:.2f}  (the cost of isolation alone)")

if __name__ == '__main__': main()

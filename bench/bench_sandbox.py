"""Throughput of the sandbox: programs/second with full isolation vs bare interpreters, side by side in one run.

Five ways to run the same small programs (each compared with its expected output), through thread pools of the
same size, in alternating rounds so that load from elsewhere on the machine hits them alike:

- `bare`: `subprocess.run([sys.executable, '-c', code])`, no isolation at all;
- `bare -S`: the interpreter started the way the sandbox starts it (`-s -S`, no site-packages): the yardstick
  of issue 16 ("a sandbox as fast as the interpreter can start");
- `sandbox`: `run_code` with the default launch (under bubblewrap as root: a fork server per slot that forks a fresh,
  limited child per program, in its own mount and IPC namespaces, under its slot uid, killed and reaped after);
- `fresh`: `run_code(launch='fresh')`, one bubblewrap and one interpreter per program (the old path).

Prints programs/second for each (best round, and the median), the ratios to `bare -S`, and the machine's load
average before and after (the machine is shared: repeat a measurement before you trust it).

    python bench/bench_sandbox.py [--n 48] [--rounds 3] [--workers N] [--isolation bwrap|rlimits+uid|rlimits-only]
"""
import argparse, os, statistics, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pettingllms_nb.sandbox import Sandbox, _cores, isolation_level, outputs_match
from pettingllms_nb.sandbox.runner import _default_launch, _default_python

PROGRAMS = [
    ("a, b = map(int, input().split())\nprint(a + b)", "{i} {j}\n", lambda i, j: str(i + j)),
    ("n = int(input())\nprint(sum(k * k for k in range(n)))", "{i}000\n",
     lambda i, j: str(sum(k * k for k in range(i * 1000)))),
    ("s = input()\nprint(s[::-1].upper())", "ab{i}cd{j}\n", lambda i, j: f"ab{i}cd{j}"[::-1].upper()),
    ("import math\nprint(math.factorial({i}) % 1000003)", "",
     lambda i, j: str(__import__('math').factorial(i) % 1000003)),
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

def timed(fn):
    "`(seconds, result)` of `fn()`."
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out

def load() -> str: return ' '.join(f"{x:.2f}" for x in os.getloadavg())

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=int, default=48, help="programs per round")
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--workers', type=int, default=_cores())
    ap.add_argument('--isolation', default=None, help="force an isolation level (default: the best available)")
    a = ap.parse_args()
    level = a.isolation or isolation_level()
    launch = _default_launch(level, _default_python())
    js = jobs(a.n)
    before = load()
    sandboxes = {'sandbox': Sandbox(workers=a.workers, isolation=level, time_limit=2.0)}
    if launch == 'server':
        sandboxes['fresh'] = Sandbox(workers=a.workers, isolation=level, time_limit=2.0, launch='fresh')
    rates = {k: [] for k in ('bare', 'bare -S', *sandboxes)}
    with ThreadPoolExecutor(a.workers) as pool:
        list(pool.map(bare, js[:a.workers]))                  # warm up everything (servers start on first use)
        for sb in sandboxes.values(): sb.run_many(js[:a.workers])
        for _ in range(a.rounds):
            for name, fn in (('bare', bare), ('bare -S', bare_S)):
                dt, ok = timed(lambda: list(pool.map(fn, js)))
                assert all(ok), "a bare run failed: the benchmark programs are wrong"
                rates[name].append(len(js) / dt)
            for name, sb in sandboxes.items():
                dt, rs = timed(lambda: sb.run_many(js))
                assert all(r.verdict == 'AC' for r in rs), [str(r) for r in rs if r.verdict != 'AC'][:3]
                rates[name].append(len(js) / dt)
    for sb in sandboxes.values(): sb.close()
    best = {k: max(v) for k, v in rates.items()}
    print(f"machine: {_cores()} cores; pool: {a.workers} workers; {a.n} programs x {a.rounds} rounds; "
          f"isolation: {level}; default launch: {launch}; load average before: {before}, after: {load()}")
    for k, v in rates.items():
        print(f"{k:>8}: {best[k]:6.1f} programs/s (best round; median {statistics.median(v):.1f})")
    print(f"   ratio sandbox / bare -S: {best['sandbox'] / best['bare -S']:.2f}  (issue 16 asks for >= 0.7)")
    if 'fresh' in best:
        print(f"   ratio fresh   / bare -S: {best['fresh'] / best['bare -S']:.2f}  (a bubblewrap and interpreter a run)")
        print(f"   ratio sandbox / fresh:   {best['sandbox'] / best['fresh']:.2f}")
    print(f"   ratio sandbox / bare:    {best['sandbox'] / best['bare']:.2f}")

if __name__ == '__main__': main()

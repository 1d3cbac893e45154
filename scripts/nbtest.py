"""Run notebooks the way a reader does: each in its own fresh process (one kernel per notebook), several at a time.

`nbdev-test` runs many notebooks inside one worker process, so what one notebook registers (its own copy of an
environment class, say) is still in the global registry when the next one runs there; which notebooks share a
process depends on scheduling. Here every notebook gets a fresh `nbdev-test` of its own.

Usage: python scripts/nbtest.py [--flags "slow"] [--workers N] PATH [PATH ...]   (folders are searched recursively)
"""
import argparse, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from execute_notebooks import notebooks   # the same notebooks for both runners (and a missing path is an error)

def run(nb, flags):
    t = time.perf_counter()
    r = subprocess.run(['nbdev-test', str(nb), '--flags', flags], capture_output=True, text=True)
    return nb, r.returncode, time.perf_counter() - t, (r.stdout + r.stderr).strip()

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('paths', nargs='+'); ap.add_argument('--flags', default='')
    ap.add_argument('--workers', type=int, default=2)
    a = ap.parse_args(argv)
    nbs = notebooks(a.paths)
    failed = []
    with ThreadPoolExecutor(a.workers) as ex:
        for nb, rc, dt, out in ex.map(lambda nb: run(nb, a.flags), nbs):
            print(f"[nbtest] {'ok  ' if rc == 0 else 'FAIL'} {dt:6.1f}s {nb}", file=sys.stderr, flush=True)
            if rc: failed.append(nb); print(out, file=sys.stderr, flush=True)
    print(f"[nbtest] {len(nbs) - len(failed)} of {len(nbs)} notebooks passed", file=sys.stderr)
    for nb in failed: print(f"[nbtest] failed: {nb}", file=sys.stderr)
    return 1 if failed else 0

if __name__ == '__main__': sys.exit(main())

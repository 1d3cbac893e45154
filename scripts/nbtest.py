"""Run notebooks the way a reader does: each in its own fresh process (one kernel per notebook), several at a time.

`nbdev-test` runs many notebooks inside one worker process, so what one notebook registers (its own copy of an
environment class, say) is still in the global registry when the next one runs there; which notebooks share a
process depends on scheduling. Here every notebook gets a fresh `nbdev-test` of its own.

Usage: python scripts/nbtest.py [--flags "slow"] [--slow-slice k/N] [--workers N] PATH [PATH ...]
(folders are searched recursively; with `--slow-slice`, the notebooks of that slice also run their slow cells)
"""
import argparse, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from execute_notebooks import notebooks   # the same notebooks for both runners (and a missing path is an error)
from slow_slice import in_slice, parse

def run(nb, flags):
    t = time.perf_counter()
    r = subprocess.run(['nbdev-test', str(nb), '--flags', flags], capture_output=True, text=True)
    return nb, r.returncode, time.perf_counter() - t, (r.stdout + r.stderr).strip()

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('paths', nargs='+'); ap.add_argument('--flags', default='')
    ap.add_argument('--workers', type=int, default=2)
    ap.add_argument('--slow-slice', default='', help="k/N: these notebooks' slow cells run too")
    a = ap.parse_args(argv)
    nbs = notebooks(a.paths)
    def flags(nb):
        if parse(a.slow_slice) is None or 'slow' in a.flags.split() or not in_slice(Path(nb).as_posix(), a.slow_slice):
            return a.flags
        return (a.flags + ' slow').strip()
    failed = []
    with ThreadPoolExecutor(a.workers) as ex:
        for nb, rc, dt, out in ex.map(lambda nb: run(nb, flags(nb)), nbs):
            print(f"[nbtest] {'ok  ' if rc == 0 else 'FAIL'} {dt:6.1f}s {nb}", file=sys.stderr, flush=True)
            if rc: failed.append(nb); print(out, file=sys.stderr, flush=True)
    print(f"[nbtest] {len(nbs) - len(failed)} of {len(nbs)} notebooks passed", file=sys.stderr)
    for nb in failed: print(f"[nbtest] failed: {nb}", file=sys.stderr)
    return 1 if failed else 0

if __name__ == '__main__': sys.exit(main())

"""Which slow tests and notebooks a smoke run includes: a deterministic slice of them, chosen by the commit.

CI runs the smoke set (`SMOKE=1`) plus one slice of the slow set: the slow tests and notebooks whose name hashes to
`k` modulo `N`, with `k` taken from the commit. Over `N` landings each slow test runs at least once in expectation,
and a given commit always runs the same slice (a rerun is a rerun).

    python scripts/slow_slice.py --commit 4     # prints the slice of HEAD, e.g. `2/4` (nothing outside a git checkout)
"""
import argparse, hashlib, subprocess, sys
from pathlib import Path


def parse(spec:str|None):
    "(k, N) from 'k/N', or None for '' / None / 'none'."
    if not spec or spec == 'none': return None
    try:
        k, n = (int(x) for x in spec.split('/'))
    except ValueError: raise SystemExit(f"slow slice {spec!r}: expected k/N with integers 0 <= k < N")
    if not 0 <= k < n: raise SystemExit(f"slow slice {spec!r}: expected 0 <= k < N")
    return k, n


def in_slice(name:str, spec:str|None) -> bool:
    "Is the slow test or notebook `name` in slice `spec`? (Always True without a slice.)"
    s = parse(spec)
    if s is None: return True
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % s[1] == s[0]


def commit_slice(n:int, root=None) -> str:
    "'k/n' for the checkout's HEAD, '' when it is not a git checkout."
    try:
        head = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=root or Path(__file__).parents[1], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError): return ''
    return f"{int(head, 16) % n}/{n}"


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--commit', type=int, metavar='N', required=True, help='slices in all')
    print(commit_slice(ap.parse_args().commit))

"""Issue 26: CI runs the smoke set plus a slice of the slow set chosen by the commit; every slow test is in exactly one
slice, so over the slices every one runs."""
import os, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'scripts'))
from slow_slice import commit_slice, in_slice, parse


def test_every_name_is_in_exactly_one_slice():
    names = [f"tests/test_x.py::test_{i}" for i in range(200)]
    counts = [sum(in_slice(n, f"{k}/4") for k in range(4)) for n in names]
    assert counts == [1] * 200
    assert all(sum(in_slice(n, f"{k}/4") for n in names) > 20 for k in range(4))   # no slice is empty
    assert all(in_slice(n, None) and in_slice(n, 'none') for n in names)


def test_a_bad_slice_is_refused_and_a_commit_names_one():
    for bad in ('4/4', 'a/4', '1'):
        with pytest.raises(SystemExit, match='slow slice'): parse(bad)
    k, n = parse(commit_slice(4, ROOT))
    assert n == 4 and 0 <= k < 4


def collected(spec:str) -> set:
    out = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--collect-only',
                          'tests/test_trainer.py'], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, 'PLLM_SLOW_SLICE': spec}).stdout
    return {l for l in out.splitlines() if '::' in l}


def test_the_slices_of_the_slow_tests_cover_them_once():
    every = collected('')
    slow = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--collect-only', '-m', 'slow',
                           'tests/test_trainer.py'], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, 'PLLM_SLOW_SLICE': ''}).stdout   # CI runs this very test under a slice
    slow = {l for l in slow.splitlines() if '::' in l}
    assert len(slow) >= 2
    kept = [collected(f"{k}/4") for k in range(4)]
    assert all(every - slow <= s for s in kept)                        # the smoke set always runs
    assert sorted(len(s & slow) for s in kept) and sum(len(s & slow) for s in kept) == len(slow)
    assert set().union(*kept) == every

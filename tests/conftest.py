"""A smoke run with `PLLM_SLOW_SLICE=k/N` keeps the slow tests of that slice (see scripts/slow_slice.py) and leaves out
the others; without it, `-m "not slow"` or the full set decide as usual."""
import os, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'scripts'))
from slow_slice import in_slice, parse   # noqa: E402


def pytest_collection_modifyitems(config, items):
    spec = os.environ.get('PLLM_SLOW_SLICE')
    if parse(spec) is None: return
    keep, drop = [], []
    for it in items:
        (drop if it.get_closest_marker('slow') and not in_slice(it.nodeid, spec) else keep).append(it)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep

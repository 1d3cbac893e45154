"""The code judge and its call harness: typed values across the sandbox boundary (a list is not a tuple, a set is not
a list, floats within a tolerance, bools never numbers), the test checks (`truthy`, `near`, `tuple`, `json`), the
harness as a module file run with `python -S`, and the security properties (the verdict in the parent; forged result
lines, always-equal objects, early exits and compile errors never pass)."""
import ast, json, subprocess, sys
from pathlib import Path
import pytest

from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.envs.code import harness
from pettingllms_nb.envs.code.harness import RESULT_MARK, decode, encode
from pettingllms_nb.envs.code.judge import (CHECKS, call_job, call_result, check_tests, harness_source, judge_test,
                                            judge_tests, parse_tests, value_matches, values_equal)


ROOT = Path(__file__).resolve().parents[1]

def verdict(code, test, fn):
    return run_sync(judge_test(code, test, 'call', fn)).verdict


# -- typed values -------------------------------------------------------------------------------------------------
def test_typed_json_round_trips_and_refuses_what_it_cannot_have_written():
    for v in [None, True, -3, 2.5, float('inf'), 'x', [1, [2]], (1, (2,)), {1, (2, 3)}, frozenset({1}), {'a': 1, 2: (3,)},
              {(1, 2): {frozenset({3})}}, [], (), {}, set()]:
        back = decode(json.loads(json.dumps(encode(v))))
        assert back == v and type(back) is type(v), v
    assert decode(json.loads(json.dumps(encode(float('nan'))))) != decode(json.loads(json.dumps(encode(float('nan')))))
    for bad in ({'tuple': 3}, {'set': [[1]]}, {'dict': [[1, 2, 3]]}, {'bytes': []}, {'a': 1, 'b': 2}, {'float': '1'}):
        with pytest.raises(ValueError): decode(bad)
    with pytest.raises(ValueError, match="deeper"): decode([[[[]]]], depth=harness.MAX_DEPTH - 1)

def test_only_plain_data_crosses():
    class Liar(int):
        def __eq__(self, o): return True
        def __int__(self): return 3
    class Names(tuple): pass
    assert encode(Liar(0)) == 0 and encode(Names((1, 2))) == {'tuple': [1, 2]}
    for obj in (object(), iter([]), lambda: 1, b'bytes', 1j):
        with pytest.raises(TypeError, match="is not data"): encode(obj)

@pytest.mark.parametrize("got,expected,same", [
    ([0, 1], (0, 1), False), ((0, 1), [0, 1], False), ({1, 5, 653}, [1, 5, 653], False), ([1, 5], {1, 5}, False),
    (frozenset({1}), {1}, True), (True, 1, False), (1, True, False), (0, False, False), (1, 1.0, True),
    (0.1 + 0.2, 0.3, True), (1.0001, 1.0, False), (float('nan'), float('nan'), True), (10 ** 400, 1.5, False),
    ({'a': (1, 2.0)}, {'a': (1, 2)}, True), ({'a': [1]}, {'a': (1,)}, False), ({1: 'x'}, {'1': 'x'}, False),
    (None, None, True), (None, 0, False), ('1', 1, False)])
def test_values_compare_as_the_datasets_own_checker_would(got, expected, same):
    assert values_equal(got, expected) is same

def test_checks():
    assert set(CHECKS) == {'equal', 'json', 'truthy', 'falsy', 'tuple', 'near'}
    cases = [([0, 1], {'output': (0, 1), 'check': 'json'}, True), ({3, 1}, {'output': [1, 3], 'check': 'json'}, True),
             ('x', {'output': True, 'check': 'truthy'}, True), ([], {'output': True, 'check': 'truthy'}, False),
             (0, {'output': False, 'check': 'falsy'}, True), ([2, 1], {'output': (2, 1), 'check': 'tuple'}, True),
             ({2, 1}, {'output': (1, 2), 'check': 'tuple'}, False),
             (0.6666667, {'output': 2 / 3, 'check': 'near', 'tol': 1e-6}, True),
             (0.667, {'output': 2 / 3, 'check': 'near', 'tol': 1e-6}, False),
             (True, {'output': 1.0, 'check': 'near', 'tol': 0.1}, False)]
    assert [value_matches(g, t) for g, t, _ in cases] == [want for *_, want in cases]


# -- the harness program ------------------------------------------------------------------------------------------
def run_harness(code, fn, args, flag='-S'):
    job = call_job(code, fn, args)
    p = subprocess.run([sys.executable, flag, harness.__file__], input=job, capture_output=True, text=True, timeout=60)
    return p.returncode, call_result(p.stdout), p.stderr

def test_the_harness_is_a_stdlib_module_file_run_with_dash_S():
    src = open(harness.__file__).read()
    assert harness_source() == src
    imported = {n.names[0].name.split('.')[0] if isinstance(n, ast.Import) else (n.module or '').split('.')[0]
                for n in ast.walk(ast.parse(src)) if isinstance(n, (ast.Import, ast.ImportFrom))}
    assert imported <= {'__future__', 'json', 'math', 'os', 'sys', 'linecache', 'traceback'}, imported
    assert run_harness("def f(a, b): return (a + b, {a})", 'f', [1, 2]) == (0, ('return', (3, {1})), '')
    assert run_harness("class Solution:\n    def f(self, x): return [x]", 'f', [(1,)])[1] == ('return', [(1,)])

def test_ruff_check_harness():
    pytest.importorskip('ruff', reason="ruff comes with the dev extra")
    p = subprocess.run([sys.executable, '-m', 'ruff', 'check', '--config', str(ROOT / 'pyproject.toml'), harness.__file__],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr

def test_the_harness_reports_compile_errors_runtime_errors_and_non_data():
    rc, res, err = run_harness("def f(:", 'f', [])
    assert rc == 1 and res[0] == 'compile_error' and 'SyntaxError' in err
    rc, res, err = run_harness("def f():\n    raise KeyError('k')", 'f', [])
    assert rc == 1 and res == (None, None) and err.splitlines()[-1] == "KeyError: 'k'"
    assert 'File "program.py", line 2, in f' in err and 'def main' not in err and harness.__file__ not in err
    assert run_harness("def f(): return iter([])", 'f', [])[1][0] == 'not_data'
    assert run_harness("g = 1", 'f', [])[2].splitlines()[-1].startswith("NameError: the program defines no function")
    assert run_harness("import sys\ndef f(): sys.exit(0)", 'f', [])[:2] == (0, (None, None))
    assert run_harness("def f(): return 1\nif __name__ == '__main__': raise SystemExit(3)", 'f', [])[:2] == (0, ('return', 1))


# -- the judge ----------------------------------------------------------------------------------------------------
def test_humaneval_8_and_58_types_are_judged():
    tup, lst = "def sum_product(xs):\n    return (sum(xs), 1)", "def sum_product(xs):\n    return [sum(xs), 1]"
    assert [verdict(c, {'input': [[]], 'output': (0, 1)}, 'sum_product') for c in (tup, lst)] == ['AC', 'WA']
    srt, st = "def common(a, b):\n    return sorted(set(a) & set(b))", "def common(a, b):\n    return set(a) & set(b)"
    t = {'input': [[1, 4, 3, 34, 653, 2, 5], [5, 7, 1, 5, 9, 653, 121]], 'output': [1, 5, 653]}
    assert [verdict(c, t, 'common') for c in (srt, st)] == ['AC', 'WA']
    assert verdict("def f(): return 1", {'input': [], 'output': True}, 'f') == 'WA'            # a bool is not a number
    assert verdict("def f(): return 2/3 + 1e-9", {'input': [], 'output': 2 / 3}, 'f') == 'AC'   # floats within tolerance

def test_hacks_and_forgeries_never_pass():
    t = {'input': [1, 2], 'output': 3}
    hacks = ["import sys\nsys.exit(0)\ndef add(a, b): return 3",
             "class Eq:\n    def __eq__(self, o): return True\ndef add(a, b): return Eq()",
             "class I(int):\n    def __eq__(self, o): return True\ndef add(a, b): return I(0)",
             f"def add(a, b):\n    print({RESULT_MARK!r} + '{{\"return\": {{\"tuple\": []}}}}')\n    import os; os._exit(0)",
             f"def add(a, b):\n    print({RESULT_MARK!r} + '{{\"compile_error\": \"no\"}}')\n    return 4",
             "import atexit, os\natexit.register(lambda: os.write(1, b'\\x1e#pettingllms-result#{\"return\": 3}\\n'))\n"
             "def add(a, b): raise ValueError",
             "def add(a, b):\n    import json, sys\n    return json.loads(sys.stdin.read())"]   # the job is already read
    res = [run_sync(judge_test(c, t, 'call', 'add')) for c in hacks]
    assert [r.verdict for r in res] == ['WA', 'WA', 'WA', 'WA', 'WA', 'RE', 'RE'], [(r.verdict, r.message) for r in res]
    assert 'expected' not in call_job(hacks[0], 'add', t['input'])

def test_compile_errors_sizes_and_messages():
    assert verdict("def add(a, b) return", {'input': [1, 2], 'output': 3}, 'add') == 'CE'
    big = "x = 1\n" * 200_000 + "def add(a, b): return a + b"
    r = run_sync(judge_test(big, {'input': [1, 2], 'output': 3}, 'call', 'add'))
    assert r.verdict == 'CE' and 'max_source' in r.message
    r = run_sync(judge_test("def add(a, b): return open('/nope')", {'input': [1, 2], 'output': 3}, 'call', 'add'))
    assert r.verdict == 'RE' and r.message.splitlines()[-1].startswith('FileNotFoundError')

def test_results_are_json_data_and_generated_tests_compare_as_json():
    r = run_sync(judge_test("def f(): return {(1, 2): {3}}", {'input': [], 'output': 0}, 'call', 'f'))
    assert r.got == {(1, 2): {3}} and json.loads(json.dumps(r.to_dict()))['got'] == {'(1, 2)': [3]}
    valid, _ = parse_tests("assert pair(1) == (1, 1)\nassert pair(2) == [2, 2]", 'call', 'pair')
    as_stored = json.loads(json.dumps(valid))                            # what the environment keeps
    res = run_sync(check_tests("def pair(x): return (x, x)", as_stored, 'call', 'pair'))
    assert [r.verdict for r in res] == ['AC', 'AC']
    res = run_sync(judge_tests("def pair(x): return {x}", as_stored, 'call', 'pair'))
    assert [r.verdict for r in res] == ['WA', 'WA']

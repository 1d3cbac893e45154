"""Data preparation (pettingllms_nb.data): every source declared by an environment is listed offline with the shipped
ones present; `data prepare` on small local files in each source's real columns writes the data directory in the
layout its loader reads; corrupt files, interrupted earlier runs (a killed process among them) and missing sources are
clear; the hub path through a stand-in `datasets.load_dataset` (a connection error, and a small in-memory dataset);
the URL path through a stand-in `urlopen`; configs and `make_env` name a source; a preset that names one trains."""
import base64, gzip, io, json, os, pickle, signal, subprocess, sys, zlib
from pathlib import Path
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from pettingllms_nb.core.config import ConfigError, env_kwargs, load_config
from pettingllms_nb.core.registry import Registry, RegistryError, make_env, registry
from pettingllms_nb.data import (DataError, DataMissing, DataSource, get_source, list_sources, prepare, register_source,
                                 source_kwargs)
from pettingllms_nb.data.sources import manifest_path, staging_path
from datafiles import write_jsonl, write_parquet

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def data_root(tmp_path, monkeypatch):
    "Each test prepares into a data directory of its own ($PLLM_DATA)."
    root = tmp_path / 'data'
    monkeypatch.setenv('PLLM_DATA', str(root))
    return root


# -- one small file per source, in the source's own published columns --------------------------------------------------
DAPO_PROMPT = ("Solve the following math problem step by step. The last line of your response should be of the form "
               "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n{}\n\n"
               "Remember to put your answer on its own line after \"Answer:\".")
HOTPOT = {'_id': '5a8b57f2', 'question': 'Were Ann Vey and Bo Lund of the same nationality?', 'answer': 'yes',
          'type': 'comparison', 'level': 'hard', 'supporting_facts': [['Ann Vey', 0], ['Bo Lund', 0]],
          'context': [['Ann Vey', ['Ann Vey is a Kelmish painter.']], ['Bo Lund', ['Bo Lund is a Kelmish poet.']]]}

def _lcb(tests): return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode('ascii')

ROWS = {   # source: (split, a row its loader reads, the id that row gets)
    'aime24': ('test', {'ID': '2024-I-1', 'Problem': 'Every morning Aya walks 9 km.', 'Solution': '...', 'Answer': 204},
               '2024-I-1'),
    'aime25': ('test', {'id': '0', 'problem': 'Find the sum of all integer bases b > 9.', 'answer': '70'}, '0'),
    'olympiadbench': ('test', {'id': 1606, 'question': 'Find all pairs.', 'final_answer': ['$(1,2)$'],
                               'is_multiple_answer': False, 'unit': None, 'answer_type': 'Tuple', 'subject': 'Math',
                               'language': 'English'}, '1606'),
    'polaris': ('train', {'problem': 'What is 1 + 1?', 'answer': '2', 'difficulty': '8/8'}, '0'),
    'dapo': ('train', {'data_source': 'math_dapo', 'ability': 'MATH',
                       'prompt': [{'content': DAPO_PROMPT.format('What is 2 + 3?'), 'role': 'user'}],
                       'reward_model': {'ground_truth': '5', 'style': 'rule-lean'},
                       'extra_info': {'index': '9a9b6eb4'}}, '9a9b6eb4'),
    'apps': ('test', {'problem_id': 7, 'question': 'Print the sum.\n\nInput\n3\n1 2 3\n\nOutput\n6\n',
                      'difficulty': 'introductory', 'url': '', 'starter_code': '',
                      'solutions': json.dumps(['input()\nprint(sum(map(int, input().split())))']),
                      'input_output': json.dumps({'inputs': ['3\n1 2 3\n', '1\n5\n'], 'outputs': ['6\n', '5\n']})},
             'test-7'),
    'codecontests': ('train', {'name': '1234_A. Sum', 'description': 'Print a+b.',
                               'public_tests': {'input': ['1 2\n'], 'output': ['3\n']},
                               'private_tests': {'input': ['5 5\n'], 'output': ['10\n']},
                               'generated_tests': {'input': [], 'output': []}, 'source': 2, 'difficulty': 7,
                               'solutions': {'language': [3], 'solution': ['print(sum(map(int, input().split())))']},
                               'incorrect_solutions': {'language': [], 'solution': []}, 'cf_rating': 800},
                     '1234_A. Sum'),
    'livecodebench': ('test', {'question_title': 'gap', 'question_content': 'Given nums, return the largest gap.',
                               'platform': 'leetcode', 'question_id': '3000', 'contest_id': 'w1',
                               'contest_date': '2024-08-01T00:00:00', 'difficulty': 'easy',
                               'starter_code': 'class Solution:\n    def maxGap(self, nums: List[int]) -> int:\n',
                               'public_test_cases': json.dumps([{'input': '[1, 5, 2]', 'output': '3',
                                                                 'testtype': 'functional'}]),
                               'private_test_cases': _lcb([{'input': '[1, 1]', 'output': '0',
                                                            'testtype': 'functional'}]),
                               'metadata': json.dumps({'func_name': 'maxGap'})}, '3000'),
    'humaneval': ('test', {'task_id': 'HumanEval/0', 'entry_point': 'add', 'canonical_solution': '    return a + b\n',
                           'prompt': ('def add(a: int, b: int) -> int:\n'
                                      '    """Add.\n    >>> add(2, 3)\n    5\n    """\n'),
                           'test': 'def check(candidate):\n    assert candidate(2, 3) == 5\n'}, 'HumanEval/0'),
    'nq': ('dev', {'id': 'dev_0', 'question': 'who got the first nobel prize in physics', 'golden_answers': ['Röntgen'],
                   'metadata': {}}, 'dev_0'),
    'hotpotqa': ('dev', {'id': 'dev_0', 'question': HOTPOT['question'], 'golden_answers': ['yes'],
                         'metadata': {'type': 'comparison', 'supporting_facts': {'title': ['Ann Vey'], 'sent_id': [0]},
                                      'context': {'title': ['Ann Vey'],
                                                  'sentences': [['Ann Vey is a Kelmish painter.']]}}}, 'dev_0'),
    '2wikimultihopqa': ('dev', {'id': 'dev_1', 'question': 'Who was born first, Ann or Bo?', 'golden_answers': ['Ann'],
                                'metadata': {'type': 'comparison', 'supporting_facts': [['Ann', 0]],
                                             'context': [['Ann', ['Ann was born in 1901.']]]}}, 'dev_1'),
    'musique': ('dev', {'id': '2hop__1_2', 'question': 'Where was the founder of X born?', 'golden_answers': ['Trelsk'],
                        'metadata': {'paragraphs': [{'idx': 0, 'title': 'X', 'paragraph_text': 'X was founded by Ann.',
                                                     'is_supporting': True}]}}, '2hop__1_2'),
    'bamboogle': ('test', {'id': 'test_0', 'question': 'Who was president when Citibank was founded?',
                           'golden_answers': ['james madison']}, 'test_0'),
    'hotpotqa_json': ('dev', HOTPOT, '5a8b57f2'),
    'hotpotqa_hf': ('dev', {'id': 'h1', 'question': HOTPOT['question'], 'answer': 'yes', 'type': 'comparison',
                            'level': 'hard',
                            'supporting_facts': {'title': ['Ann Vey'], 'sent_id': [0]},
                            'context': {'title': ['Ann Vey'], 'sentences': [['Ann Vey is a Kelmish painter.']]}}, 'h1'),
    'searchr1': ('test', {'data_source': 'nq', 'ability': 'fact-reasoning',
                          'prompt': [{'role': 'user', 'content': 'Answer it. Question: who won?\n'}],
                          'reward_model': {'style': 'rule', 'ground_truth': {'target': ['Ann']}},
                          'extra_info': {'split': 'test', 'index': 0}}, 'nq-test-0'),
}
BROKEN = {'aime24': {'ID': 'x', 'Problem': 'What?'},
          'apps': {'problem_id': 9, 'question': 'No tests.', 'solutions': '', 'input_output': '', 'difficulty': '',
                   'url': '', 'starter_code': ''}}


def read_back(name, root):
    "The rows of the prepared source `name`, read by its environment's own loader from where `env.source` points."
    src = get_source(name)
    kw = source_kwargs(src.env, {'source': name, 'split': ROWS[name][0], 'data_dir': root})
    if src.env == 'math_env':
        from pettingllms_nb.envs.math.data import load_problems
        return [r['id'] for r in load_problems(kw['dataset'], path=kw['path'])]
    if src.env == 'code_env':
        from pettingllms_nb.envs.code.data import load_code_problems
        return [r['id'] for r in load_code_problems(kw['dataset'], path=kw['path'], split=kw['split'])]
    from pettingllms_nb.envs.search.data import load_questions
    return [r['qid'] for r in load_questions(kw['dataset'], path=kw['path'], split=kw['split'])]


def preparable():
    return sorted(n for n in registry.names('source') if get_source(n).preparable and get_source(n).layout != 'dir')


def test_every_preparable_file_source_has_a_sample_here():
    assert set(preparable()) <= set(ROWS), set(preparable()) - set(ROWS)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_prepare_from_a_local_file_in_the_real_columns_and_read_it_back(tmp_path, data_root, name):
    split, row, rid = ROWS[name]
    f = tmp_path / (f'{split}.json' if name == 'hotpotqa_json' else f'{split}.jsonl')
    f.write_text(json.dumps([row]) if name == 'hotpotqa_json' else json.dumps(row) + '\n')
    r = prepare(name, split=split, from_path=f)[0]
    assert (r.status, r.rows, r.refused) == ('prepared', 1, 0), r
    src = get_source(name)
    assert r.where == data_root / src.env / name / Path(src.location(split)).name
    assert src.status(split).state == 'prepared' and manifest_path(r.where).is_file()
    assert read_back(name, data_root) == [rid]


def test_parquet_and_a_hub_style_folder(tmp_path, data_root):
    "The hub's layout (`huggingface-cli download --local-dir DIR`: data/<split>-0000N-of-0000M.parquet) as --from DIR."
    rows = [ROWS['codecontests'][1], {**ROWS['codecontests'][1], 'name': '1234_B. Sum'}]
    shards = tmp_path / 'cc' / 'data'
    shards.mkdir(parents=True)
    write_parquet(shards / 'train-00000-of-00002.parquet', rows[:1])
    write_parquet(shards / 'train-00001-of-00002.parquet', rows[1:])
    write_parquet(shards / 'test-00000-of-00001.parquet', [{**rows[0], 'name': 'T'}])
    reports = prepare('codecontests', from_path=tmp_path / 'cc')          # no split: each split found in the folder
    assert [(r.split, r.rows) for r in reports] == [('train', 2), ('test', 1)]
    assert read_back('codecontests', data_root) == ['1234_A. Sum', '1234_B. Sum']


def test_refused_rows_are_reported_with_their_reasons(tmp_path, data_root):
    f = write_jsonl(tmp_path / 'test.jsonl', [ROWS['apps'][1], BROKEN['apps'], ROWS['apps'][1]])
    r = prepare('apps', split='test', from_path=f)[0]
    assert (r.rows, r.refused) == (1, 2)
    assert r.reasons == {"row # has no test to run": 1, "duplicate id 'test-7' (row # has it)": 1}
    assert [w for w, _ in r.examples] == [1, 2]
    m = json.loads(manifest_path(r.where).read_text())
    assert (m['rows'], m['refused'], m['reasons']) == (1, 2, r.reasons)


# -- corrupt files -----------------------------------------------------------------------------------------------------
def test_a_corrupt_line_is_refused_and_the_rest_kept(tmp_path):
    f = tmp_path / 'test.jsonl'
    cut = '{"ID": "2024-I-2", "Problem": "cut sh\n'
    f.write_text(json.dumps(ROWS['aime24'][1]) + '\n' + cut + json.dumps(BROKEN['aime24']) + '\n')
    r = prepare('aime24', from_path=f)[0]
    assert (r.rows, r.refused) == (1, 2)
    assert any(w.startswith('line # is not JSON') for w in r.reasons), r.reasons
    assert any('does not have the expected columns' in w for w in r.reasons), r.reasons


def _unusable(tmp_path, kind) -> tuple:
    "(source, split, file) for an unreadable or useless file of kind `kind`."
    if kind == 'json list cut short':
        f = tmp_path / 'dev.json'
        f.write_text(json.dumps([HOTPOT, HOTPOT])[:-40])
        return 'hotpotqa_json', 'dev', f
    if kind == 'gzip cut short':
        f = tmp_path / 'HumanEval.jsonl.gz'
        f.write_bytes(gzip.compress((json.dumps(ROWS['humaneval'][1]) + '\n').encode() * 50)[:-30])
        return 'humaneval', 'test', f
    f = tmp_path / ('test.parquet' if kind == 'broken parquet' else 'test.jsonl')
    if kind == 'broken parquet': f.write_bytes(b'PAR1' + os.urandom(64) + b'PAR1')
    elif kind == 'every row refused': write_jsonl(f, [BROKEN['aime24']] * 3)
    else: f.write_text('\n')
    return 'aime24', 'test', f

UNUSABLE = ['json list cut short', 'broken parquet', 'gzip cut short', 'every row refused', 'empty']

@pytest.mark.parametrize("kind", UNUSABLE)
def test_an_unreadable_or_useless_file_writes_nothing(tmp_path, data_root, kind):
    name, split, f = _unusable(tmp_path, kind)
    with pytest.raises(DataError, match="nothing was written"): prepare(name, split=split, from_path=f)
    at = get_source(name).location(split)
    assert not at.exists() and not staging_path(at).exists() and not manifest_path(at).exists()
    assert get_source(name).status(split).state in ('missing', 'found')


def test_a_failed_run_leaves_the_earlier_prepared_split_untouched(tmp_path, data_root):
    good = write_jsonl(tmp_path / 'a.jsonl', [ROWS['polaris'][1]])
    first = prepare('polaris', from_path=good)[0]
    before = first.where.read_bytes()
    bad = tmp_path / 'b.jsonl'
    bad.write_bytes(gzip.compress(b'x'))   # not JSON lines at all: every line refused
    with pytest.raises(DataError): prepare('polaris', from_path=bad)
    assert first.where.read_bytes() == before and get_source('polaris').status().state == 'prepared'


# -- interrupted earlier runs ------------------------------------------------------------------------------------------
KILLER = """
import os, signal, sys
from pettingllms_nb.data import prepare, get_source
src = get_source('polaris')
check = src.check
def dies_at_50(row, i, split):
    if i == 50: os.kill(os.getpid(), signal.SIGKILL)   # a crash in the middle: no cleanup runs
    return check(row, i, split)
src.check = dies_at_50
prepare('polaris', from_path=sys.argv[1])
"""

def test_a_killed_run_is_detected_and_redone(tmp_path, data_root):
    rows = [{'problem': f'What is {i} + 1?', 'answer': str(i + 1), 'id': str(i)} for i in range(200)]
    f = write_jsonl(tmp_path / 'train.jsonl', rows)
    p = subprocess.run([sys.executable, '-c', KILLER, str(f)], env={**os.environ, 'PLLM_DATA': str(data_root)},
                       timeout=120)
    assert p.returncode == -signal.SIGKILL
    src = get_source('polaris')
    at = src.location()
    assert staging_path(at).exists() and not at.exists()                   # what the crash left: a staging copy only
    assert src.status().state == 'partial'
    with pytest.raises(DataMissing, match="half-prepared.*pettingllms-nb data prepare polaris"):
        make_env('math_env', source='polaris')
    table = {s.source: s for s in list_sources('math_env')}
    assert (table['polaris'].state, table['polaris'].get) == ('partial', 'pettingllms-nb data prepare polaris')
    r = prepare('polaris', from_path=f)[0]
    assert (r.status, r.rows) == ('prepared', 200)
    assert r.recovered.startswith('found the staging copy') and r.recovered.endswith('redone')
    assert not staging_path(at).exists() and len(make_env('math_env', source='polaris').problems) == 200


def test_data_without_its_manifest_and_damaged_data(tmp_path, data_root):
    f = write_jsonl(tmp_path / 'test.jsonl', [ROWS['aime25'][1]])
    src = get_source('aime25')
    at = src.location()
    at.parent.mkdir(parents=True)
    at.write_text(json.dumps(ROWS['aime25'][1]) + '\n')                     # a copy nobody checked
    assert src.status().state == 'partial'
    assert 'data without a manifest' in prepare('aime25', from_path=f)[0].recovered
    at.write_text(at.read_text()[:20])                                       # changed after it was prepared
    assert src.status().state == 'damaged'
    with pytest.raises(DataMissing, match="changed after it was prepared"): make_env('math_env', source='aime25')
    assert prepare('aime25', from_path=f)[0].rows == 1 and src.status().state == 'prepared'


def test_prepare_is_idempotent(tmp_path, data_root):
    f = write_jsonl(tmp_path / 'test.jsonl', [ROWS['aime24'][1]])
    first = prepare('aime24', from_path=f)[0]
    stamp = first.where.stat().st_mtime_ns
    again = prepare('aime24', from_path=f)[0]
    assert (again.status, again.rows, first.where.stat().st_mtime_ns) == ('up to date', 1, stamp)
    assert prepare('aime24')[0].status == 'up to date'                      # no input named: what is prepared stays
    assert prepare('aime24', from_path=f, force=True)[0].status == 'prepared'
    write_jsonl(f, [ROWS['aime24'][1], {**ROWS['aime24'][1], 'ID': '2024-I-2'}])   # another input: prepared again
    assert prepare('aime24', from_path=f)[0].rows == 2


# -- the hub and downloads ---------------------------------------------------------------------------------------------
@pytest.fixture
def hub_reachable(monkeypatch):
    "The stand-in hub below is reachable (the real one never is in a test)."
    import pettingllms_nb.data.preparation as P
    monkeypatch.setattr(P, 'hub_unreachable', lambda timeout=3.0: None)


def test_an_unreachable_hub_fails_in_one_line_within_seconds(monkeypatch, data_root):
    "Issue 25: offline, `data prepare aime24` printed the hub client's retries for 27 s; now one line, before any request."
    import time, socket, pettingllms_nb.data.preparation as P
    datasets = pytest.importorskip("datasets")
    for v in ('HF_HUB_OFFLINE', 'HF_DATASETS_OFFLINE', 'HTTPS_PROXY', 'https_proxy', 'ALL_PROXY', 'all_proxy'):
        monkeypatch.delenv(v, raising=False)
    def no_network(*a, **kw): raise OSError("[Errno -2] Name or service not known")
    monkeypatch.setattr(socket, 'create_connection', no_network)
    monkeypatch.setattr(datasets, 'load_dataset', lambda *a, **kw: pytest.fail("the hub client was called"))
    t0 = time.perf_counter()
    with pytest.raises(DataError) as e: prepare('aime24')
    assert time.perf_counter() - t0 < 5
    msg = str(e.value)
    assert msg.startswith("aime24: cannot reach the hub (huggingface.co: [Errno -2]") and '\n' not in msg
    assert "pettingllms-nb data prepare aime24 --split test --from DIR" in msg
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')            # offline mode: the cache decides, no probe
    assert P.hub_unreachable() is None


def test_no_network_is_a_clear_error(monkeypatch, data_root, hub_reachable):
    datasets = pytest.importorskip("datasets")
    def offline(*a, **kw): raise ConnectionError("Couldn't reach 'Maxwell-Jia/AIME_2024' on the Hub (ConnectionError)")
    monkeypatch.setattr(datasets, 'load_dataset', offline)
    with pytest.raises(DataError) as e: prepare('aime24')
    msg = str(e.value)
    assert "could not fetch Maxwell-Jia/AIME_2024 (split 'train') from the hub: ConnectionError" in msg
    assert "pettingllms-nb data prepare aime24 --split test --from DIR" in msg
    at = get_source('aime24').location()
    assert not at.exists() and not staging_path(at).exists()


def test_the_hub_path_converts_an_in_memory_dataset(monkeypatch, data_root, hub_reachable):
    datasets = pytest.importorskip("datasets")
    calls = []
    def fake(path, name=None, split=None, **kw):
        calls.append((path, name, split, kw))
        rows = {'Maxwell-Jia/AIME_2024': [ROWS['aime24'][1], BROKEN['aime24']], 'json': [ROWS['apps'][1]],
                'hotpotqa/hotpot_qa': [ROWS['hotpotqa_hf'][1]]}[path]
        return datasets.Dataset.from_list(rows)
    monkeypatch.setattr(datasets, 'load_dataset', fake)
    reports = prepare('aime24', 'hotpotqa_hf', split=None)
    assert [(r.source, r.split, r.rows, r.refused) for r in reports] == [
        ('aime24', 'test', 1, 1), ('hotpotqa_hf', 'dev', 1, 0), ('hotpotqa_hf', 'train', 1, 0)]
    assert prepare('apps', split='test')[0].rows == 1
    assert calls[:3] == [('Maxwell-Jia/AIME_2024', None, 'train', {}),
                         ('hotpotqa/hotpot_qa', 'distractor', 'validation', {}),
                         ('hotpotqa/hotpot_qa', 'distractor', 'train', {})]
    assert calls[3] == ('json', None, 'train', {'data_files': 'hf://datasets/codeparrot/apps/test.jsonl'})
    assert read_back('aime24', data_root) == ['2024-I-1'] and read_back('apps', data_root) == ['test-7']
    assert prepare('aime24')[0].status == 'up to date' and len(calls) == 4


def test_a_url_source_downloads_once(monkeypatch, data_root):
    import urllib.request
    got = []
    def fake_urlopen(url, timeout=None):
        got.append(url)
        return io.BytesIO(json.dumps([HOTPOT]).encode())
    monkeypatch.setattr(urllib.request, 'urlopen', fake_urlopen)
    r = prepare('hotpotqa_json', split='dev')[0]
    assert (r.rows, got) == (1, ['http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json'])
    assert prepare('hotpotqa_json', split='dev', force=True)[0].rows == 1 and len(got) == 1   # the download is kept
    def down(url, timeout=None): raise OSError("Network is unreachable")
    monkeypatch.setattr(urllib.request, 'urlopen', down)
    with pytest.raises(DataError, match="could not download .*hotpot_train_v1.1.json.*--from FILE"):
        prepare('hotpotqa_json', split='train')
    assert not list((r.where.parent / 'downloads').glob('*.partial'))


# -- missing sources, and what is not for `data prepare` ---------------------------------------------------------------
def test_a_missing_source_names_the_command_that_gets_it(data_root):
    with pytest.raises(DataMissing, match=r"'aime25' \(math_env, split 'test'\) is not in the data directory .*"
                                          r"get it with `pettingllms-nb data prepare aime25`"):
        make_env('math_env', source='aime25')
    with pytest.raises(DataMissing, match="pettingllms-nb data prepare apps --split train"):
        make_env('code_env', source='apps', split='train')
    with pytest.raises(DataError, match="made by a command of its own: Search-R1's"): prepare('searchr1', split='test')
    with pytest.raises(RegistryError, match="did you mean 'hotpotqa'"): prepare('hotpotq')
    with pytest.raises(ValueError, match="allowed values are \\['dev', 'train', 'test'\\]"):
        prepare('nq', split='valid')
    assert [r.status for r in prepare('math_original', 'search_generated')] == ['present', 'present']


def test_a_config_names_a_source_and_a_missing_one_fails_at_make_env(tmp_path, data_root):
    cfg = load_config('tiny_search_hotpotqa')
    assert (cfg.env.source, cfg.env.split) == ('hotpotqa_json', 'dev')
    kw = env_kwargs(cfg)
    assert kw['source'] == 'hotpotqa_json' and 'dataset' not in kw            # the source says which data set it is
    with pytest.raises(DataMissing, match="pettingllms-nb data prepare hotpotqa_json --split dev"):
        make_env('search_env', **kw)
    with pytest.raises(ConfigError, match="a data source of 'math_env', not of env.name='search_env'"):
        load_config('tiny_search', ['env.source=aime24'])
    with pytest.raises(ConfigError, match="did you mean 'dev'"): load_config('tiny_search_hotpotqa', ['env.split=dve'])


def test_the_gpu_presets_name_their_sources(tmp_path, data_root, monkeypatch):
    "gpu_code and gpu_alfworld_real read CodeContests and ALFWorld through the data directory, not a path to guess."
    cfg = load_config('gpu_code_qwen3_1.7b_lora')
    kw = env_kwargs(cfg)
    assert (kw['source'], kw['split'], 'dataset' in kw) == ('codecontests', 'train', False)
    with pytest.raises(DataMissing, match="pettingllms-nb data prepare codecontests --split train"):
        make_env('code_env', **kw)
    prepare('codecontests', split='train', from_path=write_jsonl(tmp_path / 'train.jsonl', [ROWS['codecontests'][1]]))
    assert [p['id'] for p in make_env('code_env', seed=0, **kw).problems] == ['1234_A. Sum']
    kw = env_kwargs(load_config('gpu_alfworld_real_qwen3_1.7b_lora'))
    assert (kw['source'], kw['split']) == ('alfworld', 'train')
    monkeypatch.setenv('ALFWORLD_DATA', str(tmp_path / 'no_alfworld_here'))   # not where alfworld-download puts it
    with pytest.raises(DataMissing, match="alfworld-download"): make_env('alfworld_env', **kw)


def test_an_explicit_path_still_works_and_contradictions_are_errors(tmp_path):
    f = write_jsonl(tmp_path / 'mine.jsonl', [ROWS['aime24'][1]])
    env = make_env('math_env', seed=0, source='aime24', path=str(f))      # nothing prepared: the file is yours
    assert (env.state.source, env.gold) == ('aime24', '204')
    with pytest.raises(ValueError, match="dataset='dapo' contradicts source='aime24'"):
        make_env('math_env', source='aime24', path=f, dataset='dapo')
    with pytest.raises(ValueError, match="source='apps' is data of 'code_env', not of 'math_env'"):
        make_env('math_env', source='apps')


# -- the table ---------------------------------------------------------------------------------------------------------
def test_every_declared_source_belongs_to_a_registered_env_and_has_what_it_needs():
    envs = set(registry.names('env', available_only=False))
    for name in registry.names('source'):
        src = get_source(name)
        assert src.env in envs, (name, src.env)
        if src.preparable and src.layout != 'dir': assert src.check is not None and src.columns, name


def test_data_list_runs_offline_in_a_fresh_process_and_imports_nothing_heavy(data_root):
    heavy = ('torch', 'transformers', 'datasets', 'pyarrow', 'textworld', 'playwright')
    code = ("import json, sys\nfrom pettingllms_nb.data import list_sources\n"
            "t = list_sources()\nprint(json.dumps({'rows': [[s.source, s.split, s.state, s.rows] for s in t], "
            f"'heavy': [m for m in {heavy!r} if m in sys.modules]}}))")
    env = {**os.environ, 'PLLM_DATA': str(data_root), 'HF_HUB_OFFLINE': '1', 'HF_DATASETS_OFFLINE': '1'}
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True, env=env).stdout
    out = json.loads(out)
    assert out['heavy'] == []
    rows = {(s, sp): (st, n) for s, sp, st, n in out['rows']}
    assert rows['math_original', 'all'] == ('shipped', 30)
    assert rows['code_original', 'train'] == ('shipped', 12) and rows['code_original', 'test'] == ('shipped', 4)
    assert rows['search_generated', 'all'][0] == 'generated' and rows['aime24', 'test'][0] == 'missing'


def test_the_command_line(tmp_path, data_root):
    env = {**os.environ, 'PLLM_DATA': str(data_root)}
    exe = str(Path(sys.executable).parent / 'pettingllms-nb')
    out = subprocess.run([exe, 'data', 'list'], capture_output=True, text=True, check=True, env=env).stdout
    lines = out.splitlines()
    assert lines[0] == f"data directory ($PLLM_DATA): {data_root}"
    shipped = [l.split() for l in lines if ' shipped ' in l]
    assert [l[:4] for l in shipped] == [['code_original', 'code_env', 'train', 'shipped'],
                                        ['code_original', 'code_env', 'test', 'shipped'],
                                        ['math_original', 'math_env', 'all', 'shipped']]
    missing = [l for l in lines if l.split()[:4] == ['aime24', 'math_env', 'test', 'missing']]
    assert len(missing) == 1 and missing[0].endswith('pettingllms-nb data prepare aime24')
    f = write_jsonl(tmp_path / 'test.jsonl', [ROWS['aime24'][1], BROKEN['aime24']])
    p = subprocess.run([exe, 'data', 'prepare', 'aime24', '--from', str(f)], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.startswith('aime24/test: prepared 1 rows (1 refused')
    assert 'refused 1: aime24: row 1' in p.stdout
    p = subprocess.run([exe, 'data', 'prepare', 'aime25', '--from', str(tmp_path / 'nothing.jsonl')],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2 and 'no such file or folder' in p.stderr and 'Traceback' not in p.stderr
    out = subprocess.run([exe, 'data', 'list', '--env', 'math_env'], capture_output=True, text=True, check=True,
                         env=env).stdout
    want = ['aime24', 'math_env', 'test', 'prepared', 'math_env/aime24/test.jsonl']
    assert any(l.split()[:5] == want for l in out.splitlines())


def test_the_table_in_jupyter(tmp_path):
    html = list_sources('code_env')._repr_html_()
    assert html.startswith('<table><caption') and '✓ shipped' in html
    assert '<code>pettingllms-nb data prepare apps --split test</code>' in html


def test_your_own_environment_registers_sources_too(tmp_path):
    reg = Registry(builtins={}, plugin_group=None)
    src = DataSource('my_qa', 'toy_relay', ('test',), 'command', 'my-tool export', "my questions",
                     columns=('q',), check=lambda row, i, split: row['q'])
    register_source(src, reg)
    assert [(s.source, s.state, s.get) for s in list_sources(registry=reg)] == \
        [('my_qa', 'missing', 'my-tool export, then: pettingllms-nb data prepare my_qa --from PATH')]
    f = write_jsonl(tmp_path / 'mine.jsonl', [{'q': 'a'}, {'q': 'b'}, {'x': 1}])
    r = prepare('my_qa', from_path=f, registry=reg)[0]
    assert (r.rows, r.refused, r.reasons) == (2, 1, {"KeyError: 'q'": 1})
    with pytest.raises(ValueError, match="already registered by 'toy_relay'"):
        register_source(DataSource('my_qa', 'math_env', ('test',), 'generated'), reg)


# -- a preset that names a source trains from it -----------------------------------------------------------------------
def test_a_preset_naming_a_source_trains_from_the_data_directory(tmp_path, data_root):
    pytest.importorskip("torch")
    from pettingllms_nb.training.trainer import Trainer
    qs = [{**HOTPOT, '_id': f'q{k}', 'question': f'Which country is the painter Ann{k} from?', 'answer': f'Kelm{k}',
           'type': 'bridge', 'supporting_facts': [[f'Ann{k}', 0]],
           'context': [[f'Ann{k}', [f'Ann{k} is a painter from Kelm{k}.']], ['Bo', ['Bo bakes.']]]} for k in range(3)]
    (tmp_path / 'hotpot_dev_distractor_v1.json').write_text(json.dumps(qs))
    assert prepare('hotpotqa_json', split='dev', from_path=tmp_path / 'hotpot_dev_distractor_v1.json')[0].rows == 3
    small = ['training.total_training_steps=1', 'training.val_freq=0', 'training.train_batch_size=2',
             'training.train_sample_num=2', 'env.max_turns=1']
    tr = Trainer('tiny_search_hotpotqa', small, out_dir=tmp_path / 'run', progress=False)
    result = tr.fit()
    assert [json.loads(l)['step'] for l in result.metrics_path.read_text().splitlines()] == [1]
    uids = {s.problem_uid for s in tr.collect(seeds=range(3))}
    assert uids == {f'search_env/hotpotqa_json/q{k}' for k in range(3)}, uids   # the prepared questions, one per seed


# -- folder sources: ALFWorld's games and WebShop's files --------------------------------------------------------------
def alfworld_copy(root, n=2):
    "A folder in ALFWorld's layout (json_2.1.1/valid_seen/<task>/<trial>/): `n` generated games the planner solved."
    pytest.importorskip("textworld")
    from pettingllms_nb.envs.alfworld.data import generate_solvable, write_alfworld_layout
    return write_alfworld_layout(root, [generate_solvable(seed) for seed in range(n)], split='valid_seen')


def test_alfworld_from_a_copy_in_its_own_layout_plays(tmp_path, data_root):
    src = alfworld_copy(tmp_path / 'alfworld')
    broken = next((src / 'json_2.1.1' / 'valid_seen').glob('*/*/game.tw-pddl'))
    first_game = broken.parent.relative_to(src / 'json_2.1.1' / 'valid_seen')
    r = prepare('alfworld', split='valid_seen', from_path=src)[0]
    assert (r.status, r.rows, r.refused) == ('prepared', 2, 0)
    env = make_env('alfworld_env', seed=0, source='alfworld', split='valid_seen')
    assert env.state.source == 'alfworld' and env.state.admissible and env.game.path.startswith(str(data_root))
    got = source_kwargs('alfworld_env', {'source': 'alfworld'})['data_path']
    assert got == str(data_root / 'alfworld_env' / 'alfworld')
    broken.write_text('{"pddl_domain": ')                                    # a corrupt game is refused, the other kept
    r = prepare('alfworld', split='valid_seen', from_path=src, force=True)[0]
    assert (r.rows, r.refused) == (1, 1) and r.examples[0][0] == str(first_game)
    assert 'game.tw-pddl is not JSON' in r.examples[0][1]


ALF_KILLER = """
import os, signal, sys
import pettingllms_nb.data.preparation as prep
from pettingllms_nb.data import prepare
copy, n = prep.copy_into, [0]
def dies_in_the_second_game(src, dest):
    n[0] += 1
    if n[0] == 3: os.kill(os.getpid(), signal.SIGKILL)   # the first game had two files: this is the second's first
    return copy(src, dest)
prep.copy_into = dies_in_the_second_game
prepare('alfworld', split='valid_seen', from_path=sys.argv[1])
"""

def test_a_killed_folder_run_is_completed_keeping_the_games_it_finished(tmp_path, data_root):
    src = alfworld_copy(tmp_path / 'alfworld', n=3)
    p = subprocess.run([sys.executable, '-c', ALF_KILLER, str(src)], env={**os.environ, 'PLLM_DATA': str(data_root)},
                       timeout=300)
    assert p.returncode == -signal.SIGKILL
    at = get_source('alfworld').location('valid_seen')
    staged = [d for d in staging_path(at).glob('*/*') if not d.name.startswith('.')]
    assert len(staged) == 1 and not at.exists()                             # one whole game, one half-written (hidden)
    assert get_source('alfworld').status('valid_seen').state == 'partial'
    r = prepare('alfworld', split='valid_seen', from_path=src)[0]
    assert (r.rows, r.recovered.endswith('completed it')) == (3, True)
    assert len(list(at.glob('*/*/game.tw-pddl'))) == 3 and len(list(at.glob('*/*/traj_data.json'))) == 3
    assert not staging_path(at).exists() and not list(at.rglob('.*.partial'))


def test_alfworld_found_where_alfworld_download_puts_it(tmp_path, monkeypatch):
    src = alfworld_copy(tmp_path / 'alfworld', n=1)
    monkeypatch.setenv('ALFWORLD_DATA', str(src))
    st = get_source('alfworld').status('valid_seen')
    assert (st.state, st.rows, st.where) == ('found', 1, src / 'json_2.1.1' / 'valid_seen')
    assert source_kwargs('alfworld_env', {'source': 'alfworld'})['data_path'] == str(src)
    assert prepare('alfworld', split='valid_seen')[0].status == 'present'
    assert get_source('alfworld').status('train').get == "pip install 'pettingllms-nb[alfworld]' && alfworld-download"


def test_webshop_from_its_own_files(tmp_path, data_root):
    from pettingllms_nb.envs.web.data import write_webshop_sample
    folder = write_webshop_sample(tmp_path / 'WebShop' / 'data')
    products = json.loads((folder / 'items_shuffle_1000.json').read_text())
    more = [{'asin': 'B0SAMPLE09', 'name': 'no query'}, products[0]]
    (folder / 'items_shuffle_1000.json').write_text(json.dumps(products + more))
    reports = prepare('webshop', from_path=folder)                           # both splits read the one folder
    assert [(r.split, r.status, r.rows, r.refused) for r in reports] == [('train', 'prepared', 2, 2),
                                                                         ('test', 'up to date', 2, 2)]
    assert set(reports[0].reasons) == {"product #: duplicate product id 'B0SAMPLE01'",
                                       "product # lacks what the shop reads (KeyError: 'query')"}
    env = make_env('web_env', seed=0, source='webshop', split='test', max_turns=3)
    assert env.app.catalogue.name == 'webshop-small-human' and len(env.app.catalogue.items) == 2
    (folder / 'items_human_ins.json').unlink()
    with pytest.raises(DataError, match="items_human_ins.json not in"):
        prepare('webshop_all', from_path=folder, split='test')


def test_generated_and_package_sources_need_only_their_extra(tmp_path):
    reg = Registry(builtins={}, plugin_group=None)
    register_source(DataSource('gen_ok', 'toy_relay', ('all',), 'generated', 'a generator', requires='json'), reg)
    register_source(DataSource('gen_needs', 'toy_relay', ('all',), 'generated', 'a generator',
                               requires='no_such_module_x', extra='alfworld'), reg)
    register_source(DataSource('pkg', 'toy_relay', ('test',), 'package', 'a wheel', extra='web',
                               native=lambda split: None), reg)
    got = [(s.source, s.state, s.get) for s in list_sources(registry=reg)]
    assert got == [('gen_needs', 'needs extra', "pip install 'pettingllms-nb[alfworld]'"), ('gen_ok', 'generated', ''),
                   ('pkg', 'missing', "pip install 'pettingllms-nb[web]'")]
    with pytest.raises(DataMissing, match=r"get it with `pip install 'pettingllms-nb\[web\]'`"):
        prepare('pkg', registry=reg)


def test_a_rollout_locates_its_source_once(tmp_path, data_root, monkeypatch):
    "A rollout over many seeds reads the source's manifest once (locating it is a disk scan), not once per env."
    from pettingllms_nb.data.sources import DataSource
    from pettingllms_nb.engine.rollout import rollout
    prepare('aime25', from_path=write_jsonl(tmp_path / 'test.jsonl', [ROWS['aime25'][1]]))
    calls, real = [], DataSource.status
    monkeypatch.setattr(DataSource, 'status', lambda self, *a, **kw: calls.append(self.name) or real(self, *a, **kw))
    tr = rollout('math_env', lambda req: 'Answer: 1', seeds=range(6), turn_order=['math_single_agent'], source='aime25')
    assert len(tr.episodes) == 6 and calls == ['aime25']


def test_prepare_shows_a_bar_over_the_rows_it_reads(tmp_path, data_root, capsys):
    "Issue 25: long work shows progress; `data prepare` (the CLI passes progress=True) counts the rows it reads."
    f = tmp_path / 'aime.jsonl'
    write_jsonl(f, [ROWS['aime24'][1]])
    prepare('aime24', from_path=f, progress=True)
    assert 'data prepare aime24/test' in capsys.readouterr().err
    prepare('aime24', from_path=f, force=True)                     # the library's default: no bar
    assert 'data prepare' not in capsys.readouterr().err


def test_behind_a_proxy_the_hub_is_not_probed(monkeypatch):
    "A direct connection says nothing about a hub reached through a proxy: no probe, the hub client decides."
    import socket, pettingllms_nb.data.preparation as P
    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False); monkeypatch.delenv('HF_DATASETS_OFFLINE', raising=False)
    monkeypatch.setattr(socket, 'create_connection', lambda *a, **k: pytest.fail('probed'))
    monkeypatch.setenv('HTTPS_PROXY', 'http://proxy.example:3128')
    assert P.hub_unreachable() is None

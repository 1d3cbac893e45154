"""search_env: HotpotQA's official EM/F1 on hand-computed cases; the retrievers (FTS5 against the brute-force scan, the
on-disk cache, bm25s); the HTTP retriever against local servers in both dialects and against servers that are down,
time out or reply with garbage (a clear RetrievalError, an infra_error step, never a zero score); the retrieval-server
command as a process; every loader on small local files in its source's real columns; hidden gold never in a prompt;
the oracle at 100% and the no-retrieval baseline near zero on 100 held-out questions; check_env."""
import json, math, os, re, socket, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import pytest

os.environ['PETTINGLLMS_NB_CACHE'] = tempfile.mkdtemp(prefix='pllm-search-cache-')   # one cache for the session

from pettingllms_nb.core.agent import take_turn
from pettingllms_nb.core.config import VAL_SEED_BASE, load_config
from pettingllms_nb.core.parsing import FormatError
from pettingllms_nb.core.registry import registry
from pettingllms_nb.engine.check_env import check_env, GARBAGE
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.envs.search import (exact_match, f1_score, normalize_answer, generate_world, make_question,
                                        load_questions, Passage, RetrievalError, Fts5Index, ScanRetriever,
                                        HttpRetriever, Bm25sIndex, serve_in_thread, index_passages, SearchEnv,
                                        SearchState, ReasoningAgent, WebSearchAgent, SearchSingleAgent, parse_tagged,
                                        oracle_policy, random_policy, no_retrieval_policy, score_policy)
from pettingllms_nb.envs.search.retrieval import HAVE_BM25S, ImpactIndex, cache_dir
from pettingllms_nb.widgets.render import render_state
from datafiles import write_jsonl, write_parquet

WORLD = generate_world(0)


# -- official normalisation, exact match and F1 -------------------------------------------------------------------
@pytest.mark.parametrize("pred,golds,em,f1", [
    ("The Eiffel Tower", "eiffel tower", 1.0, 1.0),
    ("Eiffel Tower, Paris", ["Paris", "Eiffel Tower"], 0.0, 0.8),       # 2 of 3 tokens vs the 2-token alias: P 2/3, R 1
    ("a  Paris.", ["paris"], 1.0, 1.0),
    ("Ilsa Marrow", "Ilsa Vey Marrow", 0.0, 0.8),                      # P 1, R 2/3
    ("in Trelsk town", ["Oss", "Trelsk"], 0.0, 0.5),                   # P 1/3, R 1: the best alias
    ("no", "no way", 0.0, 0.0), ("yes", "Yes!", 1.0, 1.0), ("noanswer", "no answer", 0.0, 0.0),
    ("48,200", ["48200"], 1.0, 1.0), ("the", "a", 1.0, 0.0),            # both normalise to '': equal, but no tokens
    ("anything", [], 0.0, 0.0),
])
def test_em_f1_hand_computed(pred, golds, em, f1):
    assert exact_match(pred, golds) == em
    assert f1_score(pred, golds) == pytest.approx(f1)

def test_normalisation_matches_hotpotqa():
    assert normalize_answer("  The  Quick, Brown-Fox!  ") == "quick brownfox"
    assert normalize_answer("Anatomy of an Apple") == "anatomy of apple"


# -- the generated encyclopedia ------------------------------------------------------------------------------------
def test_questions_need_two_documents_and_never_contain_their_answer():
    docs = {d['doc_id']: d for d in WORLD.docs}
    for s in range(300):
        q = make_question(WORLD, s)
        assert len(set(q['gold_doc_ids'])) == 2 and all(i in docs for i in q['gold_doc_ids'])
        if q['qtype'] != 'yesno':
            assert f" {normalize_answer(q['answer'])} " not in f" {normalize_answer(q['question'])} "
            assert any(normalize_answer(q['answer']) in normalize_answer(docs[i]['text']) for i in q['gold_doc_ids'])
        else: assert q['answer'] in ('yes', 'no')

def test_world_is_seeded_and_scales():
    assert generate_world(5).docs == generate_world(5).docs and generate_world(5).docs != WORLD.docs
    big = generate_world(1, n_people=2000, n_orgs=1000, n_cities=300)
    assert len({d['title'] for d in big.docs}) == len(big.docs) > 3000
    with pytest.raises(ValueError, match="must be >= 4"): generate_world(0, n_people=2)


# -- local retrieval backends --------------------------------------------------------------------------------------
def test_fts5_scores_equal_the_brute_force_scan():
    fts, scan = index_passages(WORLD.docs, 'fts5'), ScanRetriever(WORLD.docs)
    words = sorted({w for d in WORLD.docs for w in re.findall(r"\w+", d['text'])})
    import random
    rng = random.Random(0)
    for _ in range(60):
        q = ' '.join(rng.sample(words, rng.randint(1, 5)))
        a, b = fts.search(q, 7), scan.search(q, 7)
        assert [p.doc_id for p in a] == [p.doc_id for p in b], q
        assert [round(p.score, 6) for p in a] == [round(p.score, 6) for p in b], q

def test_the_default_impact_index_gives_fts5s_answers_to_the_last_bit(tmp_path):
    "Documents, order and scores (floats compared exactly), ties by insertion order, at several k, on a bigger world."
    import random
    world = generate_world(3, n_people=1500, n_orgs=700, n_cities=200)
    fts, impact = Fts5Index.build(world.docs, path=tmp_path / 'w.sqlite'), index_passages(world.docs)
    assert isinstance(impact, ImpactIndex) and impact.n_docs == fts.n_docs
    rng, words = random.Random(1), sorted({w for d in world.docs for w in re.findall(r"\w+", d['text'])})
    qs = ([make_question(world, s)['question'] for s in range(150)] + [d['title'] for d in rng.sample(world.docs, 100)]
          + [' '.join(rng.sample(words, rng.randint(1, 6))) for _ in range(100)] + ['born', 'the of', ''])
    for k in (1, 3, 10, 50):
        assert [impact.search(q, k) for q in qs] == [fts.search(q, k) for q in qs], k

def test_index_is_built_once_and_cached_on_disk():
    passages = [Passage(f"x{i}", f"Title {i}", f"text number {i}") for i in range(50)]
    a = Fts5Index.build(passages)
    mtime = a.path.stat().st_mtime_ns
    b = Fts5Index.build(passages)
    assert a.built and not b.built and b.path == a.path and a.path.parent == cache_dir()
    assert b.path.stat().st_mtime_ns == mtime
    assert not list(cache_dir().glob('*.tmp'))
    c = Fts5Index.build(passages + [Passage('y', 'New', 'another')])         # another corpus: another file
    assert c.path != a.path and c.built

def test_fts5_searches_from_many_threads():
    idx = index_passages(WORLD.docs)
    titles = [d['title'] for d in WORLD.docs[:40]]
    out, errors = {}, []
    def work(t):
        try: out[t] = idx.search(t, 1)[0].title
        except Exception as e: errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in titles]
    for t in threads: t.start()
    for t in threads: t.join()
    assert not errors and out == {t: t for t in titles}

def test_queries_are_words_not_fts5_syntax():
    idx = index_passages(WORLD.docs)
    for q in ['"', 'NEAR(a b)', '* OR AND NOT', 'title:x', '^a', "\x00\ud800", ')' * 500]:
        assert isinstance(idx.search(q, 3), list)

@pytest.mark.skipif(not HAVE_BM25S, reason="bm25s not installed (pip install 'pettingllms-nb[search]')")
def test_bm25s_backend_finds_documents_by_title():
    idx = Bm25sIndex.build(WORLD.docs)
    hits = sum(idx.search(d['title'], 1)[0].doc_id == d['doc_id'] for d in WORLD.docs)
    assert hits >= 0.95 * len(WORLD.docs)
    assert not Bm25sIndex.build(WORLD.docs).built
    m = score_policy(oracle_policy, seeds=range(VAL_SEED_BASE, VAL_SEED_BASE + 20), retriever='bm25s')
    assert m['success_rate'] == 1.0

def test_bm25s_is_listed_in_the_registry():
    e = registry.load().entries['worker']['bm25s_retriever']
    assert e.available == HAVE_BM25S and (e.available or e.extra == 'search')


# -- HTTP retrieval ------------------------------------------------------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]

class _Raw:
    "A server that answers every POST with `body` (bytes) and `status`, after `delay` seconds."
    def __init__(self, body:bytes, status:int=200, delay:float=0.0):
        outer = self
        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                outer.requests.append(json.loads(self.rfile.read(int(self.headers['Content-Length']))))
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header('Content-Length', str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError: pass
            def log_message(self, *a): pass
        self.requests, self.srv = [], ThreadingHTTPServer(('127.0.0.1', 0), H)
        self.srv.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}/retrieve"
    def __enter__(self):
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        return self
    def __exit__(self, *a):
        self.srv.shutdown()
        self.srv.server_close()

def test_http_retriever_both_dialects_against_our_server():
    idx = index_passages(WORLD.docs)
    qs = [WORLD.docs[0]['title'], 'river', WORLD.docs[7]['title']]
    with serve_in_thread(idx) as url:
        assert HttpRetriever(url).search_many(qs, 3) == [idx.search(q, 3) for q in qs]
        assert [HttpRetriever(url, dialect='single').search(q, 2) for q in qs] == [idx.search(q, 2) for q in qs]

def test_http_retriever_reads_search_r1_replies_and_sends_its_request():
    reply = {"result": [[{"document": {"id": "42", "contents": "\"Trelsk\"\nTrelsk is a city."}, "score": 3.5}],
                        [{"document": {"id": "7", "contents": "\"Oss\"\nThe river Oss."}, "score": 1.0}]]}
    with _Raw(json.dumps(reply).encode()) as srv:
        got = HttpRetriever(srv.url).search_many(["a", "b"], 3)
    assert got == [[Passage('42', 'Trelsk', 'Trelsk is a city.', 3.5)], [Passage('7', 'Oss', 'The river Oss.', 1.0)]]
    assert srv.requests == [{'queries': ['a', 'b'], 'topk': 3, 'return_scores': True}]
    single = {"result": [{"document": {"id": "42", "contents": "\"Trelsk\"\nTrelsk is a city."}, "score": 2}]}
    with _Raw(json.dumps(single).encode()) as srv:
        assert HttpRetriever(srv.url, dialect='single').search("a", 1)[0].doc_id == '42'
    assert srv.requests == [{'query': 'a', 'topk': 1, 'return_scores': True}]

@pytest.mark.parametrize("body,status,why", [
    (b"<html>502 Bad Gateway</html>", 200, "not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, 200, "not JSON"),                            # deeper than json.loads recurses
    (b'{"results": []}', 200, "expected {'result'"),
    (b'{"result": [[]]}', 200, "for 2 queries"),                                    # one list for two queries
    (b'{"result": [[{"document": {"id": 1}}], []]}', 200, "bad passage"),
    (b'{"result": [[{"document": {"contents": "x"}, "score": "NaN"}], []]}', 200, "bad passage"),
    (b'{"error": "bad request"}', 400, "HTTP 400"),
    (b'oops', 503, "HTTP 503"),
])
def test_http_retriever_garbage_is_a_clear_error(body, status, why):
    with _Raw(body, status) as srv:
        with pytest.raises(RetrievalError, match=re.escape(why)) as e:
            HttpRetriever(srv.url, retries=1, backoff=0.01).search_many(["a", "b"], 3)
    assert srv.url in str(e.value)
    assert len(srv.requests) == (2 if status >= 500 else 1)        # 5xx retried, the rest not

def test_http_retriever_timeout_and_down_are_clear_errors():
    with _Raw(b'{"result": [[]]}', delay=1.5) as srv:
        t0 = time.perf_counter()
        with pytest.raises(RetrievalError, match=r"no reply within 0.3 s \(after 2 attempts\)"):
            HttpRetriever(srv.url, timeout=0.3, retries=1, backoff=0.01).search("a")
        assert time.perf_counter() - t0 < 1.5
    with pytest.raises(RetrievalError, match="unreachable.*retrieval-server INDEX"):
        HttpRetriever(f"http://127.0.0.1:{_free_port()}/retrieve", retries=2, backoff=0.01).search("a")

def test_http_retriever_rejects_bad_settings():
    with pytest.raises(ValueError, match="dialect"): HttpRetriever(dialect='graphql')
    with pytest.raises(ValueError, match="timeout"): HttpRetriever(timeout=0)
    with pytest.raises(ValueError, match="url"): HttpRetriever(url='127.0.0.1:8000')

def _episode_with_server(url, turn_order=('reasoning_agent', 'web_search_agent'), **kw):
    return rollout('search_env', oracle_policy, seeds=range(3), turn_order=list(turn_order), retriever='http',
                   retriever_url=url, retriever_timeout=0.3, **kw)

def test_a_dead_or_garbage_server_marks_steps_as_infra_errors_never_scores_them():
    with _Raw(b"garbage") as srv:
        for t in (_episode_with_server(srv.url), _episode_with_server(f"http://127.0.0.1:{_free_port()}/retrieve")):
            searches = [s for s in t if s.role == 'web_search_agent']
            assert searches and all(s.infra_error and 'retrieval server' in s.infra_error for s in searches)
            assert all(s.reward is None and s.reward_terms == {} for s in searches)   # not scored
            assert not any(s.infra_error for s in t if s.role == 'reasoning_agent')
            assert all(st['evidence'] == [] for st in (s.state_after for s in t))
            assert [s.state_after['infra_errors'] for s in searches][-1] >= 1
            assert math.isnan(t.success_rate()) and t.summary()['infra_episodes'] == len(t.episodes)  # none scored

def test_a_healthy_server_gives_the_same_episodes_as_the_local_index():
    with serve_in_thread(index_passages(WORLD.docs)) as url:
        t = _episode_with_server(url)
    local = rollout('search_env', oracle_policy, seeds=range(3), turn_order=['reasoning_agent', 'web_search_agent'])
    assert t.success_rate() == 1.0 and [s.state_after for s in t] == [s.state_after for s in local]
    assert not any(s.infra_error for s in t)

def test_retrieval_server_command_serves_both_dialects():
    port = _free_port()
    env = {**os.environ, 'PYTHONUNBUFFERED': '1'}
    cmd = [sys.executable, '-c', 'import sys; from pettingllms_nb.cli import main; sys.exit(main())']   # the command
    p = subprocess.Popen(cmd + ['retrieval-server', 'generated', '--port', str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        line = p.stdout.readline()
        assert f"on http://127.0.0.1:{port}/retrieve" in line, line
        url, q = f"http://127.0.0.1:{port}/retrieve", WORLD.docs[2]['title']
        assert HttpRetriever(url).search(q, 1)[0].doc_id == WORLD.docs[2]['doc_id']
        assert HttpRetriever(url, dialect='single').search(q, 1)[0].doc_id == WORLD.docs[2]['doc_id']
    finally:
        p.terminate()
        p.wait(10)
        p.stdout.close()


# -- loaders on local files ----------------------------------------------------------------------------------------
HOTPOT = {'_id': '5a8b57f25542995d1e6f1371', 'question': 'Were Scott Derrickson and Ed Wood of the same nationality?',
          'answer': 'yes', 'type': 'comparison', 'level': 'hard',
          'supporting_facts': [['Scott Derrickson', 0], ['Ed Wood', 0]],
          'context': [['Ed Wood (film)', ['Ed Wood is a 1994 American biographical film.', ' It stars Johnny Depp.']],
                      ['Scott Derrickson', ['Scott Derrickson (born 1966) is an American director.']],
                      ['Ed Wood', ['Edward Davis Wood Jr. was an American filmmaker.']]]}

def test_hotpotqa_official_json(tmp_path):
    (tmp_path/'dev.json').write_text(json.dumps([HOTPOT]))
    r = load_questions('hotpotqa_json', path=tmp_path/'dev.json')[0]
    assert r['qid'] == HOTPOT['_id'] and r['golds'] == ['yes'] and r['qtype'] == 'comparison'
    assert r['gold_titles'] == ['Scott Derrickson', 'Ed Wood'] and len(r['passages']) == 3
    assert r['passages'][0]['text'] == 'Ed Wood is a 1994 American biographical film. It stars Johnny Depp.'
    assert r['gold_doc_ids'] == [f"{HOTPOT['_id']}/1", f"{HOTPOT['_id']}/2"]

def test_hotpotqa_hub_parquet(tmp_path):
    row = {'id': HOTPOT['_id'], 'question': HOTPOT['question'], 'answer': 'yes', 'type': 'comparison', 'level': 'hard',
           'supporting_facts': {'title': ['Scott Derrickson', 'Ed Wood'], 'sent_id': [0, 0]},
           'context': {'title': [c[0] for c in HOTPOT['context']], 'sentences': [c[1] for c in HOTPOT['context']]}}
    r = load_questions('hotpotqa_hf', path=write_parquet(tmp_path/'validation.parquet', [row]))[0]
    assert r['gold_titles'] == ['Scott Derrickson', 'Ed Wood'] and [p['title'] for p in r['passages']][2] == 'Ed Wood'

FLASHRAG = {
    'nq': {'id': 'test_0', 'question': 'who got the first nobel prize in physics', 'metadata': {},
           'golden_answers': ['Wilhelm Conrad Röntgen']},
    'bamboogle': {'id': 'test_0', 'golden_answers': ['james madison'],
                  'question': 'Who was president of the United States in the year that Citibank was founded?'},
    'hotpotqa': {'id': 'dev_0', 'question': HOTPOT['question'], 'golden_answers': ['yes'],
                 'metadata': {'type': 'comparison', 'level': 'hard',
                              'supporting_facts': {'title': ['Scott Derrickson', 'Ed Wood'], 'sent_id': [0, 0]},
                              'context': {'title': [c[0] for c in HOTPOT['context']],
                                          'sentences': [c[1] for c in HOTPOT['context']]}}},
    '2wikimultihopqa': {'id': 'dev_0', 'question': 'Who was born first, Ann or Bo?', 'golden_answers': ['Ann'],
                        'metadata': {'type': 'comparison', 'supporting_facts': [['Ann', 0], ['Bo', 0]],
                                     'context': [['Ann', ['Ann was born in 1901.']],
                                                 ['Bo', ['Bo was born in 1950.']]]}},
    'musique': {'id': '2hop__1_2', 'question': 'Where was the founder of X born?',
                'golden_answers': ['Trelsk', 'Trelsk town'],
                'metadata': {'paragraphs': [
                    {'idx': 0, 'title': 'X', 'paragraph_text': 'X was founded by Ann.', 'is_supporting': True},
                    {'idx': 1, 'title': 'Ann', 'paragraph_text': 'Ann was born in Trelsk.', 'is_supporting': True},
                    {'idx': 2, 'title': 'Bo', 'paragraph_text': 'Bo is a painter.', 'is_supporting': False}]}},
}

@pytest.mark.parametrize("source", list(FLASHRAG))
def test_flashrag_sets(tmp_path, source):
    r = load_questions(source, path=write_jsonl(tmp_path/'dev.jsonl', [FLASHRAG[source]]))[0]
    raw = FLASHRAG[source]
    assert (r['qid'], r['question'], r['golds']) == (raw['id'], raw['question'], raw['golden_answers'])
    assert r['source'] == source
    if source in ('nq', 'bamboogle'): assert r['passages'] is None and r['gold_titles'] == []
    else: assert len(r['passages']) >= 2 and len(r['gold_titles']) == 2 and len(r['gold_doc_ids']) == 2

def test_search_r1_parquet(tmp_path):
    prompt = ("Answer the given question. You must conduct reasoning inside <think> and </think> first every time you "
              "get new information. ... For example, <answer> Beijing </answer>. "
              "Question: who got the first nobel prize in physics?\n")
    rows = [{'data_source': 'nq', 'prompt': [{'role': 'user', 'content': prompt}], 'ability': 'fact-reasoning',
             'reward_model': {'style': 'rule', 'ground_truth': {'target': ['Wilhelm Conrad Röntgen']}},
             'extra_info': {'split': 'test', 'index': 0}}]
    r = load_questions('searchr1', path=write_parquet(tmp_path/'test.parquet', rows))[0]
    assert r['question'] == 'who got the first nobel prize in physics?' and r['golds'] == ['Wilhelm Conrad Röntgen']
    assert r['qid'] == 'nq-test-0'

def test_missing_data_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="huggingface-cli download RUC-NLPIR/FlashRAG_datasets.*musique"):
        load_questions('musique')
    with pytest.raises(FileNotFoundError, match="hotpot_dev_distractor_v1.json"):
        load_questions('hotpotqa_json', path=tmp_path/'none.json')
    with pytest.raises(FileNotFoundError, match="qa_search_train_merge"):
        load_questions('searchr1', path=tmp_path/'none.parquet')
    with pytest.raises(ValueError, match="row 0 lacks the expected columns"):
        load_questions('nq', path=write_jsonl(tmp_path/'bad.jsonl', [{'question': 'q', 'answers': ['a']}]))
    with pytest.raises(FileNotFoundError, match="huggingface-cli"): SearchEnv(dataset='nq')


# -- environments on real-format data ------------------------------------------------------------------------------
def test_hotpotqa_distractor_setting_runs_offline(tmp_path):
    bridge = {**HOTPOT, '_id': 'b1', 'question': 'Which film stars the subject of Ed Wood (film)?', 'answer': 'Ed Wood',
              'type': 'bridge'}
    (tmp_path/'dev.json').write_text(json.dumps([HOTPOT, bridge]))
    t = rollout('search_env', oracle_policy, seeds=range(2), turn_order=['reasoning_agent', 'web_search_agent'],
                dataset='hotpotqa_json', path=str(tmp_path/'dev.json'))
    assert t.success_rate() == 1.0
    own = {f"{q}/{i}" for q in ('5a8b57f25542995d1e6f1371', 'b1') for i in range(3)}
    assert {p['doc_id'] for s in t for p in s.state_after['evidence']} <= own      # each searched its own paragraphs

def test_hotpotqa_fullwiki_with_your_own_index(tmp_path):
    (tmp_path/'dev.json').write_text(json.dumps([HOTPOT]))
    wiki = [{'id': f"w{i}", 'title': t, 'text': ' '.join(sents)} for i, (t, sents) in enumerate(HOTPOT['context'])]
    wiki += [{'id': 'w9', 'title': 'Ed Wood Jr. (disambiguation)', 'text': 'Ed Wood may refer to several people.'}]
    corpus = write_jsonl(tmp_path/'wiki.jsonl', wiki)
    env = SearchEnv(dataset='hotpotqa_json', path=str(tmp_path/'dev.json'), index=str(corpus))
    env.reset(0)
    assert env.corpus == 'index'
    a = WebSearchAgent()
    a.update_from_env(env, 0)
    take_turn(a, env, "<search>Scott Derrickson</search>")
    assert env.state.evidence[0]['doc_id'] == 'w1' and a.new_gold >= 1       # gold by title: the index has its own ids
    t = rollout('search_env', oracle_policy, seeds=[0], turn_order=['reasoning_agent', 'web_search_agent'],
                dataset='hotpotqa_json', path=str(tmp_path/'dev.json'), index=str(corpus))
    assert t.success_rate() == 1.0

def test_a_set_without_paragraphs_needs_an_index(tmp_path):
    path = write_jsonl(tmp_path/'dev.jsonl', [FLASHRAG['nq']])
    with pytest.raises(ValueError, match="need an index to search.*retrieval-server INDEX"):
        SearchEnv(dataset='nq', path=path)
    corpus = tmp_path/'wiki.jsonl'
    write_jsonl(corpus, [{'id': '1', 'contents': '"Wilhelm Röntgen"\nRöntgen won the first Nobel Prize in Physics.'},
                         {'id': '2', 'contents': '"Physics"\nPhysics is a science.'}])
    env = SearchEnv(dataset='nq', path=path, index=str(corpus))
    env.reset(0)
    a = WebSearchAgent()
    a.update_from_env(env, 0)
    take_turn(a, env, "<search>first nobel prize physics</search>")
    assert env.state.evidence[0]['title'] == 'Wilhelm Röntgen' and a.infra_error is None


# -- hidden gold never in a prompt ---------------------------------------------------------------------------------
def _check_prompts(trace):
    "Every gold document id in a prompt was retrieved before it; a gold answer in a prompt is in retrieved text."
    for s in trace:
        text = s.prompt['text']
        before = trace.state_before(s)
        seen = {p['doc_id'] for p in before['evidence']}
        seen_text = ' '.join(f"{p['title']} {p['text']}" for p in before['evidence'])
        for d in before['gold_doc_ids']: assert d not in text or d in seen, (s.id, d)
        for g in before['golds']:
            if g.lower() in ('yes', 'no'): continue
            in_text = lambda t: f" {normalize_answer(g)} " in f" {normalize_answer(t)} "
            assert not in_text(text) or in_text(seen_text), (s.id, g)
        if not seen:   # before any retrieval only the question's own words may name a gold document
            for t in before['gold_titles']: assert t not in text or t in before['question'], (s.id, t)

ORDERS = [['reasoning_agent', 'web_search_agent'], ['web_search_agent', 'reasoning_agent'], ['search_single_agent']]

@pytest.mark.parametrize("policy", [oracle_policy, random_policy, no_retrieval_policy])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("style", ['full', 'compact'])
def test_hidden_gold_never_in_a_prompt(policy, order, style):
    t = rollout('search_env', policy, seeds=range(VAL_SEED_BASE, VAL_SEED_BASE + 25), turn_order=order,
                prompt_style=style)
    _check_prompts(t)
    assert all(not any(g in json.dumps(s.prompt) for g in ('gold_doc_ids', 'gold_titles', 'golds')) for s in t)

def test_hidden_supporting_facts_never_in_a_hotpotqa_prompt(tmp_path):
    (tmp_path/'dev.json').write_text(json.dumps([HOTPOT]))
    t = rollout('search_env', random_policy, seeds=range(4), turn_order=['reasoning_agent', 'web_search_agent'], sample_num=3,
                dataset='hotpotqa_json', path=str(tmp_path/'dev.json'))
    _check_prompts(t)


# -- agents and parsers --------------------------------------------------------------------------------------------
def play(agent, env, turn, response):
    "One whole interaction cycle of `agent` on `env`; returns the reward."
    agent.update_from_env(env, turn)
    return take_turn(agent, env, response)

@pytest.mark.parametrize("agent", [ReasoningAgent, WebSearchAgent, SearchSingleAgent])
def test_garbage_is_a_format_error_with_its_penalty(agent):
    env = SearchEnv()
    env.reset(0)
    more = ["<search></search>", "<answer>\x00</answer>", "<search>!!!</search>", "<need>" + "x" * 400 + "</need>",
            "<answer>yes" * 10_000, "</think>" * 10_000]
    for g in GARBAGE + more:
        a = agent()
        r = play(a, env, 0, g)
        assert a.format_error and a.current_action is None and r == -0.5 and not env.done, (agent, g[:30] if g else g)

def test_parsers_are_linear():
    worst = ["<answer>" * 12_500, "<" * 100_000, "</think>" * 12_500, "<search>a" * 11_000, "<need></need>" * 7_000]
    t0 = time.perf_counter()
    for s in worst:
        for tags in (('answer', 'need'), ('search',), ('answer', 'search')):
            with pytest.raises(FormatError): parse_tagged(s, tags)
    assert time.perf_counter() - t0 < 1.0

def test_rewards_per_term():
    env = SearchEnv()
    env.reset(VAL_SEED_BASE)
    r, s = ReasoningAgent(), WebSearchAgent()
    first = env.state.gold_titles[0]
    play(r, env, 0, f"<need>{first}</need>")
    play(s, env, 0, f"<search>{first}</search>")
    got = s.reward_terms['new_gold_docs']
    assert got in (0.5, 1.0) and s.reward_terms['format'] == 0.0
    play(s, env, 0, f"<search>{first}</search>")            # the same documents again
    assert s.reward_terms == {'new_gold_docs': 0.0, 'answer_f1': 0.0, 'format': 0.0}
    play(r, env, 1, "<answer>wrong guess</answer>")
    assert r.reward_terms['answer_em'] == 0.0 and env.done and not env.success

def test_the_state_card_is_registered():
    t = rollout('search_env', oracle_policy, seeds=[VAL_SEED_BASE], turn_order=['reasoning_agent', 'web_search_agent'])
    html = render_state(t.steps[-1].state_after, env='search_env')
    assert "data-state='SearchState'" in html and 'pllm-gold' in html and '<mark>' in html and 'exact match' in html
    st = SearchState(question='<img src=x onerror=alert(1)>', answer='<b>x</b>')
    assert '<img' not in render_state(st) and '<b>x' not in render_state(st)


# -- the anchors and conformance -----------------------------------------------------------------------------------
HELD_OUT = range(VAL_SEED_BASE, VAL_SEED_BASE + 100)

def test_oracle_scores_100_percent_on_held_out_questions():
    for order in (('reasoning_agent', 'web_search_agent'), ('search_single_agent',)):
        m = score_policy(oracle_policy, seeds=HELD_OUT, turn_order=order)
        assert m['success_rate'] == 1.0 and m['f1'] == 1.0 and m['gold_docs_found'] == 1.0, (order, m)

def test_no_retrieval_baseline_is_near_zero():
    m = score_policy(no_retrieval_policy, seeds=HELD_OUT)
    assert m['success_rate'] <= 0.1 and m['gold_docs_found'] == 0.0, m
    assert score_policy(random_policy, seeds=HELD_OUT)['success_rate'] <= 0.1

def test_registered_scripted_policies():
    assert registry.scripted('search_env', 'oracle') is oracle_policy
    assert registry.scripted('search_env', 'random') is random_policy

@pytest.mark.parametrize("order", [None, ['search_single_agent'], ['web_search_agent', 'reasoning_agent']])
def test_check_env_passes(order):
    assert check_env('search_env', turn_order=order).ok
    assert check_env('search_env', turn_order=order, policy=oracle_policy, probe_response="<search>river</search>").ok

@pytest.mark.parametrize("preset", ['search_env', 'search_env_single', 'tiny_search', 'gpu_search_qwen3_1.7b_lora'])
def test_presets_load_and_roll_out(preset):
    cfg = load_config(preset)
    t = cfg.training
    if preset.startswith('gpu_'):    # the reference's AT-GRPO settings, one LoRA adapter per agent
        assert (cfg.specialization, t.device, cfg.base_models.policy_0.path) == ('lora', 'cuda', 'Qwen/Qwen3-1.7B')
        got = (t.total_training_steps, t.train_batch_size, t.train_sample_num, t.lr, t.lora_rank, t.lora_alpha)
        assert got == (200, 32, 8, 5e-6, 16, 32)
    else: assert t.device == 'cpu' and (cfg.base_models.policy_0.path == 'tiny') == preset.startswith('tiny')
    t = rollout(cfg, oracle_policy, seeds=range(VAL_SEED_BASE, VAL_SEED_BASE + 5))
    assert t.success_rate() == 1.0


# -- the package's layout ------------------------------------------------------------------------------------------
def test_builtins_register_search_env_in_a_fresh_interpreter():
    code = ("import json\nfrom pettingllms_nb.core.registry import registry\n"
            "print(json.dumps([registry.get('env', 'search_env').__module__, registry.agents_for('search_env'),\n"
            "      registry.scripted('search_env', 'oracle').__module__,\n"
            "      sorted(n for n in registry.names('worker', available_only=False) if n.endswith('_retriever'))]))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert json.loads(out) == ['pettingllms_nb.envs.search.env', ['reasoning_agent', 'search_single_agent', 'web_search_agent'],
                               'pettingllms_nb.envs.search.oracle',
                               ['bm25s_retriever', 'fts5_retriever', 'http_retriever', 'scan_retriever']]

def test_the_package_reexports_every_part_and_keeps_its_all_clean():
    import importlib
    import pettingllms_nb.envs.search as pkg
    parts = ('data', 'retrieval', 'state', 'env', 'prompts', 'agents', 'render', 'oracle')
    assert tuple(pkg._PARTS) == parts
    for part, names in pkg._PARTS.items():
        module = importlib.import_module(f"pettingllms_nb.envs.search.{part}")
        assert all(getattr(pkg, n) is getattr(module, n) for n in names), part
        assert set(names) <= set(module.__all__) and 'log' not in module.__all__, part
        assert not set(module.__all__) & {'search', 'build', 'run', 'step', 'parse', 'reset', 'clone', 'show', 'get'}, part

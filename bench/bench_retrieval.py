"""Retrieval backends side by side: build time, memory, queries per second and gold-passage recall, on 10k / 100k / 1M
passages of the generated encyclopedia.

Backends: SQLite FTS5 (on disk), `ImpactIndex` (FTS5's BM25 from impact-ordered lists in memory, the default), bm25s
(when installed) and the brute-force BM25 scan. Speed queries are half document titles (a searcher naming what it
wants) and half generated multi-hop questions, top 3. FTS5's and the impact index's answers are checked against each
other (the same documents, order and scores) and FTS5's against the scan's.

Recall: held-out generated questions (seeds from EVAL_SEED_BASE, never trained on) asked as they are; gold recall@k
is the share of a question's gold documents in the top k, first hop@k whether the document the question names (the
first of its chain; for a bridge question the second hop needs the bridge entity, which only a searcher finds) is
there. Outside references for the scores, on the same tokens: `rank_bm25`'s BM25Okapi (when installed; its defaults,
k1 = 1.5, b = 0.75, the title twice, on the smallest size only: it scores every document in Python) and Pyserini's
BM25 (Lucene's idf, k1 = 0.9, b = 0.4, title and text as one field; no stemming, so only its parameters), brute force
with numpy. Top-3 agreement with FTS5 is printed for each.

    python bench/bench_retrieval.py [--sizes 10000 100000 1000000] [--skip-1m] [--queries 200] [--recall 300] [--scan-budget 30]
"""
import argparse, math, os, random, tempfile, time
from collections import Counter
from pathlib import Path
from _load import load_report
from pettingllms_nb.core.accessors import EVAL_SEED_BASE
from pettingllms_nb.envs.search.data import generate_world, make_question
from pettingllms_nb.envs.search.retrieval import (Fts5Index, Bm25sIndex, ImpactIndex, ScanRetriever, HAVE_BM25S, as_passage,
                                                  tokenize, query_tokens)

def passages(n:int, seed:int=0):
    "About `n` generated passages (people, organisations and cities of one world) and the world."
    w = generate_world(seed, n_people=max(8, int(n * 0.55)), n_orgs=max(4, int(n * 0.25)),
                       n_cities=max(4, int(n * 0.08)))
    return [as_passage(d) for d in w.docs[:n]], w

def queries(w, docs, k:int, seed:int=0) -> list[str]:
    rng = random.Random(seed)
    titles = [d.title for d in rng.sample(docs, k // 2)]
    qs = [make_question(w, s)['question'] for s in range(k - k // 2)]
    out = [q for pair in zip(titles, qs) for q in pair]
    return out + titles[len(qs):] + qs[len(titles):]

def held_out(w, docs, n:int) -> list[dict]:
    "`n` questions of seeds never used for training, whose gold documents are all among `docs`."
    ids, out, s = {d.doc_id for d in docs}, [], EVAL_SEED_BASE
    while len(out) < n and s < EVAL_SEED_BASE + 20 * n:
        q = make_question(w, s); s += 1
        if all(g in ids for g in q['gold_doc_ids']): out.append(q)
    return out

def timed(fn):
    t0 = time.perf_counter(); out = fn(); return time.perf_counter() - t0, out

def rss_mb() -> float:
    "This process's resident memory now, in MiB (Linux)."
    with open('/proc/self/statm') as f: return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20

def qps(r, qs) -> tuple[float, list]:
    "Queries per CPU second of this process (what a loaded machine disturbs least), and the answers."
    c0 = time.process_time(); res = [r.search(q, 3) for q in qs]
    return len(qs) / max(time.process_time() - c0, 1e-9), res

class NumpyBM25:
    "Brute-force BM25 with numpy over our tokens: a reference for the scores, not a backend."
    def __init__(self, docs, k1:float, b:float, title_weight:float, idf:str):
        import numpy as np
        self.np, self.docs, post, dl = np, docs, {}, []
        for i, p in enumerate(docs):
            ti, te = Counter(tokenize(p.title)), Counter(tokenize(p.text))
            dl.append(title_weight * sum(ti.values()) + sum(te.values()))
            for t in ti.keys() | te.keys(): post.setdefault(t, []).append((i, title_weight * ti[t] + te[t]))
        n, dl = len(docs), np.array(dl); avgdl = dl.mean()
        self.post = {}
        for t, ps in post.items():
            d, f = np.array([i for i, _ in ps]), np.array([x for _, x in ps], dtype=float)
            h = len(ps)
            w = math.log(1 + (n - h + 0.5) / (h + 0.5)) if idf == 'lucene' else max(1e-6, math.log((n - h + 0.5) / (h + 0.5)))
            self.post[t] = (d, w * f * (k1 + 1) / (f + k1 * (1 - b + b * dl[d] / avgdl)))
        self.n = n

    def search(self, query, k=3):
        np, acc = self.np, self.np.zeros(self.n)
        for t in query_tokens(query):
            if t in self.post: d, c = self.post[t]; acc[d] += c
        best = [i for i in np.lexsort((np.arange(self.n), -acc))[:k] if acc[i] > 0]
        return [self.docs[i] for i in best]

class RankBM25:
    "`rank_bm25`'s BM25Okapi with its defaults on our tokens (the title twice, as bm25s is given it)."
    def __init__(self, docs):
        import numpy as np
        from rank_bm25 import BM25Okapi
        self.np, self.docs = np, docs
        self.bm = BM25Okapi([tokenize(f"{p.title} {p.title} {p.text}") for p in docs])
    def search(self, query, k=3):
        s = self.bm.get_scores(query_tokens(query))
        return [self.docs[i] for i in self.np.lexsort((self.np.arange(len(s)), -s))[:k] if s[i] > 0]

def recall(r, qs:list[dict], ks=(1, 3, 10)) -> dict:
    "Gold recall@k and first hop@k of retriever `r` on questions `qs`."
    got = [[p.doc_id for p in r.search(q['question'], max(ks))] for q in qs]
    out = {}
    for k in ks:
        out[f'recall@{k}'] = sum(len(set(g[:k]) & set(q['gold_doc_ids'])) / len(q['gold_doc_ids']) for g, q in zip(got, qs)) / len(qs)
        out[f'hop1@{k}'] = sum(q['gold_doc_ids'][0] in g[:k] for g, q in zip(got, qs)) / len(qs)
    return out

def run(n:int, n_queries:int, n_recall:int, scan_budget:float, tmp:Path, references:bool) -> tuple[list, list]:
    gen, (docs, w) = timed(lambda: passages(n))
    qs, hq = queries(w, docs, n_queries), held_out(w, docs, n_recall)
    rows, recalls, answers = [], [], {}
    def add(name, build_fn, size_fn=None):
        m0 = rss_mb(); build, r = timed(build_fn); mem = rss_mb() - m0
        rate, res = qps(r, qs)
        answers[name] = res
        rows.append(dict(n=len(docs), backend=name, build=build, qps=rate, mb=size_fn(r) if size_fn else mem))
        recalls.append(dict(n=len(docs), backend=name, **recall(r, hq)))
        return r
    fts = add('fts5', lambda: Fts5Index.build(docs, path=tmp / f"fts5-{n}.sqlite"), lambda r: r.path.stat().st_size / 2**20)
    add('impact', lambda: ImpactIndex.build(docs))   # its MB: the memory it took
    same = sum(a == b for a, b in zip(answers['fts5'], answers['impact']))
    if HAVE_BM25S:
        add('bm25s', lambda: Bm25sIndex.build(docs, path=tmp / f"bm25s-{n}"),
            lambda r: sum(f.stat().st_size for f in (tmp / f"bm25s-{n}").iterdir()) / 2**20)
    build, scan = timed(lambda: ScanRetriever(docs))
    c0 = time.process_time(); scan.search(qs[0], 3); t1 = time.process_time() - c0
    m = max(2, min(len(qs), int(scan_budget / max(t1, 1e-6))))
    rate, scan_res = qps(scan, qs[:m])
    rows.append(dict(n=len(docs), backend=f'scan ({m} q)', build=build, qps=rate, mb=float('nan')))
    agree = sum([p.doc_id for p in a] == [p.doc_id for p in b] for a, b in zip(answers['fts5'][:m], scan_res))
    del scan
    if references:
        for name, make in (('pyserini bm25', lambda: NumpyBM25(docs, 0.9, 0.4, 1.0, 'lucene')),
                           *((('rank_bm25', lambda: RankBM25(docs)),) if _have('rank_bm25') and n <= 20_000 else ())):
            r = make(); recalls.append(dict(n=len(docs), backend=name, **recall(r, hq)))
            answers[name] = [r.search(q, 3) for q in qs]
    top3 = {name: sum([p.doc_id for p in a] == [p.doc_id for p in b] for a, b in zip(answers['fts5'], res)) / len(qs)
            for name, res in answers.items() if name != 'fts5'}
    print(f"{len(docs):>9,} passages: generated in {gen:.1f} s; impact == FTS5 (documents, order, scores) on {same}/{len(qs)} "
          f"queries; FTS5 and the scan agree on {agree}/{m}; top 3 as FTS5's: "
          + ', '.join(f"{k} {v:.0%}" for k, v in top3.items()), flush=True)
    return rows, recalls

def _have(mod:str) -> bool:
    from importlib.util import find_spec
    return find_spec(mod) is not None

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sizes', type=int, nargs='+', default=[10_000, 100_000, 1_000_000])
    ap.add_argument('--skip-1m', action='store_true', help='leave out sizes of a million passages and more (for speed)')
    ap.add_argument('--queries', type=int, default=200)
    ap.add_argument('--recall', type=int, default=300, help='held-out questions for recall')
    ap.add_argument('--scan-budget', type=float, default=30.0, help='CPU seconds of scanning per size, at most')
    a = ap.parse_args()
    sizes = [s for s in a.sizes if not (a.skip_1m and s >= 1_000_000)]
    with load_report('bench_retrieval'):
        print(f"backends: fts5, impact, {'bm25s, ' if HAVE_BM25S else '(bm25s not installed), '}scan; {a.queries} queries, "
              f"top 3; {a.recall} held-out questions for recall")
        rows, recalls = [], []
        with tempfile.TemporaryDirectory() as d:
            for n in sizes:
                r, rc = run(n, a.queries, a.recall, a.scan_budget, Path(d), references=n == sizes[0] or n <= 100_000)
                rows += r; recalls += rc
        print(f"\n{'passages':>10} {'backend':<13} {'build s':>8} {'MB':>8} {'queries/CPU s':>14} {'vs fts5':>8}")
        for r in rows:
            fts = next(x for x in rows if x['n'] == r['n'] and x['backend'] == 'fts5')
            print(f"{r['n']:>10,} {r['backend']:<13} {r['build']:>8.2f} {r['mb']:>8.1f} {r['qps']:>14.1f} "
                  f"{r['qps'] / fts['qps']:>7.2f}x")
        print("  (MB: the index file for fts5 and bm25s, the memory the build took for impact)")
        keys = [k for k in recalls[0] if k not in ('n', 'backend')]
        print(f"\n{'passages':>10} {'backend':<14} " + ' '.join(f"{k:>9}" for k in keys))
        for r in recalls: print(f"{r['n']:>10,} {r['backend']:<14} " + ' '.join(f"{r[k]:>9.3f}" for k in keys))
        ns = sorted({r['n'] for r in rows})
        if len(ns) > 1:
            print("\ngrowth from the smallest size (x passages -> x build time, x time per query):")
            for b in ('fts5', 'impact', 'bm25s', 'scan'):
                rs = {r['n']: r for r in rows if r['backend'].startswith(b)}
                if ns[0] not in rs: continue
                for n in ns[1:]:
                    if n in rs:
                        build, per_query = rs[n]['build'] / rs[ns[0]]['build'], rs[ns[0]]['qps'] / rs[n]['qps']
                        print(f"  {b:<6} {n / ns[0]:>6.0f}x passages -> {build:>7.1f}x build, {per_query:>7.1f}x per query")

if __name__ == '__main__':
    main()

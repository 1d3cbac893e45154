"""Retrieval backends side by side: index build time and queries per second of SQLite FTS5 (the default), bm25s (when
installed) and the brute-force BM25 scan, on 10k / 100k / 1M passages of the generated encyclopedia.

Queries are half document titles (a searcher naming what it wants) and half words of generated multi-hop questions,
top 3 each. Every backend answers the same queries; FTS5's answers are checked against the scan's (same scores by
construction). Indexes are built fresh in a temporary directory (not the cache). The scan answers fewer queries at
large sizes (it reads every passage for every query); its rate is per query all the same.

    python bench/bench_retrieval.py [--sizes 10000 100000 1000000] [--skip-1m] [--queries 200] [--scan-budget 30]
"""
import argparse, os, random, tempfile, time
from pathlib import Path
from pettingllms_nb.envs.search.data import generate_world, make_question
from pettingllms_nb.envs.search.retrieval import Fts5Index, Bm25sIndex, ScanRetriever, HAVE_BM25S, as_passage

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

def timed(fn):
    t0 = time.perf_counter(); out = fn(); return time.perf_counter() - t0, out

def qps(r, qs) -> tuple[float, list]:
    dt, res = timed(lambda: [r.search(q, 3) for q in qs])
    return len(qs) / dt, res

def run(n:int, n_queries:int, scan_budget:float, tmp:Path) -> list[dict]:
    gen, (docs, w) = timed(lambda: passages(n))
    qs = queries(w, docs, n_queries)
    rows = []
    build, fts = timed(lambda: Fts5Index.build(docs, path=tmp / f"fts5-{n}.sqlite"))
    rate, fts_res = qps(fts, qs)
    rows.append(dict(n=len(docs), backend='fts5', build=build, qps=rate, size_mb=fts.path.stat().st_size / 2**20))
    if HAVE_BM25S:
        build, b25 = timed(lambda: Bm25sIndex.build(docs, path=tmp / f"bm25s-{n}"))
        rate, _ = qps(b25, qs)
        mb = sum(f.stat().st_size for f in (tmp / f"bm25s-{n}").iterdir()) / 2**20
        rows.append(dict(n=len(docs), backend='bm25s', build=build, qps=rate, size_mb=mb))
    build, scan = timed(lambda: ScanRetriever(docs))
    t1, _ = timed(lambda: scan.search(qs[0], 3))
    m = max(2, min(len(qs), int(scan_budget / max(t1, 1e-6))))
    rate, scan_res = qps(scan, qs[:m])
    rows.append(dict(n=len(docs), backend=f'scan ({m} q)', build=build, qps=rate, size_mb=float('nan')))
    agree = sum([p.doc_id for p in a] == [p.doc_id for p in b] for a, b in zip(fts_res[:m], scan_res))
    print(f"{len(docs):>9,} passages: generated in {gen:.1f} s; FTS5 and the scan agree on {agree}/{m} queries",
          flush=True)
    del scan
    return rows

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sizes', type=int, nargs='+', default=[10_000, 100_000, 1_000_000])
    ap.add_argument('--skip-1m', action='store_true', help='leave out sizes of a million passages and more (for speed)')
    ap.add_argument('--queries', type=int, default=200)
    ap.add_argument('--scan-budget', type=float, default=30.0, help='seconds of scanning per size, at most')
    a = ap.parse_args()
    sizes = [s for s in a.sizes if not (a.skip_1m and s >= 1_000_000)]
    print(f"backends: fts5, {'bm25s, ' if HAVE_BM25S else '(bm25s not installed), '}scan; {a.queries} queries, top 3; "
          f"cores: {os.cpu_count()}")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes: rows += run(n, a.queries, a.scan_budget, Path(d))
    print(f"\n{'passages':>10} {'backend':<13} {'build s':>8} {'index MB':>9} {'queries/s':>10} {'vs scan':>8}")
    for r in rows:
        scan = next(x for x in rows if x['n'] == r['n'] and x['backend'].startswith('scan'))
        print(f"{r['n']:>10,} {r['backend']:<13} {r['build']:>8.2f} {r['size_mb']:>9.1f} {r['qps']:>10.1f} "
              f"{r['qps'] / scan['qps']:>7.0f}x")
    ns = sorted({r['n'] for r in rows})
    if len(ns) > 1:
        print("\ngrowth from the smallest size (x passages -> x build time, x time per query):")
        for b in ('fts5', 'bm25s', 'scan'):
            rs = {r['n']: r for r in rows if r['backend'].startswith(b)}
            if ns[0] not in rs: continue
            for n in ns[1:]:
                if n in rs:
                    build, per_query = rs[n]['build'] / rs[ns[0]]['build'], rs[ns[0]]['qps'] / rs[n]['qps']
                    print(f"  {b:<6} {n / ns[0]:>6.0f}x passages -> {build:>7.1f}x build, {per_query:>7.1f}x per query")

if __name__ == '__main__':
    main()

"""Every server the project starts, under bursts, slow clients and a large reply: answered / lost, p50 / p99, peak RSS.

Each server (the retrieval server, the web shop, the policy-server stand-in) runs in a child process of its own, once
as shipped (`core.serving.PooledHTTPServer`: one reader thread, a bounded pool of workers) and once, with the same
handler, on the standard library's `ThreadingHTTPServer` (a thread per connection, listen queue 5: how they served
before), so the two columns of one run compare like with like. The clients are asyncio connections of this process:

- `burst N`: N requests sent at once, each on its own connection, every one given 60 s;
- `burst N + slow`: the same while 100 slow clients trickle a request head a byte a second (a slowloris);
- `large`: 16 retrieval requests at once asking for the most the server allows (its queries x topk cap).

Peak RSS is the server process's high-water mark (VmHWM) after each case. Loopback only.

    python bench/bench_servers.py [--bursts 200 1000] [--slow 100] [--servers retrieval shop standin]
"""
import argparse, asyncio, json, os, subprocess, sys, time
from _load import load_report
from statistics import quantiles

SERVE = r'''
import json, sys, threading
from http.server import ThreadingHTTPServer
kind, model = sys.argv[1], sys.argv[2]
if kind == 'retrieval':
    from pettingllms_nb.envs.search import retrieval as R
    from pettingllms_nb.envs.search.data import generate_world
    w = generate_world(0, n_people=600, n_orgs=250, n_cities=80)
    idx = R.index_passages([R.as_passage(d) for d in w.docs], 'fts5')
    srv = R.make_server(idx, port=0)
    if model == 'threads':
        old = ThreadingHTTPServer(('127.0.0.1', 0), R._Handler); old.daemon_threads = True
        old.retriever, old.topk = srv.retriever, srv.topk
        srv.server_close(); srv = old
    path, body = '/retrieve', json.dumps({'queries': ['Who founded the company'], 'topk': 3})
elif kind == 'shop':
    from pettingllms_nb.envs.web import shop as S
    app = S.ShopApp()
    sid = app.new_session({'asin': None, 'instruction': 'buy anything', 'attributes': [], 'options': {}, 'price_upper': 1e9}).sid
    srv = (S._Server if model == 'pooled' else ThreadingHTTPServer)(('127.0.0.1', 0), S._Handler)
    srv.daemon_threads, srv.app = True, app
    path, body = f'/s/{sid}/search?q=shirt', None
else:
    from pettingllms_nb.models import servers as M
    if model == 'pooled': srv = M.StandInServer()
    else:   # the same handler and state on a thread per connection
        import hashlib
        srv = ThreadingHTTPServer(('127.0.0.1', 0), M._Handler); srv.daemon_threads = True
        srv.model, srv.base_fp, srv.lock = 'base', hashlib.sha256(b'base').hexdigest()[:16], threading.Lock()
        srv.adapters, srv.calls, srv.fail, srv.stale = {}, [], [], {}
    path, body = '/v1/models', None
if not (kind == 'standin' and model == 'pooled'): threading.Thread(target=srv.serve_forever, daemon=True).start()
print(json.dumps({'port': srv.server_address[1], 'path': path, 'body': body}), flush=True)
sys.stdin.read()
'''


def peak_rss_mb(pid:int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith('VmHWM:'): return int(line.split()[1]) / 1024
    return float('nan')


def request(port:int, path:str, body:str|None) -> bytes:
    if body is None: return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    b = body.encode()
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(b)}\r\nConnection: close\r\n\r\n").encode() + b


async def one(port:int, data:bytes, limit:float=60.0):
    "(ok, seconds, reply bytes): one request on its own connection, ok when a 2xx reply came whole in time."
    t0 = time.perf_counter()
    try:
        async def go():
            r, w = await asyncio.open_connection('127.0.0.1', port, limit=1 << 26)
            w.write(data); await w.drain()
            out = await r.read()
            w.close()
            return out
        out = await asyncio.wait_for(go(), limit)
        return out[9:10] == b'2', time.perf_counter() - t0, len(out)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
        return False, time.perf_counter() - t0, 0


async def slow_client(port:int, stop:asyncio.Event):
    "A slowloris: a request head, a byte a second, reconnecting whenever the server hangs up."
    head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode()
    while not stop.is_set():
        try:
            r, w = await asyncio.open_connection('127.0.0.1', port)
            for b in head + b'a' * 10_000:
                if stop.is_set(): break
                w.write(bytes([b])); await w.drain()
                await asyncio.sleep(1.0)
            w.close()
        except OSError: await asyncio.sleep(0.2)


async def burst(port:int, data:bytes, n:int, slow:int=0) -> dict:
    stop = asyncio.Event()
    slows = [asyncio.ensure_future(slow_client(port, stop)) for _ in range(slow)]
    if slow: await asyncio.sleep(2.0)   # the slow clients are connected first
    t0 = time.perf_counter()
    res = await asyncio.gather(*(one(port, data) for _ in range(n)))
    wall = time.perf_counter() - t0
    stop.set()
    for t in slows: t.cancel()
    await asyncio.gather(*slows, return_exceptions=True)
    ok = [s for good, s, _ in res if good]
    q = quantiles(ok, n=100) if len(ok) >= 2 else [float('nan')] * 99
    return {'answered': len(ok), 'lost': n - len(ok), 'p50': q[49], 'p99': q[98], 'wall': wall,
            'reply_kb': max((b for _, _, b in res), default=0) / 1024}


def fmt(r:dict) -> str:
    return f"{r['answered']:>5}/{r['lost']:<4} {r['p50']:6.2f} {r['p99']:6.2f} {r['rss']:7.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--bursts', type=int, nargs='+', default=[200, 1000])
    ap.add_argument('--slow', type=int, default=100)
    ap.add_argument('--servers', nargs='+', default=['retrieval', 'shop', 'standin'])
    a = ap.parse_args()
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    except (ImportError, ValueError, OSError): pass
    print(f"{'server':10} {'case':18} | {'pooled: answered/lost p50 s p99 s RSS MB':41} | thread per connection (before)")
    for kind in a.servers:
        rows = {}
        for model in ('pooled', 'threads'):
            p = subprocess.Popen([sys.executable, '-c', SERVE, kind, model], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)   # the old one prints tracebacks
            info = json.loads(p.stdout.readline())
            port, data = info['port'], request(info['port'], info['path'], info['body'])
            cases = [(f"burst {n}", n, 0) for n in a.bursts] + [(f"burst {max(a.bursts)} + {a.slow} slow", max(a.bursts), a.slow)]
            for name, n, slow in cases:
                r = asyncio.run(burst(port, data, n, slow))
                r['rss'] = peak_rss_mb(p.pid)
                rows.setdefault(name, {})[model] = r
            if kind == 'retrieval':
                from pettingllms_nb.envs.search.retrieval import MAX_QUERIES, MAX_TOPK, MAX_PASSAGES
                nq = min(MAX_QUERIES, MAX_PASSAGES // MAX_TOPK)
                big = request(port, '/retrieve', json.dumps({'queries': ['the city of'] * nq, 'topk': MAX_TOPK}))
                r = asyncio.run(burst(port, big, 16))
                r['rss'] = peak_rss_mb(p.pid)
                rows.setdefault(f"large x16 ({r['reply_kb']:.0f} KB)", {})[model] = r
            p.stdin.close(); p.wait(10)
        for name, by in rows.items():
            print(f"{kind:10} {name:18} | {fmt(by['pooled']):41} | {fmt(by['threads'])}", flush=True)


if __name__ == '__main__':
    with load_report('bench_servers'): main()

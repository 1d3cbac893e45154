"""Issue 32, point 5 for every server the project starts: idle and slow clients hold no thread (a thread per connection
made 301 threads for 300 idle connections), a request beside them is answered at once, and the pool is bounded."""
import json, socket, threading, time, urllib.request
import pytest
from pettingllms_nb.core.serving import PooledHTTPServer
from pettingllms_nb.envs.search import retrieval as R
from pettingllms_nb.envs.web.shop import ShopApp, ShopServer
from pettingllms_nb.models.servers import StandInServer


@pytest.fixture(params=['retrieval', 'shop', 'standin'])
def server(request):
    "(the server object, a URL that answers 200, a request body or None) for each of the project's servers."
    if request.param == 'retrieval':
        srv = R.make_server(R.index_passages([R.Passage('1', 'Paris', 'Paris is a city.')], 'scan'), port=0)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        yield srv, srv.url, json.dumps({'queries': ['Paris'], 'topk': 1}).encode()
        srv.shutdown(); srv.server_close()
    elif request.param == 'shop':
        app = ShopApp()
        sid = app.new_session({'asin': None, 'instruction': 'x', 'attributes': [], 'options': {}, 'price_upper': 1e9}).sid
        with ShopServer(app) as s: yield s.httpd, s.url(sid), None
    else:
        s = StandInServer()
        yield s, s.url + '/models', None
        s.stop()


def fetch(url, body=None):
    req = urllib.request.Request(url, data=body, headers={'Content-Type': 'application/json'} if body else {})
    with urllib.request.urlopen(req, timeout=10) as r: return r.status


def test_every_server_is_pooled(server):
    srv, url, body = server
    assert isinstance(srv, PooledHTTPServer) and srv.request_queue_size >= 128 and srv.workers <= 64


def test_idle_connections_hold_no_thread_and_a_request_beside_them_is_answered(server):
    srv, url, body = server
    assert fetch(url, body) == 200
    before = threading.active_count()
    idle = [socket.create_connection(srv.server_address[:2]) for _ in range(300)]
    try:
        deadline = time.monotonic() + 5
        while srv.open_connections < 300 and time.monotonic() < deadline: time.sleep(0.05)
        t0 = time.monotonic()
        assert fetch(url, body) == 200
        took = time.monotonic() - t0
        assert threading.active_count() - before <= srv.workers, threading.active_count() - before
        assert took < 5, took
        assert srv.open_connections >= 300
    finally:
        for s in idle: s.close()


def test_a_trickling_request_gets_408_within_the_deadline(server):
    srv, url, body = server
    old, srv.request_timeout = srv.request_timeout, 0.5
    try:
        with socket.create_connection(srv.server_address[:2], timeout=5) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")   # the rest never comes
            t0 = time.monotonic()
            got = b''.join(iter(lambda: s.recv(4096), b''))
        assert got.startswith(b'HTTP/1.1 408') and time.monotonic() - t0 < 3
    finally: srv.request_timeout = old


def test_too_many_connections_are_refused_with_503_not_held():
    from http.server import BaseHTTPRequestHandler
    class H(BaseHTTPRequestHandler):
        def do_GET(self): self.send_response(204); self.end_headers()
        def log_message(self, *a): pass
    srv = PooledHTTPServer(('127.0.0.1', 0), H, max_connections=3)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    held = [socket.create_connection(srv.server_address) for _ in range(3)]
    try:
        time.sleep(0.2)
        with socket.create_connection(srv.server_address, timeout=5) as s:
            assert s.recv(100).startswith(b'HTTP/1.1 503')
    finally:
        for s in held: s.close()
        srv.shutdown(); srv.server_close()


def test_an_unknown_setting_is_refused():
    with pytest.raises(TypeError, match="unknown setting 'worker'"):
        PooledHTTPServer(('127.0.0.1', 0), None, worker=2)

"""Issue 32, points 2-7 for the retrieval server: no request from another site, strict Content-Length, a 400 (never
silence or a 5xx) for every malformed request, capped replies, a listen queue for bursts, slow clients dropped, ::1."""
import json, socket, time
import pytest
from pettingllms_nb.envs.search import generate_world, index_passages, serve_in_thread
from pettingllms_nb.envs.search import retrieval as R

IDX = index_passages(generate_world(0).docs)


@pytest.fixture(scope='module')
def server():
    with serve_in_thread(IDX) as url: yield url


def _addr(url): return url.split('//')[1].split('/')[0].rsplit(':', 1)


def raw(url, data:bytes, wait:float=3.0) -> bytes:
    host, port = _addr(url)
    s = socket.create_connection((host.strip('[]'), int(port)), timeout=wait)
    s.sendall(data)
    out = b''
    try:
        while chunk := s.recv(1 << 16): out += chunk
    except socket.timeout: pass
    s.close()
    return out


def post(url, body:bytes, headers:dict|None=None) -> tuple[int, dict]:
    host, port = _addr(url)
    h = {'Host': f'{host}:{port}', 'Content-Type': 'application/json', 'Content-Length': str(len(body)), 'Connection': 'close',
         **(headers or {})}
    out = raw(url, (f"POST /retrieve HTTP/1.1\r\n" + ''.join(f"{k}: {v}\r\n" for k, v in h.items() if v is not None)
                    + "\r\n").encode() + body)
    head, _, rest = out.partition(b'\r\n\r\n')
    return int(head.split(b' ')[1]), json.loads(rest or b'{}')


def test_a_good_request_is_answered(server):
    code, reply = post(server, json.dumps({'queries': ['who founded'], 'topk': 2}).encode())
    assert code == 200 and len(reply['result'][0]) == 2


@pytest.mark.parametrize('headers, code', [({'Content-Type': 'text/plain'}, 415), ({'Origin': 'http://attacker.example'}, 403),
                                           ({'Content-Length': 'abc'}, 400), ({'Content-Length': '-1'}, 400),
                                           ({'Content-Length': str(R.MAX_REQUEST_BYTES + 1)}, 413)])
def test_requests_from_elsewhere_or_with_bad_lengths_are_refused(server, headers, code):
    got, reply = post(server, json.dumps({'query': 'x'}).encode(), headers)
    assert got == code and reply['error'], reply


@pytest.mark.parametrize('body', [b'[' * 100_000 + b']' * 100_000, json.dumps({'query': 'x', 'topk': 0}).encode(),
                                  json.dumps({'queries': ['a'] * 1024, 'topk': 100}).encode(), b'{"query": '])
def test_malformed_requests_are_a_400(server, body):
    code, reply = post(server, body)
    assert code == 400 and reply['error'], reply


def test_no_request_is_smuggled_after_an_oversized_body(server):
    host, port = _addr(server)
    second = f"GET /health HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    head = (f"POST /retrieve HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {R.MAX_REQUEST_BYTES + 10}\r\n\r\n").encode()
    out = raw(server, head + b' ' * 100 + second)
    assert out.startswith(b'HTTP/1.1 413') and out.count(b'HTTP/1.1 ') == 1


def test_the_server_takes_bursts_drops_slow_clients_and_checks_its_topk(server):
    srv = R.make_server(IDX, port=0)
    assert srv.request_queue_size >= 128
    srv.server_close()
    with pytest.raises(ValueError, match=r"topk=0; expected an integer in \[1, 100\]"): R.make_server(IDX, port=0, topk=0)
    host, port = _addr(server)
    s = socket.create_connection((host, int(port)))
    s.sendall(b"POST /retrieve HTTP/1.1\r\n")            # and then nothing
    limit = srv.request_timeout + 5
    s.settimeout(limit)
    t0 = time.perf_counter()
    got = b''.join(iter(lambda: s.recv(4096), b''))   # until the server hangs up
    assert got.startswith(b'HTTP/1.1 408') and time.perf_counter() - t0 <= limit
    s.close()


def test_ipv6_loopback_works():
    if not socket.has_ipv6: pytest.skip('no IPv6 here')
    try: srv = R.make_server(IDX, host='::1', port=0)
    except OSError as e: pytest.skip(f'::1 is not configured here: {e}')
    srv.server_close()
    assert srv.url.startswith('http://[::1]:')


@pytest.mark.parametrize('length, body, code', [('abc', b'{}', 400), ('-1', b'{}', 400), (str(2 << 20), b'{}', 413),
                                               (None, b'[' * 50_000 + b']' * 50_000, 400), (None, b'[1]', 400),
                                               (None, b'{"model": "base", "n": "many"}', 400)])
def test_the_policy_server_stand_in_answers_bad_requests_with_a_400(length, body, code):
    from pettingllms_nb.models.servers import StandInServer
    srv = StandInServer()
    try:
        host, port = '127.0.0.1', srv.server_port
        head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {length if length is not None else len(body)}\r\nConnection: close\r\n\r\n").encode()
        out = raw(f"http://{host}:{port}/v1", head + body)
        assert out.split(b' ')[1] == str(code).encode(), out[:200]
        assert srv.request_queue_size >= 128
    finally: srv.stop()


def test_the_client_deadline_is_per_request_not_per_read():
    "Issue 26: HttpRetriever(timeout=1.0) took 8 s on a reply that trickled in a byte at a time."
    import threading
    from pettingllms_nb.envs.search import HttpRetriever, RetrievalError
    lsock = socket.socket(); lsock.bind(('127.0.0.1', 0)); lsock.listen(4)
    port, stop = lsock.getsockname()[1], threading.Event()
    def trickle():
        while not stop.is_set():
            try: c, _ = lsock.accept()
            except OSError: return
            c.recv(65536)
            reply = b'{"result": [[]]}'
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (len(reply) + 40))
            for b in reply + b' ' * 40:
                if stop.is_set(): break
                try: c.sendall(bytes([b])); time.sleep(0.2)
                except OSError: break
            c.close()
    th = threading.Thread(target=trickle, daemon=True); th.start()
    r = HttpRetriever(f"http://127.0.0.1:{port}/retrieve", timeout=1.0, retries=0)
    t0 = time.perf_counter()
    with pytest.raises(RetrievalError, match='no reply within 1 s'): r.search('x', 1)
    took = time.perf_counter() - t0
    stop.set(); lsock.close()
    assert took < 2.5, took

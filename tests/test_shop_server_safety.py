"""Issue 32, points 2-5 for the shop: sessions that cannot be guessed, forms only from the shop itself, strict
Content-Length (no second request smuggled in a body), a listen queue for bursts, and slow clients dropped."""
import re, socket, time
import pytest
from pettingllms_nb.envs.web.shop import ShopApp, ShopServer, MAX_BODY
from pettingllms_nb.core.parsing import parse_content_length as content_length

GOAL = {'asin': None, 'instruction': 'buy anything', 'attributes': [], 'options': {}, 'price_upper': 1e9}


@pytest.fixture
def shop():
    app = ShopApp()
    with ShopServer(app) as srv: yield app, srv


def raw(srv, data:bytes, read_for:float=2.0) -> bytes:
    "Send raw bytes to the server and read what comes back until it closes or goes quiet."
    s = socket.create_connection(srv.httpd.server_address, timeout=read_for)
    s.sendall(data)
    out = b''
    try:
        while chunk := s.recv(65536): out += chunk
    except socket.timeout: pass
    s.close()
    return out


def test_session_ids_cannot_be_guessed(shop):
    app, srv = shop
    ids = [app.new_session(GOAL).sid for _ in range(50)] + [app.copy_session(app.new_session(GOAL).sid).sid]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r'[0-9a-f]{32}', i) for i in ids)


def test_a_form_from_another_site_or_host_is_refused(shop):
    app, srv = shop
    victim = app.new_session(GOAL)
    sid, port = victim.sid, srv.httpd.server_address[1]
    body = f"id={next(iter(app.catalogue.by_id))}".encode()
    def post(origin=None, host=f'127.0.0.1:{port}', ctype='application/x-www-form-urlencoded'):
        head = f"POST /s/{sid}/add HTTP/1.1\r\nHost: {host}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        if origin: head += f"Origin: {origin}\r\n"
        return raw(srv, head.encode() + b"Connection: close\r\n\r\n" + body).split(b'\r\n', 1)[0]
    assert post(origin='http://attacker.example') == b'HTTP/1.1 403 Forbidden'
    assert post(host='attacker.example') == b'HTTP/1.1 421 Misdirected Request'
    assert post(ctype='text/plain') == b'HTTP/1.1 415 Unsupported Media Type'
    assert victim.cart == []                                                     # nothing reached the cart
    assert post(origin=f'http://127.0.0.1:{port}') == b'HTTP/1.1 303 See Other'    # the shop's own form
    assert len(victim.cart) == 1


@pytest.mark.parametrize('length', ['-1', 'abc', '1e3', ' '])
def test_a_bad_content_length_is_a_400(shop, length):
    app, srv = shop
    sid = app.new_session(GOAL).sid
    head = f"POST /s/{sid}/search HTTP/1.1\r\nHost: 127.0.0.1:{srv.httpd.server_address[1]}\r\nContent-Length: {length}\r\n\r\n"
    assert raw(srv, head.encode() + b'q=x').startswith(b'HTTP/1.1 400')
    assert content_length(length) is None and content_length(None) == 0 and content_length('12') == 12


def test_an_oversized_body_is_refused_and_smuggles_nothing(shop):
    "A body declared longer than the cap: refused with 413 and the connection closed; the bytes after the cap are never a request."
    app, srv = shop
    victim = app.new_session(GOAL)
    port = srv.httpd.server_address[1]
    smuggled = f"GET /s/{victim.sid}/search?q=smuggled HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    head = f"POST /s/{app.new_session(GOAL).sid}/search HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {MAX_BODY + 10_000}\r\n\r\n"
    out = raw(srv, head.encode() + b'q=' + b'x' * (MAX_BODY - 2) + smuggled)
    assert out.startswith(b'HTTP/1.1 413') and out.count(b'HTTP/1.1') == 1
    assert 'smuggled' not in repr(victim.__dict__)


def test_bursts_wait_in_a_long_queue_and_slow_clients_are_dropped(shop):
    from pettingllms_nb.envs.web import shop as S
    app, srv = shop
    assert srv.httpd.request_queue_size >= 128
    s = socket.create_connection(srv.httpd.server_address)
    s.sendall(b"GET / HTTP/1.1\r\n")                      # and then nothing: a slowloris client
    limit = srv.httpd.request_timeout + 5
    s.settimeout(limit)
    t0 = time.perf_counter()
    got = b''.join(iter(lambda: s.recv(4096), b''))   # until the server hangs up
    assert got.startswith(b'HTTP/1.1 408') and time.perf_counter() - t0 <= limit
    s.close()

"OpenAIPolicy against a local fake OpenAI-compatible server (127.0.0.1 only): routing, n, concurrency, retries, errors, log-probs, token ids, rollout."
import asyncio, json, logging, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
from importlib.util import find_spec
from types import SimpleNamespace
import pytest

if find_spec("httpx") is None and find_spec("httpx2") is None:
    pytest.skip("needs httpx: pip install 'pettingllms-nb[openai]'", allow_module_level=True)

from pettingllms_nb.engine.policies import Request
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.models.openai import OpenAIPolicy, OpenAIServerError, chat_payload, parse_chat_response
from pettingllms_nb.envs.toy import scout_truth, runner_trust
KEY = "sk-topsecret-4242"


def default_reply(body, i):
    return f"model={body['model']} n={body.get('n', 1)} i={i} prompt={body['messages'][-1]['content']}"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args): pass

    def send_json(self, status, obj, headers=()):
        out = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        for k, v in headers: self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self):
        s = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with s.lock:
            s.bodies.append(body); s.auth.append(self.headers.get("Authorization"))
            s.in_flight += 1; s.peak = max(s.peak, s.in_flight)
            fail = s.fail.pop(0) if s.fail else None
        try:
            time.sleep(s.delay)
            if not self.path.endswith("/chat/completions"):
                return self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            if fail is not None:
                return self.send_json(fail, {"error": {"message": f"fake failure {fail}"}}, s.fail_headers)
            if body["model"] == "bad-request":
                return self.send_json(400, {"error": {"message": f"'bad-request' is not a valid model (your header: {self.headers.get('Authorization')})",
                                                      "type": "invalid_request_error"}})
            if body["model"] == "broken":
                return self.send_json(200, {"choices": [{"index": 0, "text": "no message here"}]})
            if body["model"] == "html":
                out = b"<html>502 Bad Gateway</html>"
                self.send_response(200); self.send_header("Content-Length", str(len(out))); self.end_headers()
                return self.wfile.write(out)
            choices = []
            for i in range(body.get("n", 1)):
                text = s.reply(body, i)
                ch = {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                if s.send_logprobs and body.get("logprobs"):
                    ch["logprobs"] = {"content": [{"token": f"token_id:{ord(c)}" if body.get("return_tokens_as_token_ids") else c,
                                                   "logprob": -0.01 * (k + 1), "top_logprobs": []} for k, c in enumerate(text)]}
                if s.send_token_ids and body.get("return_token_ids"): ch["token_ids"] = [ord(c) for c in text]
                choices.append(ch)
            out = {"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"], "choices": choices}
            if s.send_token_ids and body.get("return_token_ids"): out["prompt_token_ids"] = [1, 2, 3]
            self.send_json(200, out)
        finally:
            with s.lock: s.in_flight -= 1


class FakeServer(ThreadingHTTPServer):
    request_queue_size, daemon_threads = 64, True      # the default backlog of 5 stalls a burst of connections by 1 s


@pytest.fixture(scope="module")
def _server():
    srv = FakeServer(("127.0.0.1", 0), Handler)
    srv.lock = threading.Lock()
    srv.url = f"http://127.0.0.1:{srv.server_port}/v1"
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield srv
    srv.shutdown(); srv.server_close(); th.join(5)


@pytest.fixture
def server(_server):
    "The fake server, reset: echo replies, log-probs on, token ids on request, no failures, no delay."
    _server.bodies, _server.auth, _server.fail, _server.fail_headers = [], [], [], []
    _server.in_flight, _server.peak, _server.delay = 0, 0, 0.0
    _server.reply, _server.send_logprobs, _server.send_token_ids = default_reply, True, True
    return _server


def policy(server, **kw):
    kw.setdefault("model", "echo")
    return OpenAIPolicy(server.url, api_key=kw.pop("api_key", KEY), backoff=kw.pop("backoff", 0.01), **kw)


def test_n_completions_per_request(server):
    reqs = [Request("scout", {"text": "a"}, n=1), Request("scout", {"text": "b"}, n=3), Request("runner", {"text": "c"}, n=2)]
    outs = policy(server).generate(reqs)
    assert [len(o) for o in outs] == [1, 3, 2]
    assert [c.text for c in outs[1]] == [f"model=echo n=3 i={i} prompt=b" for i in range(3)]
    assert [b["n"] for b in server.bodies] and sorted(b["n"] for b in server.bodies) == [1, 2, 3]   # one POST per request


def test_model_per_role_routing(server):
    pol = policy(server, model=None, models={"scout": "scout-lora", "runner": "runner-lora"})
    outs = pol.generate([Request("scout", {"text": "x"}), Request("runner", {"text": "y"}), Request("scout", {"text": "z"}, adapter="scout-v2")])
    assert [o[0].text.split()[0] for o in outs] == ["model=scout-lora", "model=runner-lora", "model=scout-v2"]
    assert [o[0].meta["model"] for o in outs] == ["scout-lora", "runner-lora", "scout-v2"]
    with pytest.raises(ValueError, match="no model for role 'judge'"):
        pol.generate([Request("judge", {"text": "?"})])
    fallback = policy(server, model="shared", models={"scout": "scout-lora"})
    assert fallback.model_for(Request("runner", {"text": "?"})) == "shared"


def test_concurrency_is_bounded_by_max_concurrency(server):
    server.delay = 0.05
    outs = policy(server, max_concurrency=3).generate([Request("a", {"text": str(i)}) for i in range(12)])
    assert len(outs) == 12 and 1 < server.peak <= 3
    server.peak = 0
    policy(server, max_concurrency=1).generate([Request("a", {"text": str(i)}) for i in range(4)])
    assert server.peak == 1


def test_agenerate_is_concurrent(server):
    pol = policy(server, max_concurrency=8)
    pol.generate([Request("a", {"text": "warm-up"})])
    server.delay = 0.2
    t0 = time.perf_counter()
    outs = asyncio.run(pol.agenerate([Request("a", {"text": str(i)}) for i in range(8)]))
    assert len(outs) == 8 and server.peak >= 4
    assert time.perf_counter() - t0 < 1.0        # one after another they would take at least 1.6 s


def test_retries_recover_from_429_and_5xx(server, caplog):
    server.fail, server.fail_headers = [429, 500, 503], [("Retry-After", "0.01")]
    with caplog.at_level(logging.WARNING, logger="pettingllms_nb.models.openai"):
        out = policy(server, max_retries=3).generate([Request("a", {"text": "hi"})])
    assert out[0][0].text == "model=echo n=1 i=0 prompt=hi"
    assert len(server.bodies) == 4
    assert [r.message.split("HTTP ")[1][:3] for r in caplog.records] == ["429", "500", "503"]
    assert all(KEY not in r.getMessage() for r in caplog.records)


def test_retries_are_bounded(server):
    server.fail = [500] * 10
    with pytest.raises(OpenAIServerError, match=r"failed 3 times; the last failure: HTTP 500: fake failure 500"):
        policy(server, max_retries=2).generate([Request("a", {"text": "hi"})])
    assert len(server.bodies) == 3


def test_connection_errors_are_retried_then_raised():
    with pytest.raises(OpenAIServerError, match="failed 2 times; the last failure: ConnectError"):
        OpenAIPolicy("http://127.0.0.1:9/v1", model="echo", max_retries=1, backoff=0.01, timeout=2).generate([Request("a", {"text": "?"})])


def test_400_raises_with_server_message_and_without_api_key(server):
    with pytest.raises(OpenAIServerError) as e:
        policy(server, model="bad-request").generate([Request("scout", {"text": "?"})])
    msg = str(e.value)
    assert "'bad-request' is not a valid model" in msg and "HTTP 400" in msg and "role 'scout'" in msg
    assert KEY not in msg and "Bearer ***" in msg
    assert e.value.status == 400 and len(server.bodies) == 1          # not retried
    assert server.auth == [f"Bearer {KEY}"]


def test_a_failed_request_fails_the_batch(server):
    pol = policy(server, model=None, models={"scout": "echo", "runner": "bad-request"})
    with pytest.raises(OpenAIServerError, match="HTTP 400"):
        pol.generate([Request("scout", {"text": "a"}), Request("runner", {"text": "b"})])


def test_malformed_response_names_what_is_missing(server):
    with pytest.raises(OpenAIServerError, match=r"malformed chat completion: choices\[0\] has no 'message'"):
        policy(server, model="broken").generate([Request("a", {"text": "?"})])
    with pytest.raises(OpenAIServerError, match="the response is not JSON: '<html>502"):
        policy(server, model="html").generate([Request("a", {"text": "?"})])
    with pytest.raises(ValueError, match="no 'choices'"):
        parse_chat_response({"object": "error"}, 1)
    with pytest.raises(ValueError, match="2 choices for n=3"):
        parse_chat_response({"choices": [{"message": {"content": "a"}}] * 2}, 3)


def test_text_only_responses_give_no_token_ids(server):
    server.send_logprobs = False
    c = policy(server).generate([Request("a", {"text": "hi"}, n=2)])[0]
    assert [(x.token_ids, x.logprobs) for x in c] == [(None, None), (None, None)]
    server.send_logprobs = True
    c = policy(server).generate([Request("a", {"text": "hi"})])[0][0]
    assert c.token_ids is None and c.logprobs is not None          # log-probs alone are not trainable


def test_logprobs_parsed_when_present(server):
    c = policy(server).generate([Request("a", {"text": "hi"})])[0][0]
    assert c.logprobs == pytest.approx([-0.01 * (k + 1) for k in range(len(c.text))])
    assert server.bodies[0]["logprobs"] is True
    policy(server, logprobs=False).generate([Request("a", {"text": "hi"})])
    assert "logprobs" not in server.bodies[1]


def test_token_ids_in_both_vllm_formats(server):
    pol = policy(server, return_token_ids=True)
    c = pol.generate([Request("a", {"text": "hi"})])[0][0]
    assert server.bodies[0]["return_token_ids"] is True and server.bodies[0]["return_tokens_as_token_ids"] is True
    assert c.token_ids == [ord(ch) for ch in c.text] and len(c.logprobs) == len(c.token_ids)
    assert c.meta["prompt_ids"] == [1, 2, 3]
    server.send_token_ids = False                       # an older vLLM: only "token_id:123" strings in the log-probs
    c = pol.generate([Request("a", {"text": "hi"})])[0][0]
    assert c.token_ids == [ord(ch) for ch in c.text] and "prompt_ids" not in c.meta


def test_missing_token_ids_warn_once(server, caplog):
    server.send_logprobs, server.send_token_ids = False, False
    pol = policy(server, return_token_ids=True)
    with caplog.at_level(logging.WARNING, logger="pettingllms_nb.models.openai"):
        pol.generate([Request("a", {"text": "hi"})]); pol.generate([Request("a", {"text": "hi"})])
    assert sum("returned no token ids" in r.getMessage() for r in caplog.records) == 1


def test_sampling_is_plain(server):
    samp = {"temperature": 0.6, "max_tokens": 7, "stop": ["\n\n"], "seed": 3}
    policy(server).generate([Request("a", {"text": "hi"}, sampling=samp)])
    b = server.bodies[0]
    assert (b["temperature"], b["max_tokens"], b["stop"], b["seed"], b["top_p"]) == (0.6, 7, ["\n\n"], 3, 1)
    assert not {"top_k", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty"} & set(b)
    body = chat_payload(Request("a", {"text": "x"}, sampling={"top_p": 1.0, "top_k": -1}), "m")   # neutral knobs are dropped
    assert "top_k" not in body and body["top_p"] == 1 and "seed" not in body and "stop" not in body
    assert policy(server, max_tokens=99).payload(Request("a", {"text": "x"}))["max_tokens"] == 99
    with pytest.raises(ValueError, match="plain sampling"):
        policy(server, extra_body={"top_k": 20})
    with pytest.raises(ValueError, match="sets itself|policy sets"):
        policy(server, extra_body={"n": 4})


def test_api_key_from_env_never_shown(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pol = OpenAIPolicy(server.url, model="echo")
    out = pol.generate([Request("a", {"text": "hi"})])
    assert server.auth == [f"Bearer {KEY}"]
    assert KEY not in repr(pol) and KEY not in repr(out)
    monkeypatch.delenv("OPENAI_API_KEY")
    OpenAIPolicy(server.url, model="echo").generate([Request("a", {"text": "hi"})])
    assert server.auth[-1] is None                            # no key: no Authorization header


def _relay_reply(body, i):
    "The toy world's scout tells the truth and its runner trusts the hint, answered by the model named like the role."
    text = body["messages"][-1]["content"]
    req = SimpleNamespace(text=text)
    return {"scout-m": scout_truth, "runner-m": runner_trust}[body["model"]](req)


def test_rollout_of_the_toy_world_end_to_end(server):
    server.reply = _relay_reply
    pol = policy(server, model=None, models={"scout": "scout-m", "runner": "runner-m"}, return_token_ids=True)
    trace = rollout("toy_relay", pol, mode="tree", sample_num=3, seeds=range(4), sampling={"temperature": 1.0, "max_tokens": 16})
    assert len(trace.episodes) == 4 and all(e.success for e in trace.episodes)
    assert {s.role for s in trace.steps} == {"scout", "runner"}
    assert all(len(g) == 3 for g in trace.groups().values())
    assert all(s.token_ids and len(s.token_ids) == len(s.logprobs) and s.meta["prompt_ids"] == [1, 2, 3] for s in trace.steps)
    assert {b["model"] for b in server.bodies} == {"scout-m", "runner-m"} and all(b["n"] == 3 for b in server.bodies)
    assert KEY not in json.dumps([s.meta for s in trace.steps])


def test_registered_as_openai():
    from pettingllms_nb.core.registry import registry
    assert registry.get("policy", "openai") is OpenAIPolicy

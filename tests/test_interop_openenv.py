"OpenEnv: our environments served with OpenEnv's protocol, played by OpenEnv's own clients; our engine against a server it did not start."
import asyncio, os, signal, subprocess, sys, time
import pytest

pytest.importorskip('openenv', reason="the OpenEnv adapter needs the [interop] extra (pip install -e '.[interop]')")
import httpx
from openenv.core.generic_client import GenericEnvClient
from pettingllms_nb.core.agent import run_sync
from pettingllms_nb.core.registry import registry
from pettingllms_nb.engine.policies import Request
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.interop.openenv import LocalServer, TextEnvClient, TextAction
from pettingllms_nb.interop.session import free_port, relay_roles, RelayPolicy

ORACLE = registry.scripted('stateful_env', 'oracle')


def answer(o): return ORACLE(Request(o['role'], o['prompt'], problem_uid=o['problem_uid'], turn_idx=o['turn']))


def _serve():
    "`pettingllms-nb serve stateful_sudoku --port N` in a process of its own (a server this test process did not start)."
    port = free_port()
    code = f"from pettingllms_nb.cli import main; main(['serve', 'stateful_sudoku', '--port', '{port}'])"
    p = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + '/health', timeout=1).status_code == 200: break
        except httpx.HTTPError: pass
        if p.poll() is not None: pytest.fail(f"serve exited: {p.stderr.read().decode()[-2000:]}")
        time.sleep(0.1)
    return url, p


def _stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(10)


@pytest.fixture(scope='module')
def cli_server():
    url, p = _serve()
    yield url, p
    _stop(p)


@pytest.fixture
def dying_server():
    url, p = _serve()
    yield url, p
    _stop(p)


def test_openenvs_generic_client_plays_sudoku_turn_by_turn(cli_server):
    "OpenEnv's own GenericEnvClient (dict actions), against the CLI's server: each observation names whose turn it is."
    url, _ = cli_server
    with GenericEnvClient(base_url=url).sync() as env:
        r, roles = env.reset(seed=3), []
        while not r.done:
            o = r.observation
            roles.append((o['turn'], o['role']))
            r = env.step({'text': answer(o), 'role': o['role']})
        assert r.observation['success'] and r.observation['role'] is None
        assert roles[:2] == [(0, 'tool_call_agent'), (0, 'plan_agent')]
        assert env.state()['turn_order'] == ['tool_call_agent', 'plan_agent']
        meta = httpx.get(url + '/metadata').json()
        assert 'tool_call_agent' in meta['description']


def test_a_wrong_role_is_refused_and_the_session_goes_on(cli_server):
    url, _ = cli_server
    with TextEnvClient(base_url=url).sync() as env:
        r = env.reset(seed=0)
        with pytest.raises(RuntimeError, match="tool_call_agent"):
            env.step(TextAction(text='x', role='plan_agent'))
        r = env.step(TextAction(text='not a program', role='tool_call_agent'))
        assert r.observation.role == 'plan_agent' and r.observation.last['format_error']


def test_fifty_concurrent_sessions_answered_and_none_left():
    async def play(url, seed):
        async with TextEnvClient(base_url=url) as c:
            r, n = await c.reset(seed=seed), 0
            while not r.done:
                r = await c.step(TextAction(text=answer(r.observation.model_dump()))); n += 1
            return r.observation.success, n

    with LocalServer('stateful_sudoku', max_sessions=64) as srv:
        async def many(): return await asyncio.gather(*(play(srv.url, s) for s in range(50)))
        results = run_sync(many())
        for _ in range(100):
            if srv.active_sessions == 0: break
            time.sleep(0.05)
        assert srv.active_sessions == 0
    assert len(results) == 50 and all(ok for ok, _ in results) and all(n >= 2 for _, n in results)


def test_engine_rolls_out_against_a_server_it_did_not_start(cli_server):
    url, _ = cli_server
    t = rollout('openenv_env', RelayPolicy(ORACLE), seeds=(0, 1), url=url, turn_order=relay_roles(['tool_call_agent', 'plan_agent']))
    direct = rollout('stateful_sudoku', ORACLE, seeds=(0, 1))
    assert [(s.reward, s.success, s.prompt) for s in t] == [(s.reward, s.success, s.prompt) for s in direct]
    assert all(e.success for e in t.episodes)


def test_a_server_that_dies_is_an_infrastructure_failure(dying_server):
    url, proc = dying_server

    class _KillFirst:
        def generate(self, reqs):
            if proc.poll() is None: os.killpg(proc.pid, signal.SIGKILL); proc.wait(10)
            return RelayPolicy(ORACLE).generate(reqs)

    t = rollout('openenv_env', _KillFirst(), seeds=(0,), url=url, timeout_s=5,
                turn_order=relay_roles(['tool_call_agent', 'plan_agent']))
    assert t.steps[0].reward is None and 'RemoteError' in t.steps[0].infra_error
    assert t.episodes[0].infra_errors == 1 and t.episodes[0].done and not t.episodes[0].success


def test_an_unreachable_server_is_named():
    from pettingllms_nb.interop.session import RemoteError
    with pytest.raises(RemoteError, match='opening a remote episode failed'):
        rollout('openenv_env', RelayPolicy(ORACLE), seeds=(0,), url=f"http://127.0.0.1:{free_port()}", timeout_s=2,
                turn_order=relay_roles(['tool_call_agent', 'plan_agent']))

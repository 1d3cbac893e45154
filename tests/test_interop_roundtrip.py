"The round trip, check_env style: our env → a standard → our engine gives the same trace as our env directly."
import pytest
from pettingllms_nb.core.registry import registry, register_env
from pettingllms_nb.interop.session import RelayEnv, TextSession, check_round_trip, relay_roles, RelayPolicy

CASES = [('stateful_sudoku', 'stateful_env'), ('search_env', 'search_env')]


class _InProcess:
    "A `TextSession` behind the three methods a remote offers (needs no extra)."
    def __init__(self, name): self.session = TextSession(name)
    def reset(self, seed): return self.session.reset(seed)
    def step(self, text, role): self.session.step(text, role); return self.session.observation()
    def close(self): self.session.close()


class _InProcessRelay(RelayEnv):
    def connect(self): return _InProcess(self.config['target'])


@pytest.fixture(autouse=True)
def _relays():
    "Registered when a test runs (not at collection, where other files list every registered env)."
    register_env('_test_inprocess_relay')(_InProcessRelay)


@pytest.mark.parametrize('name,env', CASES)
@pytest.mark.parametrize('policy', ['oracle', 'random'])
def test_in_process_relay_round_trip(name, env, policy):
    direct, relayed, diff = check_round_trip(name, '_test_inprocess_relay', {'target': name}, registry.scripted(env, policy),
                                             seeds=(0, 1, 2))
    assert diff == [] and len(direct) == len(relayed) > 0


@pytest.mark.parametrize('name,env', CASES)
def test_pettingzoo_round_trip(name, env):
    pytest.importorskip('pettingzoo', reason="the PettingZoo adapter needs the [interop] extra (pip install -e '.[interop]')")
    for policy, mode, n in (('oracle', 'independent', 1), ('random', 'independent', 2), ('random', 'tree', 2)):
        direct, relayed, diff = check_round_trip(name, 'pettingzoo_env', {'aec': name}, registry.scripted(env, policy),
                                                 seeds=(0, 3), mode=mode, sample_num=n)
        assert diff == [], (policy, mode, diff[:5])
        assert [s.role for s in direct] == [s.role.removeprefix('remote.') for s in relayed]


@pytest.mark.parametrize('name,env', CASES)
def test_openenv_round_trip(name, env):
    pytest.importorskip('openenv', reason="the OpenEnv adapter needs the [interop] extra (pip install -e '.[interop]')")
    from pettingllms_nb.interop.openenv import LocalServer
    with LocalServer(name) as srv:
        for policy, mode in (('oracle', 'independent'), ('random', 'tree')):
            *_, diff = check_round_trip(name, 'openenv_env', {'url': srv.url}, registry.scripted(env, policy), seeds=(1, 4),
                                        mode=mode, sample_num=2 if mode == 'tree' else 1)
            assert diff == [], (policy, mode, diff[:5])
    assert srv.active_sessions == 0


def test_round_trip_diff_sees_a_difference():
    "A relay that changes what it reports is caught."
    class _Liar(_InProcess):
        def step(self, text, role):
            obs = super().step(text, role)
            obs['last'] = {**obs['last'], 'reward': obs['last']['reward'] + 1.0}
            return obs

    @register_env('_test_lying_relay')
    class _LyingRelay(RelayEnv):
        def connect(self): return _Liar('stateful_sudoku')

    *_, diff = check_round_trip('stateful_sudoku', '_test_lying_relay', {}, registry.scripted('stateful_env', 'oracle'), seeds=(0,))
    assert diff and all('reward' in d for d in diff)


def test_relay_turn_order_must_be_the_remotes():
    "Roles given in another order than the remote's are a bug that stops the rollout, named (a role may decline a turn, as a game's player does, but the remote's turn must end with ours)."
    from pettingllms_nb.engine.rollout import rollout
    with pytest.raises(RuntimeError, match="still expects 'plan_agent' to answer in it"):
        rollout('_test_inprocess_relay', RelayPolicy(registry.scripted('stateful_env', 'oracle')), seeds=(0,),
                target='stateful_sudoku', turn_order=relay_roles(['plan_agent', 'tool_call_agent']))


def test_without_the_extra_the_relays_are_listed_with_the_extra_to_install(tmp_path):
    "A machine without pettingzoo and openenv-core lists both relays as unavailable, naming the [interop] extra."
    import subprocess, sys
    code = ("import sys\n"
            "sys.modules.update(pettingzoo=None, openenv=None)   # import fails, find_spec says absent: as if not installed\n"
            "from pettingllms_nb.core.registry import registry\n"
            "rows = {r[1]: r for r in registry.show() if r[1] in ('pettingzoo_env', 'openenv_env')}\n"
            "print(repr(rows))\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    rows = eval(out)
    assert set(rows) == {'pettingzoo_env', 'openenv_env'}
    assert all(r[2] == 'unavailable' and 'interop' in r[4] for r in rows.values()), rows


@pytest.mark.parametrize('name', ['stateful_sudoku', 'search_env', 'tiny_sudoku'])
def test_check_env_runs_the_round_trip_when_asked(name):
    "check_env's `round_trip` (registered by interop.pettingzoo, never imported by the engine) passes on our environments."
    pytest.importorskip('pettingzoo', reason="the round-trip check needs the [interop] extra (pip install -e '.[interop]')")
    from pettingllms_nb.engine.check_env import check_env
    report = check_env(name, extra_checks=['round_trip'])
    assert report.ok and report.results[-1].name == 'round_trip' and 'the same' in report.results[-1].detail


def test_check_env_round_trip_catches_a_difference(monkeypatch):
    "A relay that reports other rewards fails the `round_trip` check, with the differences in its detail."
    pytest.importorskip('pettingzoo', reason="the round-trip check needs the [interop] extra (pip install -e '.[interop]')")
    from pettingllms_nb.interop import pettingzoo as pz
    from pettingllms_nb.engine.check_env import check_env
    step = pz.AECRemote.step
    def lying(self, text, role):
        obs = step(self, text, role)
        return {**obs, 'last': {**obs['last'], 'reward': (obs['last']['reward'] or 0.0) + 1.0}}
    monkeypatch.setattr(pz.AECRemote, 'step', lying)
    report = check_env('stateful_sudoku', extra_checks=['round_trip'], raise_on_fail=False)
    assert [r.name for r in report.failed] == ['round_trip'] and 'reward' in report.failed[0].detail


def test_without_the_extra_check_env_says_what_to_install():
    "Without pettingzoo, asking for the round trip is a failed check naming the [interop] extra, not an ImportError."
    import subprocess, sys
    code = ("import sys\n"
            "sys.modules.update(pettingzoo=None, openenv=None)\n"
            "from pettingllms_nb.engine.check_env import check_env\n"
            "r = check_env('stateful_sudoku', extra_checks=['round_trip'], raise_on_fail=False)\n"
            "print(repr([(x.name, x.ok, x.detail) for x in r.failed]))\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    failed = eval(out)
    assert [f[0] for f in failed] == ['round_trip'] and "[interop]" in failed[0][2], failed

"Our trainer against an OpenEnv server it did not start (`tiny_openenv`): it trains on the remote's roles, a remote that fails mid-episode is infrastructure, and one it cannot reach stops the run with the address."
import json, os, signal, subprocess, sys, time
import pytest

pytest.importorskip('openenv', reason="the OpenEnv adapter needs the [interop] extra (pip install -e '.[interop]')")
import httpx
from pettingllms_nb.core.config import load_config
from pettingllms_nb.core.registry import register_env
from pettingllms_nb.interop.openenv import LocalServer
from pettingllms_nb.interop.session import OpenEnvRelay, OpenEnvRemote, RemoteError, free_port
from pettingllms_nb.training.trainer import Trainer, build_tiny_base

SMALL = ['training.total_training_steps=2', 'training.train_batch_size=4', 'training.train_sample_num=4',
         'training.val_freq=2', 'training.val_size=4']


def _serve(preset):
    "`pettingllms-nb serve PRESET --port N` in a process of its own; (url, process)."
    port = free_port()
    code = f"from pettingllms_nb.cli import main; main(['serve', '{preset}', '--port', '{port}'])"
    p = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + '/health', timeout=1).status_code == 200: return url, p
        except httpx.HTTPError: pass
        if p.poll() is not None: pytest.fail(f"serve exited: {p.stderr.read().decode()[-2000:]}")
        time.sleep(0.1)
    pytest.fail("serve did not answer /health in 60 s")


@pytest.fixture(scope='module')
def base(tmp_path_factory):
    "A tiny base warm-started locally on the environment the server serves (the relay has no oracle of its own)."
    cfg = load_config('tiny_plan_path', ['training.warmstart_steps=150'])
    return build_tiny_base(cfg, tmp_path_factory.mktemp('base'), cache=False)


def test_the_preset_names_the_remote_roles():
    cfg = load_config('tiny_openenv', ['env.kwargs.url=http://127.0.0.1:9'])
    assert cfg.env.name == 'openenv_env' and list(cfg.multi_agent_interaction.turn_order) == ['remote.tool_call_agent', 'remote.plan_agent']


def test_the_trainer_trains_against_a_server_it_did_not_start(base, tmp_path):
    url, p = _serve('tiny_plan_path')
    try:
        tr = Trainer('tiny_openenv', [f'env.kwargs.url={url}', f'base_models.policy_0.path={base}', *SMALL],
                     out_dir=tmp_path / 'run', progress=False)
        ms = list(tr.fit())
        sessions = httpx.get(url + '/metadata', timeout=5)   # the server still answers after the run
    finally:
        os.killpg(p.pid, signal.SIGTERM); p.wait(10)
    assert sessions.status_code == 200
    steps = [m for m in ms if 'adv/steps' in m]
    assert [m['step'] for m in steps] == [1, 2] and tr.step == 2
    assert all(m['train/infra_episodes'] == 0 and m['adv/steps'] > 0 and m['shared/sequences'] > 0 for m in steps)
    assert {'train/remote.tool_call_agent/reward', 'train/remote.plan_agent/reward'} <= set(steps[-1])
    assert any(m['adv/zero_variance_frac'] < 1 and m['shared/grad_norm'] > 0 for m in steps)   # the warm-started base gives a signal
    assert 'val/success_rate' in ms[-1]
    assert (tmp_path / 'run' / 'metrics.jsonl').exists() or any((tmp_path / 'run').rglob('*.json*'))


class _Dropping(OpenEnvRemote):
    "A session whose server goes away at its third answer."
    def step(self, text, role):
        self.n = getattr(self, 'n', 0) + 1
        if self.n == 3: raise ConnectionError("the server went away")
        return super().step(text, role)

@register_env('_dropping_openenv')
class _DroppingRelay(OpenEnvRelay):
    def connect(self): return _Dropping(self.config['url'], self.config['timeout_s'])


def test_a_remote_that_fails_mid_episode_is_infrastructure_and_the_run_goes_on(base, tmp_path):
    with LocalServer('tiny_plan_path') as srv:
        tr = Trainer('tiny_openenv', ['env.name=_dropping_openenv', f'env.kwargs.url={srv.url}',
                                      f'base_models.policy_0.path={base}', *SMALL], out_dir=tmp_path / 'run', progress=False)
        ms = [m for m in tr.fit() if 'adv/steps' in m]
        left = srv.active_sessions
    assert tr.step == 2 and left == 0
    # an episode not over after two answers lost its third: marked, never scored, and left out of the update
    assert all(m['train/infra_episodes'] > 0 and m['adv/infra_steps'] > 0 for m in ms)
    assert all(m['adv/steps'] > m['adv/infra_steps'] for m in ms)


def test_a_server_it_cannot_reach_stops_the_run_with_the_address(tmp_path):
    url = f'http://127.0.0.1:{free_port()}'
    tr = Trainer('tiny_openenv', [f'env.kwargs.url={url}', 'env.kwargs.timeout_s=5', *SMALL], out_dir=tmp_path / 'run', progress=False)
    with pytest.raises(RemoteError, match=url.split('//')[1]):
        list(tr.fit())

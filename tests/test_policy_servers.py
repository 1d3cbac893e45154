"PolicyServers against stand-in vLLM servers on 127.0.0.1 that record every call: spreading, versioned LoRA reloads through /v1/load_lora_adapter, the parity check, failures, and the trainer's adapters served."
import json
from importlib.util import find_spec
import pytest

if find_spec("httpx") is None: pytest.skip("needs httpx: pip install 'pettingllms-nb[openai]'", allow_module_level=True)

from pettingllms_nb.core.registry import make_policy
from pettingllms_nb.engine.policies import Request
from pettingllms_nb.models.servers import (AdapterLoadError, PolicyServers, ServerParityError, StandInReference,
                                           StandInServer, serve_trainer)


@pytest.fixture
def servers():
    ss = [StandInServer('base'), StandInServer('base'), StandInServer('base')]
    yield ss
    for s in ss: s.stop()


def adapter(root, role, step):
    d = root / f"{role}-{step}"
    d.mkdir()
    (d / 'adapter_config.json').write_text(json.dumps({'r': 8}))
    (d / 'adapter_model.safetensors').write_bytes(f"{role} {step}".encode())
    return d


def reqs(n, role='planner', k=1): return [Request(role, {'text': f"q{i}"}, n=k) for i in range(n)]


def test_requests_spread_over_the_servers(servers):
    pol = make_policy('openai_servers', [s.url for s in servers], model='base')
    outs = pol.generate(reqs(9, 'planner', 2))
    assert pol.sent == [3, 3, 3]
    assert [len(o) for o in outs] == [2] * 9
    assert {c.meta['server'] for o in outs for c in o} == {s.url for s in servers}
    for s in servers:
        assert [b['n'] for r, b in s.calls if r == 'completions'] == [2, 2, 2]
        assert all(b.get('return_token_ids') for _, b in s.calls)            # training needs the token ids
    assert all(c.token_ids and c.logprobs and 'prompt_ids' in c.meta for o in outs for c in o)
    assert pol.load == [0, 0, 0]


def test_reload_is_versioned_on_every_server_and_unloads_the_old(servers, tmp_path):
    pol = PolicyServers([s.url for s in servers], model='base')
    p1 = {'planner': adapter(tmp_path, 'planner', 1), 'executor': adapter(tmp_path, 'executor', 1)}
    rep = pol.reload_adapters(p1, reference=StandInReference(p1))
    assert {r: v['served'] for r, v in rep.items()} == {'planner': 'planner@v1', 'executor': 'executor@v1'}
    assert all(v['ok'] and v['servers'] == 3 and v['tokens'] > 0 for v in rep.values())
    p2 = {'planner': adapter(tmp_path, 'planner', 2)}
    pol.reload_adapters(p2, reference=StandInReference(p2))
    for s in servers:
        assert sorted(s.adapters) == ['executor@v1', 'planner@v2']
        loads = [b for r, b in s.calls if r == 'load_lora_adapter']
        assert loads[-1] == {'lora_name': 'planner@v2', 'lora_path': str(p2['planner'])}
        assert [b for r, b in s.calls if r == 'unload_lora_adapter'] == [{'lora_name': 'planner@v1'}]
    out = pol.generate(reqs(3))
    assert {c.meta['model'] for o in out for c in o} == {'planner@v2'}


def test_parity_catches_a_server_serving_other_weights(servers, tmp_path):
    pol = PolicyServers([s.url for s in servers], model='base')
    p1 = {'planner': adapter(tmp_path, 'planner', 1)}
    pol.reload_adapters(p1, reference=StandInReference(p1))
    servers[2].stale['planner'] = servers[2].adapters['planner@v1']          # it keeps the old weights
    p2 = {'planner': adapter(tmp_path, 'planner', 2)}
    with pytest.raises(ServerParityError, match=servers[2].url.replace('.', r'\.')):
        pol.reload_adapters(p2, reference=StandInReference(p2))
    # all the servers agree with each other but not with the trainer: the reference catches that too
    servers[2].stale.clear()
    wrong = {'planner': adapter(tmp_path, 'planner', 'other')}
    with pytest.raises(ServerParityError, match="disagree with the trainer"):
        pol.reload_adapters({'planner': adapter(tmp_path, 'planner', 3)}, reference=StandInReference(wrong))
    rep = pol.check_parity(['planner'], raise_error=False)
    assert rep['planner']['ok'] and pol.parity_reports[-1] is rep


def test_a_refused_load_switches_nothing_and_names_the_server(servers, tmp_path):
    pol = PolicyServers([s.url for s in servers], model='base')
    p1 = {'planner': adapter(tmp_path, 'planner', 1)}
    pol.reload_adapters(p1)
    servers[1].fail = [400]                                                    # the next call to server 1 fails
    with pytest.raises(AdapterLoadError, match='VLLM_ALLOW_RUNTIME_LORA_UPDATING'):
        pol.reload_adapters({'planner': adapter(tmp_path, 'planner', 2)})
    assert pol.served == {'planner': 'planner@v1'} and pol.versions == {'planner': 1}
    assert all(sorted(s.adapters) == ['planner@v1'] for s in servers)           # v2 was unloaded where it had loaded
    with pytest.raises(AdapterLoadError, match='No adapter found'):
        pol.reload_adapters({'planner': tmp_path / 'missing'})


def test_a_failing_server_hands_its_requests_on(servers):
    pol = PolicyServers([s.url for s in servers], model='base', max_retries=0, backoff=0.0)
    servers[0].fail = [503] * 10
    outs = pol.generate(reqs(6))
    assert len(outs) == 6 and pol.sent[0] == 0 and sum(pol.sent) == 6
    with pytest.raises(Exception, match="does not exist"):                     # a wrong model is not a server failure
        pol.generate([Request('nobody', {'text': 'x'}, adapter='no-such-adapter')])
    with pytest.raises(ValueError, match='twice'): PolicyServers([servers[0].url] * 2, model='base')


def test_the_trainers_adapters_are_served_after_every_step(servers, tmp_path):
    pytest.importorskip('torch')
    from pettingllms_nb.training.trainer import Trainer
    tr = Trainer('tiny_plan_path_lora', ['training.warmstart_steps=0', 'training.val_freq=0'], out_dir=tmp_path,
                 progress=False)
    pol = PolicyServers([s.url for s in servers[:2]], model='base')
    push = serve_trainer(tr, pol, parity=False)
    assert set(tr.policies.values()) == {pol} and set(pol.served) == set(tr.roles)
    assert {v: 1 for v in pol.versions.values()} == {1: 1}
    push(tr)
    for s in servers[:2]: assert sorted(s.adapters) == sorted(f"{r}@v2" for r in tr.roles)
    loaded = [b['lora_path'] for r, b in servers[0].calls if r == 'load_lora_adapter']
    assert all((tmp_path / 'served_adapters').as_posix() in p for p in loaded)
    from pathlib import Path
    assert all((Path(p) / 'adapter_config.json').exists() for p in loaded)    # standard PEFT files

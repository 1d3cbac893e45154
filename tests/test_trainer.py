"Trainer: per-adapter updates, the direction of a GRPO step, infrastructure failures and canaries, kill (at the worst moments) → resume, offline."
import json, logging, math, os, signal, subprocess, sys, textwrap
from pathlib import Path
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
from pettingllms_nb.training.trainer import Trainer, CachingWorker
from pettingllms_nb.engine.policies import Request
from pettingllms_nb.engine.trace import Step
from pettingllms_nb.training.advantages import grpo

SMALL = ['training.total_training_steps=3', 'training.val_freq=0', 'training.warmstart_steps=20', 'training.train_batch_size=2',
         'training.train_sample_num=2', 'training.val_size=2']
PROMPT = {'text': 'S\n..G.\n....\n.@..\n....\n', 'image': None, 'system': ''}


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads(); torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def bandit_steps(policy, role, reward, n=16, turn=0):
    "Sample `n` answers to PROMPT and reward them with `reward(text)`: a one-step bandit in Step form."
    outs = policy.generate([Request(role, PROMPT, n=n, sampling={'temperature': 1.0, 'max_tokens': 8}, problem_uid='p', turn_idx=turn)])[0]
    return [Step(id=f'{turn}/{i}', parent_id='r', problem_uid='p', turn_idx=0, role=role, prompt=PROMPT, completion=c.text,
                 reward=float(reward(c.text)), token_ids=c.token_ids, logprobs=c.logprobs, sample_idx=i, meta=c.meta)
            for i, c in enumerate(outs)]


def test_update_on_one_adapter_leaves_the_other_bit_identical(tmp_path):
    tr = Trainer('tiny_plan_path_lora', SMALL, out_dir=tmp_path, progress=False)
    tool, plan = {u.name: u for u in tr.units}['tool_call_agent'], {u.name: u for u in tr.units}['plan_agent']
    assert tool.policy is plan.policy and tool.adapter != plan.adapter          # L2: one base model, two adapters
    before = {u.name: [p.detach().clone() for p in u.params()] for u in tr.units}
    for attempt in range(5):                                                     # until a batch has reward variance
        steps = bandit_steps(plan.policy, 'plan_agent', lambda t: t.startswith('R'), turn=attempt)
        if len({s.reward for s in steps}) > 1: break
    tr._unit_update(plan, steps, grpo(steps))
    assert any(not torch.equal(a, b) for a, b in zip(before['plan_agent'], plan.params()))
    assert all(torch.equal(a, b) for a, b in zip(before['tool_call_agent'], tool.params()))


def first_token_probs(policy):
    "Teacher-forced distribution of the first answer character for PROMPT (no sampling noise)."
    from pettingllms_nb.models.tiny import chat_ids
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([chat_ids(policy.tokenizer, PROMPT)])).logits[0, -1]
    p = torch.softmax(logits, -1)
    return {policy.tokenizer.decode([i]): p[i].item() for i in range(len(p))}


def test_grpo_steps_raise_the_probability_of_the_rewarded_answer(tmp_path):
    tr = Trainer('tiny_plan_path_single', SMALL + ['training.lr=1e-2', 'training.lr_schedule=constant'], out_dir=tmp_path, progress=False)
    u = tr.units[0]
    p0 = first_token_probs(u.policy)
    target = max('UDLR', key=lambda ch: -abs(p0[ch] - 0.1))     # a move the model gives sometimes, not always
    for it in range(10):
        steps = bandit_steps(u.policy, 'stateful_single_agent', lambda t: t.startswith(target), n=32, turn=it)
        tr._unit_update(u, steps, grpo(steps))
    p1 = first_token_probs(u.policy)
    assert p1[target] > 1.1 * p0[target], (target, p0[target], p1[target])
    assert sum(p1[c] for c in 'UDLR' if c != target) < sum(p0[c] for c in 'UDLR' if c != target)


def test_text_only_completions_are_refused(tmp_path):
    tr = Trainer('tiny_plan_path_single', SMALL, out_dir=tmp_path, progress=False)
    s = Step(id='a', parent_id='r', problem_uid='p', turn_idx=0, role='stateful_single_agent', prompt=PROMPT, completion='R')
    with pytest.raises(ValueError, match='token ids'):
        tr._unit_update(tr.units[0], [s], [1.0])


def _metrics(path):
    return [{k: v for k, v in json.loads(l).items() if not k.startswith('time/')} for l in Path(path).read_text().splitlines()]


def test_caching_worker_runs_each_program_once():
    import asyncio

    class Counting:
        calls = 0
        async def run(self, code, stdin='', expected=None, **kw):
            Counting.calls += 1
            await asyncio.sleep(0.01)
            from types import SimpleNamespace
            return SimpleNamespace(verdict='OK', stdout=code, stderr='')

    w = CachingWorker(Counting())
    async def go(): return await asyncio.gather(*[w.run('print(1)') for _ in range(5)], w.run('print(2)'))
    res = asyncio.run(go())
    assert Counting.calls == 2 and [r.stdout for r in res] == ['print(1)'] * 5 + ['print(2)']
    assert (w.hits, w.misses) == (4, 2)


def test_sample_num_names_samples_per_problem(tmp_path):
    "collect/evaluate take `sample_num` (default: the config's train/validate_sample_num); old `n=`/`k=` still work."
    tr = Trainer('tiny_plan_path_single', SMALL, out_dir=tmp_path, progress=False)
    tree = tr.collect(seeds=[0])
    assert tree.meta['sample_num'] == 2 and tree.meta['mode'] == 'tree'              # training.train_sample_num=2
    assert tr.collect(seeds=[0], mode='independent', sample_num=3).meta['sample_num'] == 3
    with pytest.warns(DeprecationWarning, match='use sample_num=3'):
        assert tr.collect(seeds=[0], mode='independent', n=3).meta['sample_num'] == 3
    new = tr.evaluate(seeds=[0, 1], sample_num=2, temperature=1.0)
    with pytest.warns(DeprecationWarning, match='use sample_num=2'):
        assert tr.evaluate(seeds=[0, 1], k=2, temperature=1.0).keys() == new.keys()
    assert 'val/pass@k' in new and 'val/pass@k' not in tr.evaluate(seeds=[0, 1])   # validate_sample_num=1 by default


def test_specialisation_levels_map_roles_to_units(tmp_path):
    "L1 one shared adapter; L2 one adapter per role on one model; L3 one model per role."
    l1 = Trainer('tiny_plan_path', SMALL, out_dir=tmp_path / 'l1', progress=False)
    assert [(u.name, u.adapter, u.roles) for u in l1.units] == [('shared', 'shared', ['tool_call_agent', 'plan_agent'])]
    l2 = Trainer('tiny_plan_path_lora', SMALL, out_dir=tmp_path / 'l2', progress=False)
    assert {u.adapter for u in l2.units} == {'tool_call_agent', 'plan_agent'} and len({id(u.policy) for u in l2.units}) == 1
    l3 = Trainer('tiny_plan_path', SMALL + ['specialization=full', 'base_models.policy_1.path=tiny', 'base_models.policy_1.name=tool_model',
                                            'agent_policy_configs.agent_configs.agent_1.policy_name=tool_model'],
                 out_dir=tmp_path / 'l3', progress=False)
    assert len({id(u.policy) for u in l3.units}) == 2 and all(len(u.roles) == 1 for u in l3.units)
    assert all(u.optimizer is not None and u.optimizer.param_groups[0]['params'] for u in l1.units + l2.units + l3.units)


def test_fit_result_is_the_history_with_a_one_line_repr(tmp_path):
    "fit() returns the metrics history (a list, as before) that shows itself in one line, with its files."
    from pettingllms_nb.training.trainer import FitResult
    hist = [{'step': i, 'train/success_rate': i / 400, **({'val/success_rate': 0.5} if i % 10 == 0 else {}),
             **{f'agent_{k}/reward': 0.1 * k for k in range(40)}} for i in range(400)]
    r = FitResult(hist, tmp_path, tmp_path / 'checkpoints' / 'step_000399')
    assert r == hist and r[-1] is hist[-1] and r.final is hist[-1] and len(r) == 400
    assert len(repr(r)) < 300 and 'val/success_rate=0.500' in repr(r) and 'step_000399' in repr(r)
    assert len(repr(hist)) > 100_000                            # what a cell used to print
    assert r.metrics_path == tmp_path / 'metrics.jsonl' and json.loads(json.dumps(r)) == hist


# -- infrastructure failures in training (issue 11) --------------------------------------------
from pettingllms_nb.core.registry import registry
from pettingllms_nb.training.trainer import InfraError


class Broken:
    "A sandbox whose pool is gone: every run raises."
    async def run(self, code, stdin='', expected=None, **kw): raise ConnectionError('the sandbox pool is gone')


class Lenient:
    "A sandbox that fails silently: every program is accepted."
    async def run(self, code, stdin='', expected=None, **kw):
        from types import SimpleNamespace
        return SimpleNamespace(verdict='AC', stdout='', stderr='')


class OracleText:
    "The tiny model's sampled tokens (so the update can run) under the oracle's answer text (so programs do run)."
    def __init__(self, policy): self.policy, self.oracle = policy, registry.scripted('stateful_env', 'oracle')
    def generate(self, requests):
        import dataclasses
        return [[dataclasses.replace(c, text=self.oracle(r)) for c in outs] for r, outs in zip(requests, self.policy.generate(requests))]


INFRA = ['training.warmstart_steps=0', 'training.train_batch_size=2', 'training.train_sample_num=2', 'training.val_freq=0']


def test_a_broken_sandbox_in_training_is_counted_per_agent_and_never_trained_on(tmp_path):
    tr = Trainer('tiny_plan_path', INFRA + ['training.canary_freq=0', 'training.max_infra_error_share=1'], out_dir=tmp_path,
                 progress=False, worker=Broken())
    tr.policies = {r: OracleText(p) for r, p in tr.policies.items()}
    steps = []
    real_collect = tr.collect
    tr.collect = lambda *a, **k: steps.append(real_collect(*a, **k)) or steps[-1]
    m = tr.train_step()
    (trace,) = steps
    tool = [s for s in trace if s.role == 'tool_call_agent']
    assert tool and all(s.infra_error and 'the sandbox pool is gone' in s.infra_error and s.reward is None for s in tool)
    assert not any(s.infra_error for s in trace if s.role == 'plan_agent')
    assert (m['train/tool_call_agent/infra_errors'], m['train/plan_agent/infra_errors']) == (len(tool), 0)
    assert m['train/infra_errors'] == m['adv/infra_steps'] == len(tool)
    assert m['train/infra_error_share'] == len(tool) / len(trace)
    assert m['shared/sequences'] == len(trace) - len(tool)                # the broken steps are not in the update
    assert 'train/tool_call_agent/reward' not in m and math.isnan(m['train/success_rate'])   # no scored tool step, no scored episode


def test_canaries_that_fail_mark_the_batch_and_stop_training(tmp_path):
    tr = Trainer('tiny_plan_path', INFRA + ['training.max_infra_error_share=1'], out_dir=tmp_path, progress=False, worker=Lenient())
    m = tr.train_step()
    assert m['sandbox/canary_failures'] == 3 and m['train/infra_error_share'] == 1.0 and m['shared/sequences'] == 0
    stop = Trainer(tr.cfg, ['training.max_infra_error_share=0.2'], out_dir=tmp_path, progress=False, worker=Lenient())
    with pytest.raises(InfraError) as info: stop.fit()
    msg = str(info.value)
    assert 'training stopped at step 1' in msg and 'more than training.max_infra_error_share=0.2' in msg
    assert "sandbox canaries failed" in msg and "canary 'wrong': expected WA, got AC" in msg
    assert stop.step == 0 and not (tmp_path / 'checkpoints' / 'latest').exists()


def test_a_healthy_sandbox_passes_its_canaries_and_runs_them_only_for_program_agents(tmp_path):
    tr = Trainer('tiny_plan_path', INFRA, out_dir=tmp_path / 'a', progress=False)
    assert tr.uses_sandbox and tr.check_sandbox()['sandbox/canary_failures'] == 0
    single = Trainer('tiny_plan_path_single', INFRA, out_dir=tmp_path / 'b', progress=False, worker=Lenient())
    assert not single.uses_sandbox and single.check_sandbox() == {}      # no agent runs programs: no canaries
    every3 = Trainer('tiny_plan_path', INFRA + ['training.canary_freq=3'], out_dir=tmp_path / 'c', progress=False, worker=Lenient())
    assert every3.check_sandbox() == {}                                  # step 1 of every 3: not this one


def test_the_cli_reports_an_infrastructure_stop_without_a_traceback(tmp_path, monkeypatch, capsys):
    from pettingllms_nb import cli
    import pettingllms_nb.training.trainer as trainer
    monkeypatch.setattr(trainer, '_run_worker', lambda cfg: Lenient())     # the worker the trainer makes from its config
    rc = cli.main(['train', 'tiny_plan_path', *INFRA, 'training.total_training_steps=1', '--out', str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 3 and 'training stopped at step 1' in err and 'Traceback' not in err and '--debug' in err
    with pytest.raises(InfraError): cli.main(['--debug', 'train', 'tiny_plan_path', *INFRA, 'training.total_training_steps=1', '--out', str(tmp_path)])


# -- kill at the worst moments, then resume (issue 11) ------------------------------------------
KILL = textwrap.dedent('''
    import os, signal, sys, torch
    from pathlib import Path
    torch.set_num_threads(1)
    from pettingllms_nb.training.trainer import Trainer
    out, mode, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tr = Trainer('tiny_plan_path', {ov!r}, out_dir=out, progress=False, resume=True)
    die = lambda: os.kill(os.getpid(), signal.SIGKILL)
    real_save, real_rename, real_replace = torch.save, os.rename, os.replace
    def save(obj, f, *a, **kw):                  # during a checkpoint write: after its first file, before the others
        real_save(obj, f, *a, **kw)
        if mode == 'write' and tr.step == k: die()
    def rename(src, dst, *a, **kw):              # right after the checkpoint directory is renamed into place
        real_rename(src, dst, *a, **kw)
        if mode == 'rename' and Path(dst).name == f'step_{{k:06d}}': die()
    def replace(src, dst, *a, **kw):             # `latest` written to its temporary file, not yet renamed
        if mode == 'latest' and Path(dst).name == 'latest' and tr.step == k: die()
        real_replace(src, dst, *a, **kw)
    torch.save, os.rename, os.replace = save, rename, replace
    tr.fit(callback=lambda t, m: die() if mode == 'after_step' and t.step == k else None)
''')
KILL_OV = ['training.total_training_steps=4', 'training.save_freq=2', 'training.val_freq=2', 'training.warmstart_steps=10',
           'training.train_batch_size=2', 'training.train_sample_num=2', 'training.val_size=2']


def _run(script, out, mode='none', k=-1):
    return subprocess.run([sys.executable, str(script), str(out), mode, str(k)], env={**os.environ, 'HF_HUB_OFFLINE': '1'},
                          capture_output=True, text=True)


@pytest.fixture(scope='module')
def uninterrupted(tmp_path_factory):
    d = tmp_path_factory.mktemp('kill')
    script = d / 'run.py'; script.write_text(KILL.format(ov=KILL_OV))
    full = _run(script, d / 'full')
    assert full.returncode == 0, full.stderr[-2000:]
    return script, d / 'full'


def _weights(run_dir, step):
    return torch.load(run_dir / 'checkpoints' / f'step_{step:06d}' / 'units' / 'shared' / 'weights.pt')


@pytest.mark.slow
@pytest.mark.parametrize('mode,k,leftover', [
    ('write', 4, '.step_000004.*'),      # killed while writing the checkpoint of step 4: a half-written temporary directory
    ('rename', 4, 'step_000004'),        # killed after it was renamed into place, before `latest` moved to it
    ('latest', 4, 'latest*.tmp'),        # killed with the new `latest` written to its temporary file only
    ('after_step', 3, None),             # killed between checkpoints: step 3 logged, never checkpointed
    ('after_step', 2, None),             # killed right after a checkpoint: nothing to repair
])
def test_kill_then_resume_matches_the_uninterrupted_run(uninterrupted, tmp_path, mode, k, leftover):
    script, full = uninterrupted
    cut = tmp_path / 'cut'
    killed = _run(script, cut, mode, k)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    ck = cut / 'checkpoints'
    assert (ck / 'latest').read_text() == 'step_000002'
    if leftover: assert list(ck.glob(leftover)), sorted(p.name for p in ck.iterdir())
    assert [m['step'] for m in _metrics(cut / 'metrics.jsonl')] == list(range(k + 1))   # logged past the checkpoint
    resumed = _run(script, cut)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _metrics(cut / 'metrics.jsonl') == _metrics(full / 'metrics.jsonl')          # every step once, the same numbers
    assert sorted(p.name for p in ck.iterdir()) == ['latest', 'step_000002', 'step_000004']   # nothing stale is left
    a, b = _weights(full, 4), _weights(cut, 4)
    assert a.keys() == b.keys() and all(torch.equal(a[n], b[n]) for n in a)                  # the same model at the end


def test_the_no_signal_warning_is_said_once_per_run_with_a_count(tmp_path, caplog):
    "A run whose every batch has zero reward variance says the advice once and the count at the end (not once a step)."
    from pettingllms_nb.training.trainer import Trainer
    tr = Trainer('tiny_search', ['training.total_training_steps=2', 'training.val_freq=0', 'training.warmstart_steps=0',
                                 'training.train_batch_size=1', 'training.train_sample_num=2'], out_dir=tmp_path, progress=False)
    with caplog.at_level(logging.WARNING): tr.fit()
    said = [r.getMessage() for r in caplog.records if 'zero reward variance' in r.getMessage()]
    assert len(said) == 2, said
    assert 'said once' in said[0] and said[1].startswith('2 of 2 training steps had zero reward variance'), said


def test_the_warm_start_shows_its_progress(tmp_path, capsys, monkeypatch):
    "Building a tiny base is minutes of supervised steps: with progress on, a bar counts them (it said nothing before)."
    from pettingllms_nb.training.trainer import Trainer
    monkeypatch.setenv('PETTINGLLMS_NB_CACHE', str(tmp_path / 'cache'))   # an empty cache: the base is built, not reused
    Trainer('tiny_plan_path', ['training.warmstart_steps=12', 'training.total_training_steps=1'], out_dir=tmp_path, progress=True)
    err = capsys.readouterr().err
    assert 'warm start (supervised)' in err and '12/12' in err, err[-500:]
    Trainer('tiny_plan_path', ['training.warmstart_steps=12'], out_dir=tmp_path / 'quiet', progress=False)
    assert 'warm start' not in capsys.readouterr().err


def test_a_warm_start_is_cached_by_its_demonstrations(tmp_path, monkeypatch):
    "The same demonstrations, steps, lr and seed reuse the kept base (no supervised step, the same weights); a change does not."
    from pettingllms_nb.core.config import load_config
    from pettingllms_nb.training import trainer as T
    monkeypatch.setenv('PETTINGLLMS_NB_CACHE', str(tmp_path / 'cache'))
    cfg = load_config('tiny_plan_path', ['training.warmstart_steps=6'])
    first = T.build_tiny_base(cfg, tmp_path / 'a')
    assert len(list(T.warm_start_cache().iterdir())) == 1
    calls = []
    real_sft = T.sft
    monkeypatch.setattr(T, 'sft', lambda *a, **k: calls.append(1) or real_sft(*a, **k))
    second = T.build_tiny_base(cfg, tmp_path / 'b')
    assert calls == [] and (second / 'model.safetensors').read_bytes() == (first / 'model.safetensors').read_bytes()
    T.build_tiny_base(load_config('tiny_plan_path', ['training.warmstart_steps=6', 'training.warmstart_p_oracle=0.5']),
                      tmp_path / 'c')
    T.build_tiny_base(cfg, tmp_path / 'd', cache=False)
    assert len(calls) == 2 and len(list(T.warm_start_cache().iterdir())) == 2   # a new key; cache=False keeps nothing


def test_a_larger_tiny_model_is_a_config_option(tmp_path, monkeypatch):
    "training.tiny_model sizes the locally built model (issue 24: a larger tiny model as a preset option), cached apart."
    import json
    from pettingllms_nb.core.config import load_config
    from pettingllms_nb.training import trainer as T
    monkeypatch.setenv('PETTINGLLMS_NB_CACHE', str(tmp_path / 'cache'))
    small = T.build_tiny_base(load_config('tiny_plan_path', ['training.warmstart_steps=2']), tmp_path / 'a')
    wide = T.build_tiny_base(load_config('tiny_plan_path', ['training.warmstart_steps=2',
                                                            'training.tiny_model={hidden_size: 96, num_layers: 3}']), tmp_path / 'b')
    sizes = [(c['hidden_size'], c['num_hidden_layers']) for c in (json.loads((p / 'config.json').read_text()) for p in (small, wide))]
    assert sizes == [(64, 2), (96, 3)] and len(list(T.warm_start_cache().iterdir())) == 2
    cold = T.build_tiny_base(load_config('tiny_plan_path', ['training.warmstart_steps=0', 'training.tiny_model={num_layers: 1}']),
                             tmp_path / 'c')
    assert json.loads((cold / 'config.json').read_text())['num_hidden_layers'] == 1


def test_a_bpe_tiny_model_learns_its_words_from_the_demonstrations(tmp_path, monkeypatch):
    "training.tiny_vocab=bpe: the tokenizer is trained on the warm start's texts (a prompt in fewer tokens), cached apart."
    import json
    from pettingllms_nb.core.config import load_config
    from pettingllms_nb.models.tiny import load_tiny
    from pettingllms_nb.training import trainer as T
    monkeypatch.setenv('PETTINGLLMS_NB_CACHE', str(tmp_path / 'cache'))
    over = ['training.warmstart_steps=4', 'training.tiny_vocab=bpe', 'training.tiny_vocab_size=300']
    char = T.build_tiny_base(load_config('tiny_plan_path', over[:1]), tmp_path / 'char')
    bpe = T.build_tiny_base(load_config('tiny_plan_path', over), tmp_path / 'bpe')
    pairs = T.warm_start_pairs(load_config('tiny_plan_path', over), n_seeds=4)
    text = pairs[0][0]['text']
    (_, ctok), (_, btok) = load_tiny(char), load_tiny(bpe)
    assert len(btok) == 300 and len(btok(text)['input_ids']) < 0.75 * len(ctok(text)['input_ids'])
    assert btok.decode(btok(text)['input_ids']) == text
    assert json.loads((bpe / 'config.json').read_text())['vocab_size'] == 300 and len(list(T.warm_start_cache().iterdir())) == 2


def test_a_cosine_warm_start_ends_at_a_small_rate(monkeypatch):
    "sft(lr_schedule='cosine') decays the rate to 0 over its steps; a schedule it does not know is refused by name."
    import torch
    from pettingllms_nb.models.tiny import tiny_model, sft
    model, tok = tiny_model(seed=0)
    rates, step = [], torch.optim.AdamW.step
    def spy(self, *a, **k):
        rates.append(self.param_groups[0]['lr']); return step(self, *a, **k)
    monkeypatch.setattr(torch.optim.AdamW, 'step', spy)
    sft(model, tok, [('ab', 'c')] * 4, steps=10, lr=1e-2, lr_schedule='cosine')
    assert rates[0] == 1e-2 and rates[-1] < 1e-3 and rates == sorted(rates, reverse=True)
    with pytest.raises(ValueError, match="lr_schedule='linear'"): sft(model, tok, [('ab', 'c')], steps=1, lr_schedule='linear')

def test_the_warm_start_key_covers_what_changes_the_weights():
    from pettingllms_nb.training.trainer import warm_start_key
    pairs = [({'text': 'S\n.G\n'}, 'R')]
    k = warm_start_key(pairs, 10, 1e-3, 0)
    assert k == warm_start_key(list(pairs), 10, 1e-3, 0)
    assert len({k, warm_start_key(pairs, 11, 1e-3, 0), warm_start_key(pairs, 10, 2e-3, 0), warm_start_key(pairs, 10, 1e-3, 1),
                warm_start_key([({'text': 'S\n.G\n'}, 'D')], 10, 1e-3, 0), warm_start_key(pairs, 10, 1e-3, 0, {'hidden_size': 96})}) == 6


def test_dynamic_sampling_rolls_out_new_problems_until_a_batch_is_informative(tmp_path):
    "DAPO's dynamic sampling: more batches of new problems while groups lack signal; only informative groups train (#31)."
    from pettingllms_nb.engine.policies import ScriptedPolicy
    tr = Trainer('tiny_plan_path_single', SMALL + ['training.dynamic_sampling_rounds=2', 'training.rollout_mode=independent'],
                 out_dir=tmp_path, progress=False)
    seen = []
    real = tr.collect
    def collect(seeds=None, **kw):
        seen.append(list(seeds))
        return real(seeds=seeds, **kw)
    tr.collect = collect
    m = tr.train_step()
    assert 1 <= len(seen) <= 3 and len({s for b in seen for s in b}) == sum(map(len, seen))   # every batch new problems
    assert m['dapo/rounds'] == len(seen) - 1 and m['dapo/kept_groups'] == min(m['dapo/informative_groups'], m['dapo/target_groups'])
    if m['dapo/rounds'] < 2: assert m['dapo/informative_groups'] >= m['dapo/target_groups']   # it stopped early only with enough signal
    assert m['shared/sequences'] == 2 * m['dapo/kept_groups']      # two samples a group, only kept groups train
    plain = Trainer('tiny_plan_path_single', SMALL + ['training.rollout_mode=independent'], out_dir=tmp_path / 'b', progress=False)
    assert not any(k.startswith('dapo/') for k in plain.train_step())


def test_mixed_batches_split_training_play_every_validation_seed_and_report_each_part(tmp_path):
    "env.mix (#31): one run whose batches mix two games, with metrics per part; a bad part is refused naming its key."
    from pettingllms_nb.core.schema import ConfigError
    mix = 'env.mix=[{source: plan_path, size: 4}, {source: sudoku, size: 4, kwargs: {prompt_style: compact, max_holes: 2}}]'
    tr = Trainer('tiny_plan_path_single', SMALL + ['training.train_batch_size=4', mix], out_dir=tmp_path, progress=False)
    assert [(n, pc.env.source) for n, pc in tr.parts] == [('plan_path', 'plan_path'), ('sudoku', 'sudoku')]
    batch = tr.collect()
    benches = {s.problem_uid.split('/')[1] for s in batch}
    assert benches == {'plan_path', 'sudoku'} and set(batch.meta['part_of'].values()) == {'plan_path', 'sudoku'}
    m = tr.train_step()
    assert m['train/plan_path/episodes'] + m['train/sudoku/episodes'] == m['train/episodes'] and m['train/sudoku/episodes'] > 0
    v = tr.evaluate()
    assert v['val/plan_path/episodes'] == v['val/sudoku/episodes'] == 2 and v['val/episodes'] == 4   # val_size=2, each part
    dapo = Trainer('tiny_plan_path_single', SMALL + ['training.train_batch_size=4', mix, 'training.dynamic_sampling_rounds=2'],
                   out_dir=tmp_path / 'd', progress=False).train_step()   # resampled batches keep saying which part
    assert dapo['train/plan_path/episodes'] + dapo['train/sudoku/episodes'] == dapo['train/episodes']
    with pytest.raises(ConfigError, match=r'env.mix\[0\](.|\n)*env.size=5'):
        Trainer('tiny_plan_path_single', SMALL + ['env.mix=[{source: sudoku, size: 5}]'], out_dir=tmp_path / 'b', progress=False)

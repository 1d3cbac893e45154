"Trainer: per-adapter updates, the direction of a GRPO step, checkpoint → kill → resume, offline."
import json, os, signal, subprocess, sys, textwrap
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
    return [Step(id=f'{turn}/{i}', parent_id='r', problem_uid='p', turn_idx=0, agent=role, prompt=PROMPT, completion=c.text,
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
    s = Step(id='a', parent_id='r', problem_uid='p', turn_idx=0, agent='stateful_single_agent', prompt=PROMPT, completion='R')
    with pytest.raises(ValueError, match='token ids'):
        tr._unit_update(tr.units[0], [s], [1.0])


RUN = textwrap.dedent('''
    import os, signal, sys, torch
    torch.set_num_threads(1)
    from pettingllms_nb.training.trainer import Trainer
    out, kill_at = sys.argv[1], int(sys.argv[2])
    ov = {ov!r}
    tr = Trainer('tiny_plan_path', ov, out_dir=out, progress=False, resume=True)
    def cb(t, m):
        if t.step == kill_at: os.kill(os.getpid(), signal.SIGKILL)   # die right after the checkpoint of this step
    tr.fit(callback=cb)
''')


def _metrics(path):
    return [{k: v for k, v in json.loads(l).items() if not k.startswith('time/')} for l in Path(path).read_text().splitlines()]


@pytest.mark.slow
def test_checkpoint_kill_resume_reproduces_the_uninterrupted_run(tmp_path):
    ov = ['training.total_training_steps=4', 'training.val_freq=2', 'training.warmstart_steps=40', 'training.train_batch_size=3',
          'training.train_sample_num=4', 'training.val_size=3', 'training.save_freq=1']
    script = tmp_path / 'run.py'; script.write_text(RUN.format(ov=ov))
    env = {**os.environ, 'HF_HUB_OFFLINE': '1'}
    full = subprocess.run([sys.executable, str(script), str(tmp_path / 'full'), '-1'], env=env, capture_output=True, text=True)
    assert full.returncode == 0, full.stderr[-2000:]
    killed = subprocess.run([sys.executable, str(script), str(tmp_path / 'cut'), '2'], env=env, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL
    assert (tmp_path / 'cut' / 'checkpoints' / 'latest').read_text() == 'step_000002'
    resumed = subprocess.run([sys.executable, str(script), str(tmp_path / 'cut'), '-1'], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a, b = _metrics(tmp_path / 'full' / 'metrics.jsonl'), _metrics(tmp_path / 'cut' / 'metrics.jsonl')
    assert [m['step'] for m in b] == [0, 1, 2, 3, 4]
    assert a == b


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

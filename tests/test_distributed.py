"""Training across processes: two gloo ranks on the CPU (DDP, and FSDP's shards) give the single-process update, and
resume from checkpoints exactly; an FSDP checkpoint holds the whole unit, not one rank's shard."""
import importlib.util, math, os, shutil
import pytest

if importlib.util.find_spec("torch") is None or importlib.util.find_spec("accelerate") is None:
    pytest.skip("needs the [train] extra (torch, accelerate)", allow_module_level=True)

import torch
import pettingllms_nb.training.distributed as D


def _weights(ps): return [p.detach().clone() for p in ps]


def _single(steps=1, micro_batch_size=5, seed=0):
    pol, units = D.tiny_units()
    ps, opt, sched = units['planner']
    ms = [D.update_unit(pol, 'planner', ps, opt, sched, D.synthetic_rows(pol, 'planner', seed=seed + k),
                        micro_batch_size=micro_batch_size) for k in range(steps)]
    return _weights(ps), _weights(units['executor'][0]), ms


def rank_update(rank, strategy, steps, micro_batch_size, sharded, ckpt, resume):
    "Train the planner for `steps` updates (resuming from `ckpt` if `resume`; saving it after the first if not)."
    pol, units = D.tiny_units()
    dist = D.Distributed(strategy, cpu=True)
    ps, opt, sched = units['planner']
    start = 0
    if resume:
        D.load_unit_state(ckpt, ps, opt, sched, dist, pol)
        start = 1
    ms = []
    for k in range(start, steps):
        with D.whole_params(dist, pol): rows = D.synthetic_rows(pol, 'planner', seed=k)   # FSDP: sampled whole
        if sharded: rows = rows[:7] if rank == 0 else rows[7:]      # each rank brings its own, unequal, rows
        ms.append(D.update_unit(pol, 'planner', ps, opt, sched, rows, micro_batch_size=micro_batch_size, dist=dist,
                                sharded=sharded))
        if ckpt and not resume and k == 0: D.save_unit_state(ckpt, ps, opt, sched, dist, pol)
    shard = [tuple(p.shape) for p in ps]
    with D.whole_params(dist, pol):
        return _weights(ps), _weights(units['executor'][0]), ms, (dist.rank, dist.world_size, shard)


def _max_diff(a, b): return max(float((x - y).detach().abs().max()) for x, y in zip(a, b))


@pytest.fixture(scope='module')
def single():
    return _single(steps=2)


@pytest.fixture(scope='module', params=['ddp', 'fsdp'])
def ckpt_run(request, tmp_path_factory):
    "Two ranks, two updates of the whole batch, a checkpoint after the first: (results, checkpoint path, strategy)."
    ckpt = tmp_path_factory.mktemp('ckpt') / 'planner.pt'
    return D.launch(rank_update, 2, request.param, 2, 5, False, ckpt, False), ckpt, request.param


@pytest.mark.parametrize('sharded', [False, True])
def test_two_gloo_ranks_equal_the_single_process(single, ckpt_run, sharded):
    w_single, exec_single, ms_single = single
    strategy = ckpt_run[2]
    runs = ckpt_run[0] if not sharded else D.launch(rank_update, 2, strategy, 2, 5, True, None, False)
    (w0, e0, m0, id0), (w1, e1, m1, id1) = runs
    assert (id0[:2], id1[:2]) == ((0, 2), (1, 2))
    assert all(torch.equal(a, b) for a, b in zip(w0, w1))                  # the ranks stay identical
    assert _max_diff(w0, w_single) < 1e-6                                   # and equal one process on the whole batch
    assert _max_diff(w0, _single(steps=0)[0]) > 1e-4                       # (the update did move the weights)
    assert all(torch.equal(a, b) for a, b in zip(e0, exec_single))         # the other unit is untouched
    for a, b in zip(m0, ms_single):
        assert a['sequences'] == b['sequences'] == 12 and a['tokens'] == b['tokens']
        assert abs(a['pg_loss'] - b['pg_loss']) < 1e-6 and abs(a['grad_norm'] - b['grad_norm']) < 1e-5


def test_checkpoint_resume_is_exact(ckpt_run):
    ((w_full, *_), _), ckpt, strategy = ckpt_run
    assert ckpt.exists()
    (w_resumed, *_), (w_resumed1, *_) = D.launch(rank_update, 2, strategy, 2, 5, False, ckpt, True)
    assert all(torch.equal(a, b) for a, b in zip(w_full, w_resumed))      # bit for bit
    assert all(torch.equal(a, b) for a, b in zip(w_resumed, w_resumed1))


def test_fsdp_checkpoint_holds_the_whole_unit(tmp_path):
    "Under FSDP each rank holds a flat shard; the checkpoint holds every parameter and its Adam moments whole."
    ckpts = {s: tmp_path / f'{s}.pt' for s in ('ddp', 'fsdp')}
    runs = {s: D.launch(rank_update, 2, s, 1, 5, False, ck, False) for s, ck in ckpts.items()}
    full = [tuple(p.shape) for p in D.tiny_units()[1]['planner'][0]]
    shards = [r[3][2] for r in runs['fsdp']]
    assert shards[0] != full and shards[1] != full                          # the ranks did hold shards
    assert [sum(math.prod(s) for s in r) for r in shards] != [0, 0]
    ddp, fsdp = (torch.load(ckpts[s], weights_only=True) for s in ('ddp', 'fsdp'))
    assert [tuple(t.shape) for t in fsdp['params']] == full
    assert all(torch.equal(a, b) for a, b in zip(ddp['params'], fsdp['params']))
    assert sorted(fsdp['optimizer']['state']) == sorted(ddp['optimizer']['state']) == list(range(len(full)))
    moved = 0
    for i, st in ddp['optimizer']['state'].items():
        for k, v in st.items():
            assert torch.equal(v, fsdp['optimizer']['state'][i][k]), (i, k)
            moved += k == 'exp_avg' and bool(v.abs().max() > 0)
    assert moved >= len(full) // 2                                          # (the moments are not all zeros)


def test_ddp_checkpoint_needs_no_policy(tmp_path):
    "Under DDP (here a group of one) the unit's parameters are all a checkpoint needs, as before FSDP took `policy`."
    pol, units = D.tiny_units()
    dist = D.Distributed('ddp', cpu=True)
    D.update_unit(pol, 'planner', *units['planner'], D.synthetic_rows(pol, 'planner'), micro_batch_size=5, dist=dist)
    D.save_unit_state(tmp_path / 'p.pt', *units['planner'], dist)
    pol2, units2 = D.tiny_units()
    D.load_unit_state(tmp_path / 'p.pt', *units2['planner'], dist)
    assert all(torch.equal(a, b) for a, b in zip(units['planner'][0], units2['planner'][0]))
    assert units2['planner'][1].state_dict()['state'] and _max_diff(units['planner'][0], D.tiny_units()[1]['planner'][0]) > 1e-4


def test_strategy_is_checked():
    with pytest.raises(ValueError, match="strategy='zero3'"): D.Distributed('zero3')
    assert D.Distributed('fsdp', cpu=True).strategy == 'fsdp'               # FSDP runs on the CPU too (gloo)
    with pytest.raises(ValueError, match="under FSDP pass `policy`"):
        D.save_unit_state('/nonexistent/x.pt', [], None, None, D.Distributed('fsdp', cpu=True))


OV = ['training.total_training_steps=4', 'training.train_batch_size=2',
      'training.val_freq=0', 'training.warmstart_steps=20', 'training.micro_batch_size=3',
      'training.train_sample_num=4']   # (groups of 4: the first two steps carry a learning signal)


def rank_trainer(rank, out_dir, strategy, resume=False):
    "One Trainer step of the tiny Plan-Path preset (the same seed on every rank), then a checkpoint."
    from pettingllms_nb.training.trainer import Trainer
    tr = Trainer('tiny_plan_path', OV, out_dir=out_dir, progress=False, resume=resume)
    if strategy: tr.distribute(D.Distributed(strategy, cpu=True))           # FSDP: sharded, a resumed optimiser too
    m = tr.train_step()
    path = tr.save_checkpoint()
    with tr._whole_units():
        return _weights(tr.units[0].params()), {k: v for k, v in m.items() if k.startswith('shared/')}, str(path)


@pytest.mark.parametrize('strategy', ['ddp', 'fsdp'])
def test_trainer_step_across_two_ranks_equals_one_process(tmp_path, strategy):
    from pettingllms_nb.training.trainer import Trainer
    Trainer('tiny_plan_path', OV, out_dir=tmp_path, progress=False)        # builds the warm-started base once
    (w_one, m_one, _), = D.launch(rank_trainer, 1, str(tmp_path), None)
    (w0, m0, p0), (w1, m1, p1) = D.launch(rank_trainer, 2, str(tmp_path), strategy)
    assert all(torch.equal(a, b) for a, b in zip(w0, w1)) and p0 == p1
    assert _max_diff(w0, w_one) < 1e-5   # to summation order (Adam's first step is about lr = 3e-3 on every weight)
    assert m0['shared/sequences'] == m_one['shared/sequences'] > 0 and m_one['shared/grad_norm'] > 0.01
    assert abs(m0['shared/pg_loss'] - m_one['shared/pg_loss']) < 1e-6
    assert abs(m0['shared/grad_norm'] - m_one['shared/grad_norm']) < 1e-5
    if strategy == 'fsdp': shutil.copytree(tmp_path, tmp_path / '..' / f'{tmp_path.name}_one')   # to resume twice
    resumed = Trainer('tiny_plan_path', OV, out_dir=tmp_path, resume=True, progress=False)   # rank 0's checkpoint
    assert resumed.step == 1 and all(torch.equal(a, b) for a, b in zip(resumed.units[0].params(), w0))
    if strategy == 'fsdp':   # two FSDP ranks resume that checkpoint (weights and Adam moments, sharded again) and step
        (w2, m2, p2), _ = D.launch(rank_trainer, 2, str(tmp_path), strategy, True)
        (w2_one, m2_one, p2_one), = D.launch(rank_trainer, 1, str(tmp_path / '..' / f'{tmp_path.name}_one'), None, True)
        assert p2.endswith('step_000002') and p2_one.endswith('step_000002')   # as one process resumes it
        assert m2['shared/tokens'] == m2_one['shared/tokens'] and m2_one['shared/grad_norm'] > 0.01
        assert abs(m2['shared/grad_norm'] - m2_one['shared/grad_norm']) < 1e-5
        assert _max_diff(w2, w2_one) < 1e-5 and _max_diff(w2, w0) > 1e-4


def test_a_text_only_step_is_refused_by_name_across_ranks(tmp_path):
    "With `dist` set, a step without token ids (a text-only policy's) is a ValueError naming it, not a KeyError."
    from pettingllms_nb.engine.trace import Step
    from pettingllms_nb.training.trainer import Trainer
    tr = Trainer('tiny_plan_path', ['training.warmstart_steps=0'], out_dir=tmp_path, progress=False)
    tr.distribute(D.Distributed(cpu=True))                                  # a group of one
    step = Step('p#0/t0/plan_agent/0', 'p#0', 'p', 0, 'plan_agent', {'text': 'S..G'}, 'R')
    with pytest.raises(ValueError, match=r"step 'p#0/t0/plan_agent/0' \(agent 'plan_agent', unit 'shared'\) has no "
                                         r"sampled token ids.*distributed.*HFPolicy"):
        tr._unit_update(tr.units[0], [step], [1.0])


def _listening(port:int) -> list:
    "The local addresses (hex, as /proc/net shows them) listening on `port`, IPv4 and IPv6."
    out = []
    for f in ('/proc/net/tcp', '/proc/net/tcp6'):
        for line in open(f).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.rsplit(':', 1)
            if state == '0A' and int(p, 16) == port: out.append(addr)
    return out


def rank_store_addresses(rank:int):
    import torch.distributed as td
    assert td.is_initialized() and td.get_world_size() == 2
    return _listening(int(os.environ['MASTER_PORT'])) if rank == 0 else None


def test_launch_store_listens_on_loopback_only():
    "Issue 32, point 8: the rendezvous store of `launch` binds 127.0.0.1, not every address (IPv4 and IPv6)."
    addrs, _ = D.launch(rank_store_addresses, 2)
    assert addrs == ['0100007F'], addrs   # 127.0.0.1 only

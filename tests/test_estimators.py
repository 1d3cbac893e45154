"The field's estimators beside GRPO and AT-GRPO (Dr. MAS, RLOO, GiGPO), DAPO's knobs and the KL penalty, on groups computed by hand."
import importlib.util, math
import pytest

from pettingllms_nb.core.config import ConfigError, load_config
from pettingllms_nb.engine.trace import Step, Trace
from pettingllms_nb.training.advantages import (ESTIMATORS, agent_key, anchor_state, at_grpo, dr_mas, gigpo, grpo,
                                                 rloo)

close = lambda a, b, tol=1e-4: len(a) == len(b) and all(abs(x - y) < tol for x, y in zip(a, b))


def mk(uid, rollout, turn, reward, role='plan'):
    return Step(f"{uid}#{rollout}/t{turn}/{role}", f"{uid}#{rollout}/t{turn}", uid, turn, role, '', '', reward=reward,
                rollout_idx=rollout)


def walk(k, moves, rewards, uid='w', role='plan'):
    "Rollout k of a walk from position 0: one step per move, rewarded as given, each recording the position it left."
    pos, out = 0, []
    for t, (m, r) in enumerate(zip(moves, rewards)):
        parent = f"{uid}#{k}" if t == 0 else out[-1].id
        out.append(Step(f"{uid}#{k}/t{t}/{role}", parent, uid, t, role, {'text': f'at {pos}'}, '', reward=r, rollout_idx=k,
                        state_after={'pos': pos + m}))
        pos += m
    return out


def walks(*runs, uid='w'):
    steps = [s for k, (moves, rewards) in enumerate(runs) for s in walk(k, moves, rewards, uid)]
    return Trace(steps, roots={f"{uid}#{k}": {'pos': 0} for k in range(len(runs))}, meta={'mode': 'independent'})


# --- Dr. MAS: per-agent normalisation ---------------------------------------------------------------------------

def test_dr_mas_normalises_each_agent_with_its_own_rewards():
    steps = [mk('p', 0, 0, 0.0, 'planner'), mk('p', 1, 0, 1.0, 'planner'), mk('p', 0, 0, 0.8, 'tool'), mk('p', 1, 0, 1.0, 'tool')]
    sigma = math.sqrt((0.7**2 + 0.3**2 + 0.1**2 + 0.3**2) / 4)
    assert close(grpo(steps), [-0.7 / sigma, 0.3 / sigma, 0.1 / sigma, 0.3 / sigma])   # the tool's worse call pushed up
    assert close(dr_mas(steps), [-1, 1, -1, 1])
    assert close(dr_mas(steps, normalize_std=False), [-0.5, 0.5, -0.1, 0.1])
    assert agent_key(steps[2]) == ('p', 'tool')


def test_dr_mas_keeps_an_agents_turns_together():
    steps = [mk('p', 0, 0, 0.0), mk('p', 1, 0, 0.2), mk('p', 0, 1, 0.8), mk('p', 1, 1, 1.0)]
    assert close(dr_mas(steps, normalize_std=False), [-0.5, -0.3, 0.3, 0.5])


def test_dr_mas_single_member_and_zero_variance_groups():
    steps = [mk('p', 0, 0, 3.0, 'planner'), mk('p', 0, 0, 1.0, 'tool'), mk('p', 1, 0, 1.0, 'tool')]
    assert dr_mas(steps) == [0.0, 0.0, 0.0]
    assert dr_mas(steps, drop_zero_variance=True) == [None, None, None]
    assert dr_mas(steps, drop_zero_variance=True).stats.singleton_groups == 1


# --- RLOO ----------------------------------------------------------------------------------------------------------

def test_rloo_by_hand():
    steps = [mk('p', i, 0, r) for i, r in enumerate([1., 0., 0., 0.])] + [mk('q', 0, 0, 2.), mk('q', 1, 0, 4.)]
    assert close(rloo(steps), [1, -1/3, -1/3, -1/3, -2, 2])
    assert close(rloo(steps)[:4], [a * 4 / 3 for a in at_grpo(steps, normalize_std=False)[:4]])   # n/(n-1) (r - mean)


def test_rloo_single_member_and_zero_variance_groups():
    steps = [mk('q', 0, 0, 5.)] + [mk('z', i, 0, .5) for i in range(3)]
    assert rloo(steps) == [0., 0., 0., 0.]
    adv = rloo(steps, drop_zero_variance=True)
    assert adv == [None] * 4 and adv.stats.dropped_steps == 4 and adv.stats.zero_variance_groups == 2


def test_rloo_uses_at_grpo_groups_and_is_never_scaled():
    steps = [mk('p', 0, 0, 0.), mk('p', 1, 0, 10.), mk('p', 0, 1, 0.), mk('p', 1, 1, 1.)]
    assert close(rloo(steps), [-10, 10, -1, 1])
    assert [g.key for g in rloo(steps).groups] == [('p', 0, 'plan'), ('p', 1, 'plan')]


# --- GiGPO -----------------------------------------------------------------------------------------------------------

THREE = walks(([1, 0], [0., 1.]), ([-1, 0], [0., 0.]), ([1, 0], [0., 0.]))   # rollout 0 solves; 1 goes astray; 2 fails at 1


def test_gigpo_by_hand_mean_centred():
    adv = gigpo(THREE, normalize_std=False, gamma=0.5)
    # episode: R = 1, 0, 0 -> +2/3, -1/3, -1/3; step: at pos 0 returns .5, 0, 0; at pos 1 returns 1, 0; pos -1 alone
    assert close(adv, [2/3 + 1/3, 2/3 + 1/2, -1/3 - 1/6, -1/3, -1/3 - 1/6, -1/3 - 1/2])
    assert [g.key for g in adv.groups] == [('step', 'w', 'plan', '{"pos": 0}'), ('step', 'w', 'plan', '{"pos": 1}'),
                                           ('step', 'w', 'plan', '{"pos": -1}')]
    assert close(adv.groups[0].rewards, [0.5, 0., 0.])                # returns-to-go, γ = 0.5
    assert [g.rewards for g in adv.episode_groups] == [[1., 0., 0.]]
    assert adv.stats.steps == 6 and adv.stats.singleton_groups == 1


def test_gigpo_by_hand_std_normalised_and_weighted():
    adv = gigpo(THREE, gamma=0.5, step_weight=0.5)
    e = 1e-6
    s_ep = math.sqrt(((2/3)**2 + 2 * (1/3)**2) / 3)
    s0 = math.sqrt(((1/3)**2 + 2 * (1/6)**2) / 3)
    ep = [2/3 / (s_ep + e), -1/3 / (s_ep + e), -1/3 / (s_ep + e)]
    assert close(adv, [ep[0] + 0.5 * (1/3) / (s0 + e), ep[0] + 0.5 * 0.5 / (0.5 + e), ep[1] - 0.5 * (1/6) / (s0 + e),
                       ep[1], ep[2] - 0.5 * (1/6) / (s0 + e), ep[2] - 0.5 * 0.5 / (0.5 + e)])


def test_gigpo_without_step_weight_is_grpo_on_episode_returns():
    assert close(gigpo(THREE, normalize_std=False, step_weight=0.), [2/3, 2/3, -1/3, -1/3, -1/3, -1/3])


def test_gigpo_single_rollout_and_equal_rollouts_carry_no_signal():
    once = walks(([1, 0], [0., 1.]))
    assert gigpo(once) == [0., 0.]
    assert gigpo(once, drop_zero_variance=True) == [None, None]
    same = walks(([1, 0], [0., 1.]), ([1, 0], [0., 1.]))
    assert gigpo(same) == [0.] * 4
    assert gigpo(same, drop_zero_variance=True).stats.dropped_steps == 4
    assert gigpo(THREE, drop_zero_variance=True).stats.dropped_steps == 0   # a lone state, but the episode level speaks


def test_gigpo_agents_and_problems_never_meet():
    a = walks(([1], [1.]), ([1], [0.]), uid='a')
    b = walks(([1], [5.]), ([1], [5.]), uid='b')
    adv = gigpo(Trace(a.steps + b.steps, roots={**a.roots, **b.roots}, meta={'mode': 'independent'}), normalize_std=False)
    assert close(adv, [0.5 + 0.5, -0.5 - 0.5, 0., 0.])
    assert len(adv.episode_groups) == 2


def test_gigpo_anchor_falls_back_to_the_prompt_then_to_the_step():
    s = Step('x', 'unknown', 'p', 0, 'plan', {'text': 'hi'}, '')
    assert anchor_state([s])(s) == '{"text": "hi"}'
    s.prompt = ''
    assert anchor_state([s])(s) == 'step:x'
    long = Step('y', 'r', 'p', 0, 'plan', '', '')
    assert anchor_state(Trace([long], roots={'r': {'board': 'x' * 100}}))(long).startswith('sha1:')


def test_gigpo_leaves_infra_errors_out_and_refuses_tree_traces():
    tr = walks(([1, 0], [0., 1.]), ([1, 0], [0., 0.]))
    tr.steps[3].infra_error, tr.steps[3].reward = 'sandbox died', None
    adv = gigpo(tr, normalize_std=False, gamma=1.)
    assert adv[3] is None and adv.stats.infra_steps == 1
    assert close(adv[:3], [0.5 + 0.5, 0.5 + 0., -0.5 - 0.5])
    tree = [Step(f"t{i}", 'root', 'p', 0, 'plan', '', '', reward=float(i), sample_idx=i) for i in range(2)]
    with pytest.raises(ValueError, match='training.rollout_mode=independent'): gigpo(tree)


# --- the registry, the config and the trainer's call -----------------------------------------------------------------

def test_estimators_are_registered_with_the_keys_they_read():
    assert list(ESTIMATORS) == ['at_grpo', 'grpo', 'dr_mas', 'rloo', 'gigpo']
    t = load_config('stateful_sudoku').training
    assert ESTIMATORS.kwargs(t) == {'normalize_std': t.normalize_std, 'drop_zero_variance': t.drop_zero_variance}
    assert ESTIMATORS.kwargs(t, 'rloo') == {'drop_zero_variance': False}
    assert ESTIMATORS.kwargs(t, 'gigpo') == {'normalize_std': True, 'drop_zero_variance': False, 'gamma': 0.95, 'step_weight': 1.0}
    for name in ESTIMATORS:   # every estimator accepts what the trainer passes it
        ESTIMATORS[name](THREE, **ESTIMATORS.kwargs(t, name))


def test_default_config_gives_the_old_call():
    steps = [mk('p', i, 0, r) for i, r in enumerate([1., 0., 0.5])]
    t = load_config('stateful_sudoku').training
    assert ESTIMATORS[t.algorithm](steps, **ESTIMATORS.kwargs(t)) == at_grpo(steps, normalize_std=t.normalize_std,
                                                                            drop_zero_variance=t.drop_zero_variance)
    assert (t.clip_ratio_low, t.clip_ratio_high, t.gigpo_gamma, t.gigpo_step_weight) == (None, None, 0.95, 1.0)


@pytest.mark.parametrize('overrides, says', [
    (['training.algorithm=gigpo'], "training.rollout_mode='tree': allowed values with training.algorithm='gigpo' are ['independent']"),
    (['training.algorithm=rlooo'], "did you mean 'rloo'"),
    (['training.clip_ratio_high=0'], 'training.clip_ratio_high=0'),
    (['training.clip_ratio_low=1.5'], 'training.clip_ratio_low=1.5'),
    (['training.gigpo_gamma=1.5'], 'training.gigpo_gamma=1.5'),
    (['training.gigpo_step_weight=-1'], 'training.gigpo_step_weight=-1'),
    (['training.kl_coef=0.1', 'training.full_finetune=true', 'specialization=full'], 'training.kl_coef=0.1 with training.full_finetune=True'),
])
def test_config_refuses_bad_estimator_settings(overrides, says):
    with pytest.raises(ConfigError) as info: load_config('stateful_sudoku', overrides)
    assert says in str(info.value)


def test_config_accepts_the_new_settings():
    cfg = load_config('stateful_sudoku', ['training.algorithm=gigpo', 'training.rollout_mode=independent',
                                          'training.clip_ratio_low=0.2', 'training.clip_ratio_high=0.28', 'training.kl_coef=0.05'])
    assert (cfg.training.algorithm, cfg.training.clip_ratio_high) == ('gigpo', 0.28)


# --- DAPO's asymmetric clip and the KL penalty, in the loss and in a real update -------------------------------------

needs_torch = pytest.mark.skipif(importlib.util.find_spec('torch') is None, reason='needs torch')


def _one(r, a, **kw):
    import torch
    from pettingllms_nb.training.losses import ppo_loss
    lp = torch.tensor([[math.log(r)]], requires_grad=True)
    loss, met = ppo_loss(lp, torch.zeros(1, 1), torch.tensor([a]), torch.ones(1, 1), **kw)
    loss.backward()
    return round(loss.item(), 6), met['clip_frac'], round(lp.grad.item(), 6)


@needs_torch
def test_asymmetric_clip_by_hand():
    dapo = dict(clip_ratio_low=0.2, clip_ratio_high=0.28)
    assert _one(1.25, 1.) == (-1.2, 1., 0.)
    assert _one(1.25, 1., **dapo) == (-1.25, 0., -1.25)
    assert _one(1.4, 1., **dapo) == (-1.28, 1., 0.)
    assert _one(0.7, -1., **dapo) == (0.8, 1., 0.)
    assert _one(0.7, -1., clip_ratio_low=0.4) == (0.7, 0., 0.7)
    with pytest.raises(ValueError, match='clip_ratio_low=-0.1'): _one(1., 1., clip_ratio_low=-0.1)


needs_train = pytest.mark.skipif(importlib.util.find_spec('torch') is None or importlib.util.find_spec('peft') is None,
                                 reason='needs the [train] extra')


@needs_train
def test_update_unit_clips_asymmetrically_and_defaults_are_unchanged():
    import pettingllms_nb.training.distributed as D
    def run(**kw):
        pol, units = D.tiny_units()
        ps, opt, sched = units['planner']
        m = D.update_unit(pol, 'planner', ps, opt, sched, D.synthetic_rows(pol, 'planner'), clip_ratio=0.01, **kw)
        return m, [p.detach().clone() for p in ps]
    (m0, w0), (m1, w1) = run(), run(clip_ratio_low=0.01, clip_ratio_high=0.01)
    assert m0['clip_frac'] == m1['clip_frac'] and all(bool((a == b).all()) for a, b in zip(w0, w1))
    m2, _ = run(clip_ratio_high=10.)
    assert 0 < m2['clip_frac'] < m0['clip_frac']          # the upper end no longer clips


@needs_train
def test_kl_penalty_is_against_the_base_with_adapters_off():
    import pettingllms_nb.training.distributed as D
    pol, units = D.tiny_units()
    ps, opt, sched = units['planner']
    rows = D.synthetic_rows(pol, 'planner')
    assert 'kl_ref' not in D.update_unit(pol, 'planner', ps, opt, sched, rows)        # kl_coef=0: no reference pass
    m = D.update_unit(pol, 'planner', ps, opt, sched, rows, kl_coef=0.1)          # the adapter has moved from the base
    assert m['kl_ref'] > 0
    pol2, units2 = D.tiny_units()
    ps2, opt2, sched2 = units2['planner']
    fresh = D.update_unit(pol2, 'planner', ps2, opt2, sched2, rows, kl_coef=0.1)   # a fresh adapter is the base
    assert abs(fresh['kl_ref']) < 1e-6 < m['kl_ref']


@needs_train
@pytest.mark.parametrize('algorithm', ['dr_mas', 'rloo', 'gigpo'])
def test_the_trainer_runs_a_step_with_each_new_estimator(tmp_path, algorithm):
    import os
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from pettingllms_nb.training.trainer import Trainer
    tr = Trainer('tiny_plan_path_single', ['training.total_training_steps=1', 'training.val_freq=0', 'training.warmstart_steps=0',
                                           'training.train_batch_size=2', 'training.train_sample_num=2', 'training.val_size=2',
                                           f'training.algorithm={algorithm}', 'training.rollout_mode=independent'],
                 out_dir=tmp_path, progress=False)
    m = tr.train_step()
    assert m['step'] == 1 and m['adv/steps'] > 0


@needs_train
def test_the_trainer_passes_the_asymmetric_clip_to_the_update(tmp_path, monkeypatch):
    "`training.clip_ratio_low/high` reach `update_unit` (DAPO's clip-higher); unset they are None, i.e. `clip_ratio`."
    import os
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from pettingllms_nb.training import trainer as trainer_mod
    seen, real = [], trainer_mod.update_unit
    monkeypatch.setattr(trainer_mod, 'update_unit', lambda *a, **kw: seen.append(kw) or real(*a, **kw))
    base = ['training.total_training_steps=1', 'training.val_freq=0', 'training.warmstart_steps=0',
            'training.train_batch_size=2', 'training.train_sample_num=2', 'training.val_size=2']
    for extra, want in (([], (None, None)), (['training.clip_ratio_low=0.2', 'training.clip_ratio_high=0.28'], (0.2, 0.28))):
        seen.clear()
        trainer_mod.Trainer('tiny_plan_path_single', base + extra, out_dir=tmp_path / str(len(extra)), progress=False).train_step()
        assert seen and all((kw['clip_ratio_low'], kw['clip_ratio_high']) == want for kw in seen), seen

"Advantages (GRPO / AT-GRPO grouping and maths) and the PPO-clip loss, against hand-computed numbers."
import logging, math, random, subprocess, sys
import pytest
from pettingllms_nb.training.advantages import (grpo, at_grpo, grpo_key, at_grpo_key, is_tree, group_advantages, group_stats,
                                       GroupStats, AdvantageStats, Advantages, mix_rewards, terms_reward, groups_table)
from pettingllms_nb.core.rewards import RewardSpec, local, team, process
from pettingllms_nb.engine.trace import Step, Trace
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.envs.toy import Scout, Runner, scout_truth, runner_trust


def mk(uid, turn=0, role='a', reward=0.0, rollout_idx=0, sample=0, parent=None, terms=None):
    sid = f"{uid}#{rollout_idx}/t{turn}/{role}/{sample}"
    return Step(sid, parent or f"{uid}#{rollout_idx}/t{turn}", uid, turn, role, '', '', reward=reward,
                reward_terms=terms or {}, rollout_idx=rollout_idx, sample_idx=sample)


def close(a, b, tol=1e-9):
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        assert (x is None and y is None) or abs(x - y) <= tol, (a, b)


# ---------------------------------------------------------------------------------------------------- the maths
def test_one_group_by_hand_both_normalisations():
    steps = [mk('p', reward=r, rollout_idx=i) for i, r in enumerate([1., 0., 0., 0.])]
    sd = math.sqrt(0.1875)                       # population std of [1, 0, 0, 0]
    close(grpo(steps), [0.75 / (sd + 1e-6), -0.25 / (sd + 1e-6), -0.25 / (sd + 1e-6), -0.25 / (sd + 1e-6)])
    close(grpo(steps, normalize_std=False), [0.75, -0.25, -0.25, -0.25])
    close(grpo(steps, eps=0.0), [math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3)], 1e-12)
    sd1 = math.sqrt(0.75 / 3)                    # ddof=1 (verl's torch.std)
    close(grpo(steps, ddof=1, eps=0.0), [0.75 / sd1] + [-0.25 / sd1] * 3, 1e-12)
    g = grpo(steps).groups[0]
    assert (g.key, g.size, g.mean, g.indices, g.dropped, g.zero_variance) == ('p', 4, 0.25, [0, 1, 2, 3], False, False)
    assert abs(g.std - sd) < 1e-12


def test_two_valued_group_normalises_to_plus_minus_one():
    steps = [mk('p', reward=r, rollout_idx=i) for i, r in enumerate([3., 1., 3., 1.])]
    close(grpo(steps, eps=0.0), [1., -1., 1., -1.])
    close(grpo(steps, normalize_std=False), [1., -1., 1., -1.])


def test_eps_is_added_to_the_std():
    steps = [mk('p', reward=0.0), mk('p', reward=1e-7, rollout_idx=1)]   # std 5e-8, far below eps
    close(grpo(steps), [-5e-8 / (5e-8 + 1e-6), 5e-8 / (5e-8 + 1e-6)], 1e-12)   # ≈ ∓0.0476: shrunk, not blown up
    close(grpo(steps, eps=0.0), [-1.0, 1.0], 1e-9)
    close(grpo(steps, eps=0.5), [-5e-8 / (5e-8 + 0.5), 5e-8 / (5e-8 + 0.5)], 1e-15)
    close(grpo(steps, normalize_std=False, eps=123.), [-5e-8, 5e-8], 1e-20)      # eps unused without std
    with pytest.raises(ValueError, match="eps=-1"): grpo(steps, eps=-1)
    with pytest.raises(ValueError, match="ddof=2"): grpo(steps, ddof=2)


def test_zero_variance_groups_kept_as_zero_or_dropped():
    steps = [mk('p', reward=1.), mk('p', reward=0., rollout_idx=1),
             mk('q', reward=.1), mk('q', reward=.1, rollout_idx=1), mk('q', reward=.1, rollout_idx=2),
             mk('s', reward=7.)]                       # a group of one is zero-variance too
    kept = grpo(steps)
    assert kept[2:] == [0.0, 0.0, 0.0, 0.0]            # exactly 0, although mean([.1]*3) != .1 in floating point
    dropped = grpo(steps, drop_zero_variance=True)
    assert dropped[2:] == [None] * 4
    assert dropped[:2] == kept[:2]
    st = dropped.stats
    assert (st.steps, st.groups, st.zero_variance_groups, st.dropped_steps, st.singleton_groups) == (6, 3, 2, 4, 1)
    assert abs(st.zero_variance_frac - 2 / 3) < 1e-12 and st.mean_group_size == 2.0
    assert kept.stats.dropped_steps == 0
    d = st.as_dict()
    assert d['adv/groups'] == 3 and d['adv/dropped_steps'] == 4 and set(d) == {'adv/' + k for k in AdvantageStats.__dataclass_fields__}


def test_advantages_is_a_list_with_groups_and_stats():
    steps = [mk('p', reward=1.), mk('p', reward=0., rollout_idx=1)]
    adv = grpo(steps)
    assert isinstance(adv, list) and isinstance(adv, Advantages) and len(adv) == 2
    assert isinstance(adv.groups[0], GroupStats) and adv.stats.groups == 1
    assert '| p | 2 |' in adv._repr_markdown_()
    assert grpo([]) == [] and grpo([]).stats.groups == 0


def test_group_table_escapes_keys():
    g = group_stats([mk('<b>p|q</b>', reward=1.)], grpo_key)
    t = groups_table(g)
    assert '<b>' not in t and '&lt;b&gt;p\\|q&lt;/b&gt;' in t


# ---------------------------------------------------------------------------------------------------- the groups
def grid(n=3, shuffle_seed=0):
    "3 problems × 2 turns × 2 agents × n independent rollouts, rewards depending on all of them, shuffled."
    rng = random.Random(shuffle_seed)
    steps = [mk(f"p{p}", t, a, reward=round(10 * p + 3 * t + (a == 'coder') + rng.random(), 3), rollout_idx=r)
             for p in range(3) for t in range(2) for a in ('coder', 'tester') for r in range(n)]
    rng.shuffle(steps)
    return steps


def test_at_grpo_groups_never_mix_problems_turns_or_agents():
    steps = grid()
    adv = at_grpo(steps)
    assert adv.stats.groups == 12 and all(g.size == 3 for g in adv.groups)
    for g in adv.groups:
        members = [steps[i] for i in g.indices]
        assert len({(s.problem_uid, s.turn_idx, s.role) for s in members}) == 1
        assert g.key == (members[0].problem_uid, members[0].turn_idx, members[0].role)
        assert sorted(s.rollout_idx for s in members) == [0, 1, 2]
        rs = [s.reward for s in members]
        m = sum(rs) / 3; sd = math.sqrt(sum((r - m)**2 for r in rs) / 3)
        close([adv[i] for i in g.indices], [(r - m) / (sd + 1e-6) for r in rs], 1e-9)
    assert sorted(i for g in adv.groups for i in g.indices) == list(range(len(steps)))   # a partition


def test_grpo_groups_everything_of_one_problem():
    steps = grid()
    adv = grpo(steps, normalize_std=False)
    assert [g.size for g in adv.groups] == [12, 12, 12]
    for g in adv.groups:
        assert {steps[i].problem_uid for i in g.indices} == {g.key}
    for s, a in zip(steps, adv):
        mean = sum(x.reward for x in steps if x.problem_uid == s.problem_uid) / 12
        assert abs(a - (s.reward - mean)) < 1e-12


@pytest.mark.parametrize('fn', [grpo, at_grpo])
def test_shuffled_order_gives_the_same_advantage_per_step(fn):
    steps = grid()
    base = {s.id: a for s, a in zip(steps, fn(steps))}
    for seed in range(5):
        sh = steps[:]; random.Random(seed).shuffle(sh)
        assert {s.id: a for s, a in zip(sh, fn(sh))} == base


def test_index_arithmetic_would_mix_problems_keys_do_not():
    "Defect 2: groups of n consecutive steps mixed problems when a batch was not laid out as expected."
    steps = [mk('p', reward=1.), mk('q', reward=100.), mk('p', reward=0., rollout_idx=1), mk('q', reward=101., rollout_idx=1)]
    positional = [steps[0:2], steps[2:4]]
    assert any(len({s.problem_uid for s in g}) > 1 for g in positional)   # what index arithmetic did
    adv = grpo(steps, normalize_std=False)
    assert [g.key for g in adv.groups] == ['p', 'q']
    assert adv == [0.5, -0.5, -0.5, 0.5]


def test_keys_are_explicit_functions():
    s = mk('p', 2, 'coder', parent='p#0/t1/tester/3')
    assert grpo_key(s) == 'p'
    assert at_grpo_key(s) == ('p', 2, 'coder')
    assert at_grpo_key(s, tree=True) == ('p', 2, 'coder', 'p#0/t1/tester/3')
    adv = group_advantages([mk('p', role='x', reward=1.), mk('p', role='y', reward=0.)], key=lambda s: s.role)
    assert adv == [0.0, 0.0] and adv.stats.groups == 2
    with pytest.raises(TypeError, match="not hashable"): group_advantages([s], key=lambda s: [s.role])


def test_tree_mode_keys_on_the_parent_state():
    steps = [mk('p', 0, 'a', r, 0, i, parent='p#0') for i, r in enumerate([1., 0.])] + \
            [mk('p', 0, 'a', r, 1, i, parent='p#1') for i, r in enumerate([3., 2.])]
    assert is_tree(steps) and not is_tree(grid())
    assert at_grpo(steps, normalize_std=False) == [0.5, -0.5, 0.5, -0.5]
    assert at_grpo(steps, normalize_std=False, tree=False) == [-0.5, -1.5, 1.5, 0.5]
    assert is_tree(Trace(steps, meta={'mode': 'independent'})) is False


def test_non_finite_reward_names_the_step():
    with pytest.raises(ValueError, match=r"step 'p#0/t1/coder/0' \(problem 'p', turn 1, agent 'coder'\) has reward nan"):
        grpo([mk('p', 1, 'coder', float('nan'))])


# ---------------------------------------------------------------------------------------------------- real traces
def guess(req, rng): return f"#### [{rng.randint(0, 9)}]"
def noisy_trust(req, rng):
    h = req.text.split('hint ')[1].split(':')[0]
    return f"#### [{(int(h) if h != 'None' else 0) + rng.choice([-1, 0, 0])}]"


def test_at_grpo_on_a_tree_trace_matches_the_samplers_groups():
    t = rollout('toy_relay', {'scout': guess, 'runner': noisy_trust}, mode='tree', sample_num=4, seeds=range(6), max_turns=3)
    adv = at_grpo(t)
    assert is_tree(t) and adv.stats.steps == len(t)
    assert adv.stats.groups == len(t.groups()) and all(g.size == 4 for g in adv.groups)
    for g in adv.groups:
        members = [t[i] for i in g.indices]
        assert len({s.group_id for s in members}) == 1        # exactly the sampler's sibling groups
        assert len({(s.problem_uid, s.turn_idx, s.role, s.parent_id) for s in members}) == 1
    assert len({t[g.indices[0]].turn_idx for g in adv.groups}) > 1, "want a multi-turn trace"
    # shuffled: same advantage per step
    base = {s.id: a for s, a in zip(t, adv)}
    sh = list(t); random.Random(1).shuffle(sh)
    assert {s.id: a for s, a in zip(sh, at_grpo(sh))} == base
    # GRPO: one group per problem, mixing agents and turns
    g = grpo(t)
    assert g.stats.groups == 6
    assert {s.id: a for s, a in zip(sh, grpo(sh))} == {s.id: a for s, a in zip(t, g)}


def test_at_grpo_on_independent_rollouts_groups_the_n_rollouts():
    t = rollout('toy_relay', {'scout': guess, 'runner': noisy_trust}, sample_num=4, seeds=range(5), max_turns=3)
    assert not is_tree(t)
    adv = at_grpo(t)
    sizes = []
    for g in adv.groups:
        members = [t[i] for i in g.indices]
        assert len({(s.problem_uid, s.turn_idx, s.role) for s in members}) == 1
        assert len({s.rollout_idx for s in members}) == len(members)          # one step per rollout
        sizes.append(len(members))
    assert max(sizes) == 4 and adv.stats.singleton_groups < adv.stats.groups   # parent ids did not split them
    assert adv.stats.groups == len(t.groups())


def test_reward_fn_remixes_terms():
    t = rollout('toy_relay', {'scout': scout_truth, 'runner': noisy_trust}, mode='tree', sample_num=3, seeds=range(4))
    kinds = {**{x.name: x.kind for x in Scout.reward_spec.terms}, **{x.name: x.kind for x in Runner.reward_spec.terms}}
    same = at_grpo(t, reward_fn=terms_reward(kinds, alpha=1.0))
    assert same == at_grpo(t)                                     # the engine's mix, recomputed
    no_team = at_grpo(t, reward_fn=terms_reward(kinds, alpha=0.0), normalize_std=False)
    for g in no_team.groups:
        for i, r in zip(g.indices, g.rewards):
            assert abs(r - (t[i].reward - t[i].reward_terms.get('solved', 0.0))) < 1e-12


def test_mix_rewards():
    kinds = {'own': 'local', 'team': 'global', 'fmt': 'process'}
    assert mix_rewards({'own': .5, 'team': 1., 'fmt': -.5}, kinds) == 1.0
    assert mix_rewards({'own': .5, 'team': 1., 'fmt': -.5}, kinds, alpha=.25, weights={'own': 2.}) == 1. + .25 - .5
    spec = RewardSpec([local('own', None), team('team', None, weight=3.), process('fmt', None, weight=.5)], alpha=.5)
    vals = {'own': .2, 'team': 1., 'fmt': -1.}
    assert abs(mix_rewards(vals, spec, alpha=spec.alpha) - spec.mix(vals)) < 1e-12
    with pytest.raises(ValueError, match="'oops' has kind None"): mix_rewards({'oops': 1.}, kinds)
    with pytest.raises(ValueError, match="'own' has kind 'team'"): mix_rewards({'own': 1.}, {'own': 'team'})


def test_logging(caplog):
    from pettingllms_nb.training.advantages import zero_variance_batches
    zero_variance_batches(reset=True)       # the no-signal advice is said once (per run: the trainer resets it)
    with caplog.at_level(logging.INFO, logger='pettingllms_nb.training.advantages'):
        at_grpo([mk('p', reward=1.), mk('p', reward=1., rollout_idx=1)])
    msgs = [r.getMessage() for r in caplog.records]
    assert any('2 steps in 1 groups' in m for m in msgs)
    assert any(r.levelno == logging.WARNING and 'no learning signal' in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger='pettingllms_nb.training.advantages'):
        at_grpo([mk('p', reward=1.), mk('p', reward=1., rollout_idx=1)])
    assert not any(r.levelno == logging.WARNING for r in caplog.records) and zero_variance_batches() == 2   # counted


def test_imports_stay_light():
    code = "import sys, pettingllms_nb.training.advantages, pettingllms_nb.training.losses; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == 'False'


# ---------------------------------------------------------------------------------------------------- the loss
torch = pytest.importorskip('torch')
from pettingllms_nb.training.losses import ppo_loss, masked_mean, build_batch, batch_from_steps, token_logprobs, token_entropy, PolicyBatch


def t(x, **kw): return torch.tensor(x, dtype=torch.float32, **kw)


def test_ratio_one_gives_minus_token_mean_advantage():
    lp = t([[-1., -2., -3.], [-.5, -.5, 9.]], requires_grad=True)
    mask = t([[1, 1, 1], [1, 1, 0]])
    loss, met = ppo_loss(lp, lp.detach(), t([2., -1.]), mask)
    assert abs(loss.item() - -(3 * 2. + 2 * -1.) / 5) < 1e-6
    assert (met['ratio_mean'], met['clip_frac'], met['approx_kl'], met['tokens']) == (1., 0., 0., 5.)
    loss.backward()
    assert torch.allclose(lp.grad, t([[-.4, -.4, -.4], [.2, .2, 0.]]))   # -A/5 on unmasked tokens only
    seq, _ = ppo_loss(lp.detach(), lp.detach(), t([2., -1.]), mask, agg='seq-mean-token-mean')
    assert abs(seq.item() - -(2. + -1.) / 2) < 1e-6


@pytest.mark.parametrize('ratio,adv,loss,clipped', [(1.5, 1., -1.2, 1.), (0.5, -1., 0.8, 1.), (0.5, 1., -0.5, 0.),
                                                     (1.5, -1., 1.5, 0.), (1.1, 2., -2.2, 0.), (0.7, -2., 1.6, 1.)])
def test_clipping_by_hand(ratio, adv, loss, clipped):
    lp = t([[math.log(ratio)]], requires_grad=True)
    l, met = ppo_loss(lp, t([[0.]]), t([adv]), t([[1.]]), clip_ratio=0.2)
    assert abs(l.item() - loss) < 1e-6 and met['clip_frac'] == clipped
    assert abs(met['approx_kl'] - ((ratio - 1) - math.log(ratio))) < 1e-6
    l.backward()
    assert abs(lp.grad.item() - (0. if clipped else -ratio * adv)) < 1e-6


def test_clip_fraction_over_a_batch():
    lp = torch.log(t([[1.5, 1.0, 0.5, 1.5]]))
    _, met = ppo_loss(lp, torch.zeros(1, 4), t([1.]), torch.ones(1, 4))
    assert met['clip_frac'] == 0.5 and abs(met['ratio_mean'] - 1.125) < 1e-6


def test_masks_exclude_padding_and_its_gradient():
    old = t([[0., 0., 0.], [0., 0., 0.]])
    mask = t([[1, 1, 0], [1, 0, 0]])
    a = t([1., -2.])
    lp1 = t([[.05, .1, 0.], [.3, 0., 0.]], requires_grad=True)     # no token clipped
    lp2 = t([[.05, .1, 80.], [.3, -300., 1e4]], requires_grad=True)   # garbage in the padding
    l1, m1 = ppo_loss(lp1, old, a, mask)
    l2, m2 = ppo_loss(lp2, old, a, mask)
    assert l1.item() == l2.item() and m1 == m2
    l2.backward()
    assert torch.isfinite(lp2.grad).all()
    assert (lp2.grad[mask == 0] == 0).all() and (lp2.grad[mask == 1] != 0).all()
    # int and bool masks work the same
    assert ppo_loss(lp1.detach(), old, a, mask.bool())[0].item() == ppo_loss(lp1.detach(), old, a, mask.long())[0].item() == l1.item()


def test_kl_term_k3_and_entropy_bonus():
    lp = t([[0., math.log(.5)]])
    ref = t([[math.log(2.), math.log(.5)]])      # d = ref - logp = ln 2, 0
    k3 = ((2 - math.log(2) - 1) + 0.) / 2
    loss, met = ppo_loss(lp, lp, t([0.]), torch.ones(1, 2), ref_logprobs=ref, kl_coef=.1)
    assert abs(met['kl_ref'] - k3) < 1e-6 and abs(loss.item() - .1 * k3) < 1e-6
    loss, met = ppo_loss(lp, lp, t([0.]), torch.ones(1, 2), ref_logprobs=ref)      # no KL by default: reported only
    assert loss.item() == 0. and abs(met['kl_ref'] - k3) < 1e-6
    ent = t([[2., 4.]])
    loss, met = ppo_loss(lp, lp, t([1.]), torch.ones(1, 2), entropy=ent, entropy_coef=.01)
    assert met['entropy'] == 3. and abs(loss.item() - (-1. - .03)) < 1e-6
    # the KL gradient pulls logp towards ref: d k3 / d logp = 1 - exp(ref - logp)
    lp_g = lp.clone().requires_grad_()
    l, _ = ppo_loss(lp_g, lp, t([0.]), torch.ones(1, 2), ref_logprobs=ref, kl_coef=1.)
    l.backward()
    assert torch.allclose(lp_g.grad, t([[(1 - 2.) / 2, 0.]]), atol=1e-6)


def test_loss_argument_errors():
    z = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="needs ref_logprobs"): ppo_loss(z, z, torch.zeros(2), z, kl_coef=.1)
    with pytest.raises(ValueError, match="needs entropy"): ppo_loss(z, z, torch.zeros(2), z, entropy_coef=.1)
    with pytest.raises(ValueError, match=r"mask has shape \(2, 2\)"): ppo_loss(z, z, torch.zeros(2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match=r"advantages has shape \(3,\)"): ppo_loss(z, z, torch.zeros(3), z)
    with pytest.raises(ValueError, match="clip_ratio"): ppo_loss(z, z, torch.zeros(2), z, clip_ratio=0)
    with pytest.raises(ValueError, match="allowed"): ppo_loss(z, z, torch.zeros(2), z, agg='sum')
    l, met = ppo_loss(z, z, torch.zeros(2, 3), torch.zeros(2, 3))   # per-token advantages, no tokens at all
    assert l.item() == 0. and met['tokens'] == 0.


def test_build_batch_aligns_completions_with_predictions():
    b = build_batch([[5, 6], [7]], [[1, 2, 3], [4]], [[-.1, -.2, -.3], [-.4]], [1., -1.], pad_id=9)
    assert b.input_ids.tolist() == [[5, 6, 1, 2, 3], [7, 4, 9, 9, 9]]
    assert b.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    assert b.loss_mask.tolist() == [[0, 1, 1, 1], [1, 0, 0, 0]]
    assert b.input_ids[:, 1:][b.loss_mask.bool()].tolist() == [1, 2, 3, 4]
    assert torch.allclose(b.old_logprobs, t([[0., -.1, -.2, -.3], [-.4, 0., 0., 0.]]))
    assert b.advantages.tolist() == [1., -1.] and len(b) == 2
    with pytest.raises(ValueError, match="empty prompt"): build_batch([[]], [[1]], [[0.]], [1.])
    with pytest.raises(ValueError, match="advantage None"): build_batch([[1]], [[1]], [[0.]], [None])
    with pytest.raises(ValueError, match="2 completions"): build_batch([[1]], [[1], [2]], [[0.]], [1.])


def test_batch_logprobs_roundtrip_through_a_model():
    "Old log-probs recorded at sampling equal the model's token_logprobs at the masked columns: ratio 1 exactly."
    torch.manual_seed(0)
    model = torch.nn.Embedding(8, 8)
    prompts, comps = [[0, 1, 2], [3]], [[4, 5], [6, 7, 1]]
    with torch.no_grad():
        old = []
        for p, c in zip(prompts, comps):
            x = torch.tensor([p + c])
            old.append(token_logprobs(model(x), x)[0, len(p) - 1:].tolist())
    b = build_batch(prompts, comps, old, [1., -1.])
    logp = token_logprobs(model(b.input_ids), b.input_ids)
    ref = torch.log_softmax(model(b.input_ids)[:, :-1], -1).gather(-1, b.input_ids[:, 1:, None]).squeeze(-1)
    assert torch.allclose(logp, ref, atol=1e-6)
    loss, met = ppo_loss(logp, b.old_logprobs, b.advantages, b.loss_mask, entropy=token_entropy(model(b.input_ids)))
    assert abs(met['ratio_mean'] - 1.) < 1e-6 and met['tokens'] == 5.
    assert abs(loss.item() - -(2 * 1. + 3 * -1.) / 5) < 1e-6
    loss.backward()
    used = {2, 4, 3, 6, 7}          # the input tokens at the scored columns (their logits predict completion tokens)
    for tok in range(8):
        assert (model.weight.grad[tok].abs().sum() > 0) == (tok in used), tok


def test_token_entropy_by_hand():
    lg = torch.log(t([[[.5, .5], [.9, .1], [.5, .5]]]))
    assert torch.allclose(token_entropy(lg), t([[math.log(2), -(.9 * math.log(.9) + .1 * math.log(.1))]]), atol=1e-6)


def test_batch_from_steps_skips_dropped_and_needs_tokens():
    steps = [mk('p', reward=1.), mk('p', reward=0., rollout_idx=1), mk('q', reward=5.), mk('q', reward=5., rollout_idx=1)]
    for i, s in enumerate(steps): s.token_ids, s.logprobs = [10 + i, 20 + i], [-.5, -.25]
    adv = grpo(steps, drop_zero_variance=True)
    b = batch_from_steps(steps, adv, prompt_ids=lambda s: [1, 2])
    assert b.rows == [0, 1] and torch.allclose(b.advantages, t([adv[0], adv[1]]))
    assert b.input_ids.tolist() == [[1, 2, 10, 20], [1, 2, 11, 21]]
    assert isinstance(b.to('cpu'), PolicyBatch)
    steps[0].token_ids = None
    with pytest.raises(ValueError, match="has no token_ids/logprobs"): batch_from_steps(steps, adv, prompt_ids=[[1]] * 4)
    with pytest.raises(ValueError, match="4 steps but 3 advantages"): batch_from_steps(steps, adv[:3], prompt_ids=[[1]] * 4)

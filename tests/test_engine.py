"Rollout engine: tree sampling groups, selected-branch continuation, garbage, determinism, traces."
import dataclasses, json, math, warnings
import pytest
from pettingllms_nb.engine.rollout import rollout, arollout
from pettingllms_nb.engine.policies import ScriptedPolicy, ReplayPolicy, Request, Completion, Policy
from pettingllms_nb.engine.trace import Step, Trace
from pettingllms_nb.engine.check_env import check_env
from pettingllms_nb.envs.toy import Scout, Runner, scout_truth, runner_trust
ROLES = ['scout', 'runner']


def guess(req, rng): return f"#### [{rng.randint(0, 9)}]"


def tree(n=4, seeds=range(6), **kw):
    return rollout('toy_relay', {'scout': guess, 'runner': runner_trust}, mode='tree', sample_num=n, seeds=seeds, **kw)


def test_tree_groups_have_n_members_sharing_one_parent():
    t = tree(n=5)
    groups = t.groups()
    assert groups
    for gid, steps in groups.items():
        assert len(steps) == 5, gid
        assert len({s.parent_id for s in steps}) == 1
        assert sum(s.selected for s in steps) == 1
        assert len({(s.problem_uid, s.turn_idx, s.role) for s in steps}) == 1


def test_later_prompts_come_from_the_selected_branch():
    t = tree(n=4, seeds=range(10))
    checked = 0
    for steps in t.groups().values():
        kept = next(s for s in steps if s.selected)
        children = [s for s in t if s.parent_id == kept.id]
        for c in children:
            # the child was prompted with the state the kept branch produced, and nothing else
            assert t.state_before(c) == kept.state_after
            if c.role == 'runner':
                assert f"hint {kept.state_after['hint']}" in c.prompt['text']
            checked += 1
        for other in steps:
            if not other.selected:
                assert not [s for s in t if s.parent_id == other.id]  # discarded branches have no children
    assert checked > 10


def test_branch_rewards_differ_when_actions_differ():
    t = tree(n=6, seeds=range(8))
    differing = 0
    for steps in t.groups().values():
        if steps[0].role != 'scout': continue
        right = {s.action == s.state_after['target'] - s.state_after['count'] for s in steps}
        if right == {True, False}:
            assert len({s.reward for s in steps}) > 1
            differing += 1
        for s in steps:   # each branch's state holds its own action
            assert s.state_after['hint'] == s.action
    assert differing > 0


def test_no_group_mixes_problems_turns_or_agents():
    for mode, n in (('tree', 3), ('independent', 3)):
        t = rollout('toy_relay', {'scout': guess, 'runner': runner_trust}, mode=mode, sample_num=n, seeds=range(12), max_turns=3)
        for gid, steps in t.groups().items():
            assert len({s.problem_uid for s in steps}) == 1, gid
            assert len({s.turn_idx for s in steps}) == 1, gid
            assert len({s.role for s in steps}) == 1, gid
        assert len({s.problem_uid for s in t}) == 12


def test_independent_rollouts_are_separate_episodes():
    t = rollout('toy_relay', {'scout': guess, 'runner': runner_trust}, sample_num=4, seeds=range(3))
    assert len(t.episodes) == 12
    assert sorted({(e.problem_uid, e.rollout_idx) for e in t.episodes}).__len__() == 12
    assert all(s.selected for s in t)


@pytest.mark.parametrize('junk', ['', None, '<script>alert(1)</script>', '#### [[[[', 'x' * 100000, '\x00\xff', 42])
def test_garbage_never_raises(junk):
    t = rollout('toy_relay', lambda req: junk, mode='tree', sample_num=2, seeds=[0, 1], max_turns=2)
    assert all(s.format_error for s in t)
    assert all(math.isfinite(s.reward) for s in t)
    assert t.success_rate() == 0.0


def test_success_stops_early_and_is_recorded():
    t = rollout('toy_relay', {'scout': scout_truth, 'runner': runner_trust}, seeds=range(10), max_turns=3)
    assert t.success_rate() == 1.0
    assert all(e.turns == 1 and e.done for e in t.episodes)
    assert len(t) == 20


def test_rollouts_are_deterministic():
    a, b = tree(seeds=range(5)), tree(seeds=range(5))
    assert [(s.id, s.completion, s.reward, s.selected) for s in a] == [(s.id, s.completion, s.reward, s.selected) for s in b]


def test_replay_reproduces_a_trace(tmp_path):
    t = tree(n=3, seeds=range(4))
    path = t.save(tmp_path / 'trace.jsonl')
    r = rollout('toy_relay', ReplayPolicy(path), mode='tree', sample_num=3, seeds=range(4))
    assert [(s.id, s.completion, s.reward, s.selected) for s in r] == [(s.id, s.completion, s.reward, s.selected) for s in t]


def test_one_batch_per_agent_turn():
    calls = []

    class Counting(Policy):
        def generate(self, requests):
            calls.append((requests[0].role, len(requests), requests[0].n))
            return [[Completion('#### [1]')] * r.n for r in requests]

    rollout('toy_relay', Counting(), mode='tree', sample_num=4, seeds=range(5), max_turns=1)
    assert calls == [('scout', 5, 4), ('runner', 5, 4)]


def test_simultaneous_schedule_builds_prompts_at_turn_start():
    t = rollout('toy_relay', {'scout': scout_truth, 'runner': runner_trust}, seeds=[0], max_turns=1, schedule='simultaneous')
    runner = t.filter(role='runner')[0]
    assert 'hint None' in runner.prompt['text']


def test_wrong_policy_output_is_an_error():
    class Short(Policy):
        def generate(self, requests): return [[Completion('x')] for r in requests]
    with pytest.raises(RuntimeError, match='wrong number of completions'):
        rollout('toy_relay', Short(), mode='tree', sample_num=3, seeds=[0])


def test_toy_env_passes_check_env():
    rep = check_env('toy_relay', probe_response='#### [1]')
    assert rep.ok, rep


def test_infra_error_reaches_the_step():
    "An agent that marks an infrastructure failure gets it on its trace step (the trainer leaves such steps out)."
    from pettingllms_nb.core.registry import registry
    class FlakyRunner(Runner):
        async def step(self, env, worker=None):
            self.infra_error = "sandbox down (test)"
    registry.add('agent', 'flaky_runner', FlakyRunner, env='toy_relay'); FlakyRunner.role = 'flaky_runner'
    try:
        t = rollout('toy_relay', {'scout': scout_truth, 'flaky_runner': runner_trust}, seeds=[0], max_turns=2,
                    turn_order=['scout', 'flaky_runner'])
    finally: registry.entries['agent'].pop('flaky_runner')
    assert {s.role: s.infra_error for s in t} == {'scout': None, 'flaky_runner': 'sandbox down (test)'}


def test_take_turn_is_what_the_engine_does():
    "take_turn plays one agent turn on an env exactly as a rollout step does (same state after, same reward)."
    from pettingllms_nb.core.agent import take_turn
    from pettingllms_nb.core.registry import make_env, make_agent
    t = rollout('toy_relay', {'scout': scout_truth, 'runner': runner_trust}, seeds=[5], max_turns=1)
    env, scout = make_env('toy_relay'), make_agent('scout')
    env.reset(5)
    scout.update_from_env(env, 0)
    assert take_turn(scout, env, t[0].completion) == t[0].reward
    assert env.state.to_dict() == t[0].state_after


def test_sample_num_is_the_one_name_and_n_still_works():
    "Samples per problem is `sample_num`; the old `n=` gives the same rollouts, with a DeprecationWarning."
    new = rollout('toy_relay', {'scout': guess, 'runner': runner_trust}, mode='tree', sample_num=3, seeds=range(3))
    with pytest.warns(DeprecationWarning, match='use sample_num=3'):
        old = rollout('toy_relay', {'scout': guess, 'runner': runner_trust}, mode='tree', n=3, seeds=range(3))
    assert [(s.id, s.completion, s.reward) for s in old] == [(s.id, s.completion, s.reward) for s in new]
    assert new.meta['sample_num'] == 3 and 'n' not in new.meta
    with pytest.raises(TypeError, match='pass sample_num= only'):
        rollout('toy_relay', runner_trust, sample_num=2, n=3)


def test_allowed_values_have_one_home():
    "The config checks rollout modes, schedules, selections and algorithms against the tuples their owners registered."
    import warnings
    from pettingllms_nb.core import config
    from pettingllms_nb.core.checks import registered_checks
    from pettingllms_nb.engine import rollout as engine
    from pettingllms_nb.training.advantages import ESTIMATORS
    checks = registered_checks()
    assert checks['training.rollout_mode'].allowed is engine.MODES and checks['training.branch_select'].allowed is engine.SELECTS
    assert checks['multi_agent_interaction.schedule'].allowed is engine.SCHEDULES
    assert checks['training.algorithm'].allowed == tuple(ESTIMATORS)
    with pytest.warns(DeprecationWarning, match='ROLLOUT_MODES is deprecated'): old = config.ROLLOUT_MODES   # the old names
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        assert old is engine.MODES and config.BRANCH_SELECTS is engine.SELECTS and config.ALGORITHMS == tuple(ESTIMATORS)


def test_a_step_role_is_the_field_and_agent_its_deprecated_alias(tmp_path):
    "`Step.role` is the field (as `Request.role`); `Step.agent`, `Step(agent=)`, `filter(agent=)` still work, warning."
    names = [f.name for f in dataclasses.fields(Step)]
    assert names[4] == 'role' and 'agent' not in names
    s = Step('p#0/t0/scout/0', 'p#0', 'p', 0, 'scout', {'text': 'hi'}, '#### [1]')
    with pytest.warns(DeprecationWarning, match=r"Step\.agent is deprecated; use \.role"): assert s.agent == 'scout'
    with pytest.warns(DeprecationWarning, match=r"Step\.agent is deprecated"): s.agent = 'runner'
    assert s.role == 'runner'
    with pytest.warns(DeprecationWarning, match=r"Step\(agent=\.\.\.\) is deprecated; use role='scout'"):
        old = Step('p#0/t0/scout/0', 'p#0', 'p', 0, agent='scout', prompt={'text': 'hi'}, completion='#### [1]')
    assert old == Step('p#0/t0/scout/0', 'p#0', 'p', 0, 'scout', {'text': 'hi'}, '#### [1]')
    with pytest.raises(TypeError, match='pass role= only'): Step('i', 'p', 'u', 0, 'scout', agent='scout', prompt='', completion='')
    t = Trace([old, dataclasses.replace(old, id='p#0/t0/runner/0', role='runner')], roots={'p#0': {}})
    assert t.filter(role='runner') == [t[1]]
    with pytest.warns(DeprecationWarning, match=r"Trace\.filter\(agent=\.\.\.\) is deprecated; use role='runner'"):
        assert t.filter(agent='runner') == [t[1]]
    # a trace saved before the rename: its step rows say `agent`; it loads, silently, and saves again as `role`
    rows = [json.loads(l) for l in t.save(tmp_path/'new.jsonl').read_text().splitlines()]
    assert all('role' in r and 'agent' not in r for r in rows if r['kind'] == 'step')
    legacy = [{('agent' if k == 'role' else k): v for k, v in r.items()} for r in rows]
    (tmp_path/'old.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in legacy))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        back = Trace.load(tmp_path/'old.jsonl')
    assert back.steps == t.steps and [s.role for s in back] == ['scout', 'runner']


def test_the_library_itself_never_uses_the_old_name(tmp_path):
    "A rollout, a saved and loaded trace, its summary and every widget read `role`: no `agent` deprecation warning."
    from pettingllms_nb.training.advantages import at_grpo
    from pettingllms_nb.widgets.render import PHASES, render_phase, render_step_card
    from pettingllms_nb.widgets.stepthrough import StepThrough, TreeView, GroupInspector, render_tree
    from pettingllms_nb.envs.stateful import oracle_policy
    with warnings.catch_warnings():
        warnings.filterwarnings('error', message=r'.*\bagent\b.*deprecated', category=DeprecationWarning)
        for t in (tree(n=3, seeds=range(2)), rollout('tiny_plan_path', oracle_policy, mode='tree', sample_num=2, seeds=[0])):
            back = Trace.load(t.save(tmp_path/'t.jsonl'))
            assert back.steps == t.steps and back.summary() == t.summary()
            html = back._repr_html_() + repr(back) + render_tree(back, at_grpo(back))
            html += ''.join(render_phase(back, i, ph) + render_step_card(s, ph, back.state_before(s))
                            for i, s in enumerate(back) for ph in PHASES)
            st = StepThrough(back)
            for _ in range(2 * len(PHASES)): html += st.html; st.next_button.click()
            html += TreeView(back).html + GroupInspector(back).html
            assert "data-agent='" in html                                       # the cards keep their attribute


def test_check_env_says_no_credit_notice_for_a_mode_the_user_did_not_choose(caplog):
    "check_env samples a tree itself; the 'credit is not applied in tree mode' advice is for users who chose tree mode."
    import logging
    from pettingllms_nb.core.config import load_config
    from pettingllms_nb.engine.check_env import check_env
    from pettingllms_nb.envs.stateful import oracle_policy
    cfg = load_config('tiny_plan_path', ['agent_policy_configs.agent_configs.agent_1.kwargs.credit=turn'])
    notice = 'RewardSpec.credit is not applied in tree mode'
    with caplog.at_level(logging.WARNING): check_env(cfg, seeds=[0, 1], policy=oracle_policy, raise_on_fail=False)
    assert not [r for r in caplog.records if notice in r.getMessage()]
    with caplog.at_level(logging.WARNING): rollout(cfg, oracle_policy, mode='tree', sample_num=2, seeds=[0])
    assert [r for r in caplog.records if notice in r.getMessage()]   # asked for: still said


# -- snapshots: the fast conversion is the general one ----------------------------------------------------------------
@pytest.mark.parametrize('preset', ['tiny_plan_path', 'tiny_sudoku', 'tiny_sokoban', 'tiny_math', 'tiny_search'])
def test_fast_state_snapshots_equal_the_general_conversion(monkeypatch, preset):
    "Every state a rollout records (tree and independent) converts the same through `_jsonable`'s fast path and `_jsonable_any`."
    import pettingllms_nb.core.state as st
    from pettingllms_nb.core.registry import registry
    fast, seen = st._jsonable, []
    def both(x):
        a, b = fast(x), st._jsonable_any(x)
        assert a == b and json.dumps(a) == json.dumps(b), type(x).__name__
        seen.append(type(x)); return a
    monkeypatch.setattr(st, '_jsonable', both)
    env = {'tiny_math': 'math_env', 'tiny_search': 'search_env'}.get(preset, 'stateful_env')
    pol = registry.scripted(env, 'random')
    for mode in ('tree', 'independent'): rollout(preset, pol, mode=mode, sample_num=2, seeds=range(2))
    assert len(seen) > 50

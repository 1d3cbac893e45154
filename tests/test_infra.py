"""A rollout with a broken sandbox completes, with every affected step marked `infra_error` and none of them scored
(issue 11), for every environment whose agents run programs, in both rollout modes; the healthy sandbox marks none."""
import math
from types import SimpleNamespace
import pytest
from pettingllms_nb.core.registry import registry
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.training.advantages import at_grpo, grpo


class Raising:
    "The execution worker itself fails (its pool died)."
    async def run(self, code, stdin='', expected=None, **kw): raise ConnectionError('the sandbox pool is gone')


class SaysIE:
    "The sandbox runs, and reports that it failed (no namespace, a dead launcher)."
    async def run(self, code, stdin='', expected=None, **kw):
        return SimpleNamespace(verdict='IE', stdout='', stderr='', message='bwrap: cannot create a namespace')


# (env, env kwargs, turn order): every registered environment whose agents run programs, with its oracle
PROGRAM_ENVS = [('stateful_env', {'benchmark': 'plan_path'}, ['tool_call_agent', 'plan_agent']),
                ('stateful_env', {'benchmark': 'sudoku'}, ['tool_call_agent', 'plan_agent']),
                ('math_env', {}, ['tool_generator', 'reasoning_generator']),
                ('code_env', {}, ['code_generator', 'test_generator']),
                ('code_env', {}, ['code_single_agent'])]


def test_every_environment_that_runs_programs_is_here():
    runs = {e for e in registry.names("env")
            if any(getattr(registry.get('agent', a), 'uses_sandbox', False) for a in registry.agents_for(e))}
    assert runs <= {e for e, _, _ in PROGRAM_ENVS}, runs


def _uses(role): return getattr(registry.get('agent', role), 'uses_sandbox', False)


@pytest.mark.parametrize('env,kw,order', PROGRAM_ENVS, ids=lambda x: x if isinstance(x, str) else '')
@pytest.mark.parametrize('mode', ['independent', 'tree'])
@pytest.mark.parametrize('worker,why', [(Raising(), 'the sandbox pool is gone'), (SaysIE(), 'bwrap: cannot create a namespace')],
                         ids=['raises', 'says_IE'])
def test_a_broken_sandbox_marks_every_affected_step_and_scores_none(env, kw, order, mode, worker, why):
    oracle = registry.scripted(env, 'oracle')
    tr = rollout(env, oracle, mode=mode, sample_num=2, seeds=range(2), max_turns=2, worker=worker, turn_order=order, **kw)
    assert tr.episodes and len(tr.episodes) == (2 if mode == 'tree' else 4)        # the rollout completed
    hit = [s for s in tr if _uses(s.role)]
    assert hit and all(s.infra_error and why in s.infra_error for s in hit), [(s.role, s.infra_error) for s in hit]
    assert all(s.reward is None and s.reward_terms == {} for s in hit)              # not scored: no reward, no term
    assert all(s.infra_error is None for s in tr if not _uses(s.role))             # the others were carried out
    for adv in (at_grpo(tr), grpo(tr)):
        assert all(adv[i] is None for i, s in enumerate(tr) if s.infra_error)        # in no advantage group
        assert adv.stats.infra_steps == len(hit)
    assert all(e.infra_errors for e in tr.episodes) and math.isnan(tr.success_rate())   # counted in no success rate
    sm = tr.summary()
    assert sm['infra_errors'] == len(hit) and sm['infra_episodes'] == len(tr.episodes)
    assert "not scored" in tr._repr_html_()


@pytest.mark.parametrize('env,kw,order', PROGRAM_ENVS[::2], ids=lambda x: x if isinstance(x, str) else '')
def test_the_healthy_sandbox_marks_nothing(env, kw, order):
    tr = rollout(env, registry.scripted(env, 'oracle'), seeds=range(2), max_turns=2, turn_order=order, **kw)
    assert not any(s.infra_error for s in tr) and tr.success_rate() == 1.0

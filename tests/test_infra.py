"""A rollout with a broken sandbox completes, with every affected step marked `infra_error` and none of them scored
(issue 11), for every environment whose agents run programs, in both rollout modes; the healthy sandbox marks none."""
import importlib.util, math
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
if importlib.util.find_spec('reasoning_gym'):   # the [interop] extra's reasoning-gym: its tool agent's programs
    PROGRAM_ENVS.append(('reasoning_gym_env', {'task': 'basic_arithmetic'}, ['rg_tool', 'rg_reasoner']))


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


# -- only infrastructure is infrastructure (issue 26) --------------------------------------------------------------
from contextlib import contextmanager
from pettingllms_nb.core.agent import InfrastructureError, StepError, is_infrastructure
from pettingllms_nb.envs.toy import Runner, scout_truth


@contextmanager
def _toy_agent(name, cls):
    "`cls` registered as agent `name` of toy_relay for the block."
    cls.role = name
    registry.add('agent', name, cls, env='toy_relay')
    try: yield
    finally: registry.entries['agent'].pop(name)


def _still(req): return "#### [0]"   # the runner adds nothing: the episode runs all its turns


def _toy(name, mode):
    return rollout('toy_relay', {'scout': scout_truth, name: _still}, mode=mode, sample_num=2, seeds=[3], max_turns=3,
                   turn_order=['scout', name])


@pytest.mark.parametrize('mode', ['independent', 'tree'])
@pytest.mark.parametrize('bug', [ZeroDivisionError('integer division or modulo by zero'),
                                 ModuleNotFoundError("No module named 'rapidfuzz'"), KeyError('hint')],
                         ids=lambda e: type(e).__name__)
def test_a_bug_in_a_step_fails_the_rollout_naming_env_agent_and_turn(mode, bug):
    "A deliberate bug in an environment's step (turn 1) ends the rollout; before, it was an unscored 'infra' step."
    class BuggyRunner(Runner):
        async def step(self, env, worker=None):
            if env.turn == 1: raise bug
            await super().step(env, worker)
    with _toy_agent('buggy_runner', BuggyRunner), pytest.raises(StepError) as e: _toy('buggy_runner', mode)
    assert "env 'toy_relay' (toy_relay/seed=3), agent 'buggy_runner', turn 1: " \
           f"BuggyRunner.step raised {type(bug).__name__}" in str(e.value), e.value
    assert e.value.__cause__ is bug                          # chained: the traceback shows where the bug is


def test_a_bug_in_a_reward_fails_the_rollout_too():
    class BadReward(Runner):
        def calculate_reward(self, env): return 1 / 0
    with _toy_agent('bad_reward_runner', BadReward), pytest.raises(StepError, match=
            r"agent 'bad_reward_runner', turn 0: BadReward.calculate_reward raised ZeroDivisionError") as e:
        _toy('bad_reward_runner', 'independent')
    assert isinstance(e.value.__cause__, ZeroDivisionError)


def _infra_classes():
    "Each declared infrastructure failure a step can meet: (what, the exception class)."
    from pettingllms_nb.envs.alfworld.engine import SimulatorError
    from pettingllms_nb.envs.web.browser import BrowserError
    from pettingllms_nb.envs.search.env import RetrievalError     # declared by the search env (its class lives in retrieval)
    out = [('simulator', SimulatorError), ('browser', BrowserError), ('retriever', RetrievalError),
           ('own', type('CountingServiceDown', (InfrastructureError,), {}))]
    try:
        from pettingllms_nb.models.openai import OpenAIServerError
        out.append(('policy server', OpenAIServerError))
    except ImportError: pass
    return out


@pytest.mark.parametrize('mode', ['independent', 'tree'])
@pytest.mark.parametrize('what,cls', _infra_classes(), ids=[w for w, _ in _infra_classes()])
def test_a_declared_infrastructure_failure_is_an_unscored_step(what, cls, mode):
    "A dead simulator, browser, retriever or policy server raised out of a step: marked, not scored, the rollout goes on."
    class DeadMachine(Runner):
        async def step(self, env, worker=None):
            if env.turn == 1: raise cls(f"the {what} went away")
            await super().step(env, worker)
    with _toy_agent('dead_machine_runner', DeadMachine): tr = _toy('dead_machine_runner', mode)
    hit = [s for s in tr if s.infra_error]
    assert hit and all(s.role == 'dead_machine_runner' and s.turn_idx == 1 for s in hit)
    assert all(s.infra_error == f"DeadMachine.step raised {cls.__name__}: the {what} went away" for s in hit)
    assert all(s.reward is None and s.reward_terms == {} for s in hit)
    assert len({s.turn_idx for s in tr}) == 3                    # the rollout went on after it


def test_which_exceptions_are_infrastructure():
    assert [is_infrastructure(e) for e in (ZeroDivisionError(), ImportError(), ConnectionError(), RuntimeError())] \
           == [False] * 4
    assert all(is_infrastructure(cls('x')) for _, cls in _infra_classes())


class _FlakyServer:
    "A policy server that answers, then fails on its `fail_on`-th call (an `InfrastructureError`, or `bug`)."
    def __init__(self, answer, fail_on=2, bug=None):
        self.answer, self.fail_on, self.bug, self.calls = answer, fail_on, bug, 0
    def generate(self, requests):
        self.calls += 1
        if self.calls == self.fail_on:
            raise self.bug or InfrastructureError("policy server http://127.0.0.1:9/v1: connection refused")
        return [[self.answer(r)] * r.n for r in requests]


@pytest.mark.parametrize('mode', ['independent', 'tree'])
def test_a_policy_server_failing_during_generation_is_an_unscored_turn(mode):
    "Before, the exception ended the whole rollout; now the turn is unanswered and marked, and the episode goes on."
    pol = {'scout': _FlakyServer(scout_truth), 'runner': _FlakyServer(_still)}
    tr = rollout('toy_relay', pol, mode=mode, sample_num=2, seeds=[3, 4], max_turns=3, turn_order=['scout', 'runner'])
    hit = [s for s in tr if s.infra_error]
    assert hit and {(s.role, s.turn_idx) for s in hit} == {('scout', 1), ('runner', 1)}
    assert all(s.infra_error.startswith('policy _FlakyServer: InfrastructureError: policy server') for s in hit)
    assert all(s.reward is None and s.reward_terms == {} and s.action is None and s.format_error is None for s in hit)
    assert len({s.turn_idx for s in tr}) == 3 and all(e.infra_errors for e in tr.episodes)   # went on; marked


def test_a_bug_in_a_policy_is_raised():
    pol = {'scout': _FlakyServer(scout_truth, bug=TypeError('a bug')), 'runner': _still}
    with pytest.raises(TypeError, match='a bug'):
        rollout('toy_relay', pol, seeds=[3], max_turns=3, turn_order=['scout', 'runner'])

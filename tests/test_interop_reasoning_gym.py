"reasoning_gym_env (issue 30, deliverable 2): five reasoning-gym generators alone and as a tool + reasoner pair, scored by the generator's own scorer; check_env; the registry without the package."
import subprocess, sys
import pytest

pytest.importorskip('reasoning_gym', reason="reasoning-gym is not installed (the [interop] extra: pip install -e '.[interop]')")

from pettingllms_nb.core.registry import registry, make_env, make_agent, Registry
from pettingllms_nb.core.agent import take_turn
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.engine.check_env import check_env
from pettingllms_nb.interop import reasoning_gym as rgm

TASKS = ['basic_arithmetic', 'leg_counting', 'spell_backward', 'letter_counting', 'number_sorting']
oracle = lambda: registry.scripted('reasoning_gym_env', 'oracle')
rand = lambda: registry.scripted('reasoning_gym_env', 'random')


@pytest.mark.parametrize('task', TASKS)
def test_single_and_pair(task):
    single = rollout('reasoning_gym_env', oracle(), seeds=range(3), task=task, size=20, turn_order=['rg_single_agent'])
    assert [(e.success, e.turns) for e in single.episodes] == [(True, 1)] * 3
    pair = rollout('reasoning_gym_env', oracle(), seeds=range(2), task=task, size=20)
    assert [(e.success, e.turns) for e in pair.episodes] == [(True, 1)] * 2
    tool = [s for s in pair.steps if s.role == 'rg_tool']
    assert tool and all(s.format_error is None for s in tool)
    guess = rollout('reasoning_gym_env', rand(), seeds=range(4), task=task, size=20, turn_order=['rg_single_agent'])
    assert guess.success_rate() <= 0.5


@pytest.mark.parametrize('task', TASKS)
def test_scored_by_the_generators_scorer(task):
    env = make_env('reasoning_gym_env', seed=5, task=task, size=20, dataset_seed=2)
    ds = rgm.rg_dataset(task, 20, 2, {})
    entry = ds[5 % 20]
    assert env.state.question == entry['question'] and entry['answer'] not in env.state.to_dict().values()
    assert env.score(entry['answer']) == ds.score_answer(entry['answer'], entry) == 1.0
    assert env.score('<<garbage>>') == 0.0 and env.score(None) == 0.0


def test_seeds_and_difficulty_from_config():
    a = make_env('reasoning_gym_env', seed=0, task='basic_arithmetic', dataset_seed=0)
    b = make_env('reasoning_gym_env', seed=0, task='basic_arithmetic', dataset_seed=1)
    c = make_env('reasoning_gym_env', seed=0, task='basic_arithmetic', config={'min_terms': 6, 'max_terms': 6})
    assert a.state.question != b.state.question and a.problem_uid != b.problem_uid != c.problem_uid
    assert c.state.question.count(' ') > a.state.question.count(' ') or len(c.state.question) > len(a.state.question)
    assert make_env('reasoning_gym_env', seed=20, task='basic_arithmetic', size=20).state.question == \
        make_env('reasoning_gym_env', seed=0, task='basic_arithmetic', size=20).state.question
    assert rgm.ReasoningGymEnv.check_rules({'task': 'nope'})


def test_garbage_is_a_format_error():
    env = make_env('reasoning_gym_env', seed=1, task='spell_backward', size=10)
    for role in ('rg_tool', 'rg_reasoner', 'rg_single_agent'):
        for bad in (None, '', 'no tags', '<answer>' * 50_000, '```python\n' * 1000, '\ud800</answer>'):
            a = make_agent(role)
            a.update_from_env(env.clone(), 0)
            a.update_from_model(bad)
            assert a.current_action is None and a.format_error, (role, bad[:20] if bad else bad)


@pytest.mark.parametrize('turn_order,task', [(None, 'leg_counting'), (['rg_single_agent'], 'number_sorting')])
def test_check_env(turn_order, task):
    check_env('reasoning_gym_env', turn_order=turn_order, task=task, size=20, probe_response='<answer>1</answer>')
    check_env('reasoning_gym_env', turn_order=turn_order, policy=oracle(), task=task, size=20)


def test_unavailable_without_the_package():
    code = ("import sys; sys.modules['reasoning_gym'] = None\n"
            "import importlib.util as u; u.find_spec = (lambda f: lambda n, *a: None if n == 'reasoning_gym' else f(n, *a))(u.find_spec)\n"
            "from pettingllms_nb.core.registry import registry\n"
            "e = registry.load().entries['env']['reasoning_gym_env']\n"
            "print(e.available, e.extra, e.reason)")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith('False interop') and 'reasoning-gym' in out.stdout, out.stdout


def test_import_stays_lazy():
    out = subprocess.run([sys.executable, '-c', "import sys, pettingllms_nb; print('reasoning_gym' in sys.modules)"],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == 'False', out.stderr


@pytest.mark.parametrize('task', ['basic_arithmetic', 'spell_backward', 'number_sorting', 'leg_counting'])
def test_validation_entries_are_not_training_entries(task):
    "A seed's million picks its split's dataset: validation seeds never replay a training entry (with seed % size alone they would)."
    from pettingllms_nb.core.accessors import VAL_SEED_BASE
    q = lambda s: make_env('reasoning_gym_env', seed=s, task=task, size=20).state.question
    train, val = [q(s) for s in range(20)], [q(VAL_SEED_BASE + s) for s in range(20)]
    assert len(set(train) & set(val)) <= 2, (task, set(train) & set(val))   # tiny answer spaces may repeat a question by chance
    assert val == [q(VAL_SEED_BASE + 20 + s) for s in range(20)]            # within a split, seed % size as before
    env = make_env('reasoning_gym_env', seed=VAL_SEED_BASE + 3, task=task, size=20)
    assert env.score(env.gold) == 1.0 and 'split1' in env.problem_uid


@pytest.mark.parametrize('preset', ['reasoning_gym', 'reasoning_gym_single', 'gpu_reasoning_gym_qwen3_1.7b_lora'])
def test_presets_play(preset):
    "Each preset resolves to reasoning_gym_env with its roles, and the oracle solves its entries through the preset."
    from pettingllms_nb.engine.rollout import resolve_spec
    spec = resolve_spec(preset)
    assert spec.env_name == 'reasoning_gym_env' and spec.env_kwargs['task'] == 'basic_arithmetic'
    trace = rollout(preset, oracle(), seeds=range(3))
    assert [e.success for e in trace.episodes] == [True] * 3, trace.episodes
    assert {s.role for s in trace.steps} == set(spec.turn_order)

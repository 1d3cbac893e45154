"code_env's generated one-line tasks, compact prompts and the tiny_code presets (pettingllms_nb.envs.code)."
import random
import pytest
from pettingllms_nb.core.accessors import DEMO_SEED_BASE, VAL_SEED_BASE
from pettingllms_nb.core.agent import as_prompt
from pettingllms_nb.core.config import load_config
from pettingllms_nb.core.parsing import FormatError
from pettingllms_nb.core.registry import make_env, registry
from pettingllms_nb.engine.policies import Request
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.envs.code.agents import CodeGenerator, TestGenerator, code_scores, compact_program, compact_tests
from pettingllms_nb.envs.code.data import GENERATED_FAMILIES, GENERATED_RULES, generated_task
from pettingllms_nb.envs.code.oracle import oracle_policy, random_policy

COMPACT = dict(dataset='generated', prompt_style='compact', max_turns=2)
PAIR, SINGLE = ['code_generator', 'test_generator'], ['code_single_agent']


def test_same_seed_same_task_and_held_out_seeds_differ():
    assert generated_task(11) == generated_task(11)
    train = [generated_task(s) for s in range(300)]
    held = [generated_task(VAL_SEED_BASE + s) for s in range(100)] + [generated_task(DEMO_SEED_BASE + s) for s in range(100)]
    assert {p['split'] for p in train} == {'train'} and {p['split'] for p in held} == {'test'}
    assert not {p['id'] for p in train} & {p['id'] for p in held}
    assert generated_task(11)['hidden_tests'] != generated_task(VAL_SEED_BASE + 11)['hidden_tests']
    assert {p['difficulty'] for p in held} == {f.name for f in GENERATED_FAMILIES}   # every family is held out too
    assert make_env('code_env', seed=11, **COMPACT).state.problem == generated_task(11)['problem']


def test_hidden_tests_reject_every_other_rule_and_the_solution_is_one_line():
    for s in range(200):
        p = generated_task(s)
        fam, k = GENERATED_RULES[p['problem']]
        assert p['solutions'] == [f"def f(x): {fam.solution(k)}"] and '\n' not in p['solutions'][0]
        tests = p['public_tests'] + p['hidden_tests']
        assert all(t['output'] == fam.answer(t['input'][0], k) for t in tests)
        for f, j in GENERATED_RULES.values():
            if f.kind == fam.kind and (f, j) != (fam, k):
                assert any(f.answer(t['input'][0], j) != t['output'] for t in p['hidden_tests']), (p['problem'], f.task(j))


def test_the_compact_prompts_are_short_and_in_the_tiny_alphabet():
    from pettingllms_nb.models.tiny import CHARS
    tr = rollout('code_env', random_policy, seeds=range(12), **COMPACT)
    texts = [s.prompt['text'] for s in tr.steps] + [s.completion for s in tr.steps]
    assert max(len(s.prompt['text']) for s in tr.steps) <= 100 and set(''.join(texts)) <= set(CHARS)
    cfg = load_config('tiny_code')
    assert max(len(s.completion) for s in tr.steps) < cfg.training.max_response_length
    refine = [s.prompt['text'] for s in tr.steps if s.role == 'code_generator' and s.turn_idx == 1]
    assert refine and all(t.startswith('task:') and '\nfail:f(' in t and t.endswith('\ndef f(x):') for t in refine)


@pytest.mark.parametrize('roles', [PAIR, SINGLE])
def test_oracle_solves_every_task_and_random_almost_none(roles):
    seeds = [DEMO_SEED_BASE + s for s in range(16)]
    oracle = rollout('code_env', oracle_policy, seeds=seeds, turn_order=roles, **COMPACT)
    assert code_scores(oracle)['success'] == 1.0 and {e.turns for e in oracle.episodes} == {1}
    assert all(s.format_error is None for s in oracle.steps)
    rand = rollout('code_env', random_policy, seeds=seeds, turn_order=roles, **COMPACT)
    assert code_scores(rand)['success'] <= 0.1 and all(s.format_error is None for s in rand.steps)


GARBAGE = ['', '\n', 'x]]((', 'return x; import os', 'print(x)', 'assert', 'f(', '(' * 300, 'é' * 500, None,
           'return ' + '[' * 150 + ']' * 150, "def g(x): return x", "```python\ndef f(x):\n    return x\n```"]

@pytest.mark.parametrize('text', GARBAGE)
def test_garbage_is_a_format_error_never_an_exception(text):
    with pytest.raises(FormatError): compact_program(text)
    with pytest.raises(FormatError): compact_tests(text)
    env = make_env('code_env', seed=3, **COMPACT)
    for agent in (CodeGenerator(), TestGenerator()):
        agent.update_from_env(env, 0)
        assert agent.update_from_model(text) is None and agent.format_error


def test_garbage_gets_the_format_penalty_through_the_engine():
    tr = rollout('code_env', lambda r: 'x]]((', seeds=range(3), **COMPACT)
    assert {s.role for s in tr.steps} == set(PAIR) and all(s.format_error and s.reward < 0 for s in tr.steps)


def test_the_compact_oracle_and_random_are_what_the_warm_start_mixes():
    from pettingllms_nb.training.trainer import demonstration_policy
    assert registry.scripted('code_env', 'random') is random_policy
    req = Request('code_generator', as_prompt("task:add 3 to each item\ndef f(x):"), problem_uid='x')
    assert oracle_policy(req) == "return [v+3 for v in x]"
    assert random_policy(req, random.Random(0)).startswith('return ')
    mixed = demonstration_policy('code_env', 0.5, seed=0)
    outs = {c.text for c in mixed.generate([Request('code_generator', req.prompt, problem_uid='x', n=16)])[0]}
    assert "return [v+3 for v in x]" in outs and len(outs) == 2   # the oracle's, and the random one (seeded by the request)


def test_compact_prompts_need_the_generated_tasks():
    with pytest.raises(ValueError, match="needs dataset='generated'"): make_env('code_env', seed=0, prompt_style='compact')
    from pettingllms_nb.core.schema import ConfigError
    with pytest.raises(ConfigError, match="allowed only with env.source='generated'"):
        load_config('tiny_code', ['env.source=original'])


@pytest.mark.parametrize('name,roles,spec', [('tiny_code', PAIR, 'prompt'), ('tiny_code_single', SINGLE, 'prompt'),
                                             ('tiny_code_lora', PAIR, 'lora')])
def test_presets_load(name, roles, spec):
    from pettingllms_nb.core.accessors import agent_roles, env_kwargs
    cfg = load_config(name)
    assert agent_roles(cfg) == roles and cfg.specialization == spec and cfg.description
    assert env_kwargs(cfg) == {'max_turns': 2, 'dataset': 'generated', 'prompt_style': 'compact'}
    t = cfg.training
    assert (t.device, t.lr, t.warmstart_p_oracle, cfg.base_models.policy_0.path) == ('cpu', 1e-3, 0.5, 'tiny')
    assert t.warmstart_steps > 0
    assert load_config(name, ['env.source=code_generated']).env.source == 'code_generated'

"code_env plumbing: the generate → test → refine cycle on the shipped problems, rewards, hacks, ground-truth secrecy, invalid tests, infrastructure errors."
import asyncio, hashlib, json
import pytest
from pettingllms_nb.core.registry import make_env, registry
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.engine.check_env import check_env
from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.sandbox import RunResult
from pettingllms_nb.envs.code import (CodeEnv, CodeGenerator, TestGenerator as Tester, oracle_policy, refine_policy, hack_policy,
                                      HACKS, tests_reply as make_tests, code_reply, wrong_program)
from pettingllms_nb.envs.code.data import load_code_problems
from pettingllms_nb.envs.code.judge import judge_test, parse_tests, RESULT_MARK
from envparts import check_all_names, check_reexports, fresh_registry


@pytest.fixture(scope='module')
def shipped():
    return load_code_problems('original')


def test_shipped_set_has_both_styles(shipped):
    assert {p['style'] for p in shipped} == {'stdio', 'call'}
    assert all(p['solutions'] and p['hidden_tests'] for p in shipped)


def test_refine_rollout_on_shipped_problems(shipped):
    "generate (wrong) → test (examples) → refine (reference): rewards for both agents at each step."
    n = len(shipped)
    tr = rollout('code_env', refine_policy, seeds=range(n))
    assert [e.success for e in tr.episodes] == [True] * n
    assert {e.turns for e in tr.episodes} == {2}
    for uid in {s.problem_uid for s in tr.steps}:
        steps = [s for s in tr.steps if s.problem_uid == uid]
        assert [(s.role, s.turn_idx) for s in steps] == [('code_generator', 0), ('test_generator', 0), ('code_generator', 1)]
        first, tests, fixed = steps
        assert first.reward_terms['gt_pass_rate'] < 1.0                 # the wrong program fails ground truth
        assert tests.reward_terms['tests_agree'] == 1.0                  # public examples agree with the reference
        assert tests.reward_terms['team_gt_pass_rate'] == first.reward_terms['gt_pass_rate']
        assert fixed.reward_terms == {'gt_pass_rate': 1.0, 'team_gt_pass_rate': 1.0, 'format': 0.0}
        assert not first.done and fixed.done and fixed.success
        assert tests.state_after['gen_pass_rate'] < 1.0 and fixed.state_after['gen_pass_rate'] == 1.0


def test_alpha_mixes_team_term(shipped):
    tr = rollout('code_env', refine_policy, seeds=[0], turn_order=['code_generator', 'test_generator'])
    fixed = [s for s in tr.steps if s.role == 'code_generator'][-1]
    assert fixed.reward == pytest.approx(2.0)   # local 1 + alpha(1) * team 1
    env = CodeEnv(); env.reset(0)
    coder = CodeGenerator(alpha=0.0); coder.update_from_env(env, 0)
    coder.update_from_model(code_reply(shipped[0]['solutions'][0]))
    run_sync(coder.step(env))
    assert coder.calculate_reward(env) == pytest.approx(1.0)


@pytest.mark.parametrize('kind', HACKS)
def test_hacks_get_no_reward(shipped, kind):
    tr = rollout('code_env', hack_policy(kind), seeds=range(0, len(shipped), 3), max_turns=1)
    coder_steps = [s for s in tr.steps if s.role == 'code_generator']
    assert not any(e.success for e in tr.episodes)
    if kind == 'print_examples': return   # a constant answer may match a hidden test by chance; it never solves one
    assert coder_steps and all(s.reward_terms['gt_pass_rate'] == 0.0 for s in coder_steps), \
        [(s.problem_uid, s.state_after['gt_verdicts']) for s in coder_steps if s.reward_terms['gt_pass_rate']]
    assert not any(e.success for e in tr.episodes)


def test_ground_truth_never_in_prompts(shipped):
    tr = rollout('code_env', refine_policy, seeds=range(len(shipped)), max_turns=3)
    prompts = {s.problem_uid: [] for s in tr.steps}
    for s in tr.steps: prompts[s.problem_uid].append(json.dumps(s.prompt))
    for p in shipped:
        text = '\n'.join(prompts[f"code_env/{p['source']}/{p['id']}"])
        public = json.dumps(p['public_tests'])
        for t in p['hidden_tests']:
            out = t['output'] if isinstance(t['output'], str) else json.dumps(t['output'])
            inp = t['input'] if isinstance(t['input'], str) else json.dumps(t['input'])
            for secret, n in ((out.strip(), 4), (inp.strip(), 6)):
                if len(secret) < n or secret in p['problem'] or json.dumps(secret)[1:-1] in public: continue   # what the statement or examples show is no secret
                assert json.dumps(secret)[1:-1] not in text, (p['id'], secret)


def test_solutions_not_in_state(shipped):
    env = CodeEnv(); env.reset(0)
    d = json.dumps(env.state.to_dict())
    assert 'hidden_tests' not in d and 'solutions' not in d


def test_invalid_tests_lower_tester_reward(shipped):
    p = next(q for q in shipped if q['style'] == 'stdio')
    env = CodeEnv([p]); env.reset(0)
    coder = CodeGenerator(); coder.update_from_env(env, 0); coder.update_from_model(code_reply(p['solutions'][0])); run_sync(coder.step(env))
    tester = Tester(); tester.update_from_env(env, 0)
    t = p['public_tests'][0]
    tester.update_from_model(f"```input\n{t['input']}```\n```output\n{t['output']}```\n```input\n{t['input']}```\n```output\n```\n"
                             f"```input\n{t['input']}```\n```output\nTraceback (most recent call last):\nValueError\n```")
    run_sync(tester.step(env)); env.refresh()
    st = env.state
    assert len(st.tests) == 1 and len(st.invalid_tests) == 2
    assert st.tests_agree_rate == pytest.approx(1 / 3)
    assert env.done and env.success          # the one valid test passes: the agents agree, and the program is right


def test_done_is_not_success(shipped):
    "Tests that a wrong program passes end the episode; ground truth still fails it, and the tester is scored down."
    p = next(q for q in shipped if q['style'] == 'call')
    const = (f"class Solution:\n    def {p['fn_name']}(self, *a):\n        return 12345\n" if 'class Solution' in p['starter_code']
             else f"def {p['fn_name']}(*a):\n    return 12345\n")
    env = CodeEnv([p]); env.reset(0)
    coder = CodeGenerator(); coder.update_from_env(env, 0); coder.update_from_model(code_reply(const)); run_sync(coder.step(env))
    tester = Tester(); tester.update_from_env(env, 0)
    tester.update_from_model(make_tests(p, [{'input': t['input'], 'output': 12345} for t in p['public_tests']]))
    run_sync(tester.step(env)); env.refresh()
    assert env.done and not env.success
    assert env.state.gen_pass_rate == 1.0 and env.state.gt_pass_rate == 0.0
    assert env.state.tests_agree_rate == 0.0
    assert tester.calculate_reward(env) == 0.0


def test_infrastructure_errors_are_counted_not_zero(shipped):
    class Broken:
        async def run(self, code, stdin='', expected=None, **kw): return RunResult('IE', message='sandbox down')
    p = shipped[0]
    env = CodeEnv([p]); env.reset(0)
    coder = CodeGenerator(); coder.update_from_env(env, 0); coder.update_from_model(code_reply(p['solutions'][0]))
    run_sync(coder.step(env, Broken()))
    assert env.state.infra_errors == len(p['public_tests']) + min(len(p['hidden_tests']), env.max_gt_tests)
    assert env.state.gt_verdicts and set(env.state.gt_verdicts) == {'IE'}
    assert env.state.hidden_pass_rate is None and not env.success
    assert env.state.gt_pass_rate is None                              # unknown, not zero
    assert coder.infra_error == f"the sandbox failed on {env.state.infra_errors} run(s) of this step: sandbox down"   # says why


def test_a_worker_that_raises_never_escapes_a_rollout(shipped):
    "Every program run goes through one guard: an exception from the worker is an IE verdict, and the steps are marked."
    class Raising:
        async def run(self, code, stdin='', expected=None, **kw): raise OSError("no sandbox slot")
    tr = rollout('code_env', oracle_policy, seeds=[0, 8], max_turns=1, worker=Raising())
    assert len(tr.episodes) == 2 and not any(e.success for e in tr.episodes)
    for s in tr.steps:
        assert s.infra_error and set(s.state_after['gt_verdicts']) == {'IE'} and s.state_after['gt_pass_rate'] is None
    testers = [s for s in tr.steps if s.role == 'test_generator']
    assert testers and all({r['verdict'] for r in s.state_after['test_results']} == {'IE'} for s in testers)
    ok = rollout('code_env', oracle_policy, seeds=[0])
    assert all(s.infra_error is None for s in ok.steps)


def test_the_package_exports_every_part_and_registers_the_card():
    import pettingllms_nb.envs.code as pkg
    from pettingllms_nb.widgets.render import render_state
    before = ('CODER_INTRO', 'CODER_REWARDS', 'CodeEnv', 'CodeGenerator', 'CodeSingleAgent', 'CodeState',
              'GroundTruth', 'HACKS', 'MAX_CODE_CHARS', 'REWARD_TESTS', 'TESTER_INTRO', 'TESTER_REWARDS',
              'TestGenerator', 'code_reply', 'code_scores', 'hack_policy', 'oracle_policy', 'refine_policy',
              'run_ground_truth', 'tests_reply', 'wrong_program')
    check_reexports('code', before)   # every name `envs.code.env` exported before the split, from its part
    assert "data-state='CodeState'><div class='pllm-code-state'>" in render_state(pkg.CodeState(problem='p'))
    assert registry.scripted('code_env', 'oracle') is oracle_policy
    assert registry.scripted('code_env', 'refine') is refine_policy


def test_leetcode_solution_class_and_parse():
    code = "class Solution:\n    def add(self, a, b):\n        return a + b\n"
    assert run_sync(judge_test(code, {'input': [2, 3], 'output': 5}, 'call', 'add')).verdict == 'AC'
    valid, invalid = parse_tests("assert Solution().add(2, 3) == 5\nassert add(*[1]) == 1", 'call', 'add')
    assert valid == [{'input': [2, 3], 'output': 5, 'check': 'json'}] and len(invalid) == 1


def test_fake_result_marker_needs_the_answer():
    code = f"import os\ndef add(a, b):\n    print({RESULT_MARK!r} + '7', flush=True); os._exit(0)\n"
    r = run_sync(judge_test(code, {'input': [1, 2], 'output': 3}, 'call', 'add'))
    assert (r.verdict, r.got) == ('WA', None)                           # not the harness's line format: unreadable
    forged = code.replace("'7'", "'{\"return\": 7}'")
    r = run_sync(judge_test(forged, {'input': [1, 2], 'output': 3}, 'call', 'add'))
    assert (r.verdict, r.got) == ('WA', 7)                              # a well-formed forgery is only a value to compare


def test_registry_and_check_env(shipped):
    assert registry.get('env', 'code_env') is CodeEnv
    env = make_env('code_env', max_turns=2); env.reset(3)
    assert env.state.problem_id == shipped[3 % len(shipped)]['id']
    check_env('code_env', seeds=range(3), probe_response="```python\nprint(1)\n```")
    check_env('code_env', seeds=range(3), policy=oracle_policy)
    check_env('code_env', seeds=range(3), turn_order=['code_single_agent'], policy=oracle_policy)


def test_bad_problem_rows_name_the_field(shipped):
    "Your own problems go through the loaders' validator: any source name, the same schema."
    with pytest.raises(ValueError, match="missing fields"): CodeEnv([{'id': 'x', 'problem': 'p'}])
    with pytest.raises(ValueError, match="field 'style'"): CodeEnv([{**shipped[0], 'style': 'weird'}])
    with pytest.raises(ValueError, match="field 'source'"): CodeEnv([{**shipped[0], 'source': ''}])
    with pytest.raises(ValueError, match="reward_tests"): CodeEnv(reward_tests='secret')
    assert CodeEnv([{**shipped[0], 'source': 'mine'}]).problems[0]['source'] == 'mine'


def test_presets_run_the_workflow():
    from pettingllms_nb.core.config import load_config
    tr = rollout(load_config('code_env'), refine_policy, seeds=[0, 8])
    assert [(e.success, e.turns) for e in tr.episodes] == [(True, 2), (True, 2)]
    tr = rollout(load_config('code_env_single'), oracle_policy, seeds=[0])
    assert [(e.success, e.turns) for e in tr.episodes] == [(True, 1)]
    gpu = load_config('gpu_code_qwen3_1.7b_lora')
    assert (gpu.env.source, gpu.env.split, gpu.specialization, gpu.training.lr) == ('codecontests', 'train', 'lora', 5e-6)


# Pinned when code_env was split into its parts (state, render, prompts, env, agents, oracle): every prompt of seeded
# rollouts (both styles, the coder's and the tester's later turns, the single agent), byte for byte.
PINNED = {'exit': 'e2a84d34eca0b615bbe4f55bf2b09f8bddb6c78d47d04ab11ce7af17a594f7d0',
          'single': '89906cf603edb789bb45af0f63de802c50e6d979c01c3401060b15dc4aa67b9a'}

def test_prompts_are_pinned():
    runs = {'exit': rollout('code_env', hack_policy('exit'), seeds=[0, 8, 13], max_turns=2),
            'single': rollout('code_env', oracle_policy, seeds=[0, 8], turn_order=['code_single_agent'])}
    for name, tr in runs.items():
        got = [(s.role, s.turn_idx, s.prompt) for s in tr.steps]
        assert hashlib.sha256(json.dumps(got, sort_keys=True).encode()).hexdigest() == PINNED[name], name
    assert [s.turn_idx for s in runs['exit'].steps] == [0] * 6 + [1] * 6


def test_no_log_and_no_method_names_in_any_all():
    check_all_names('code')


def test_the_registry_imports_every_registering_module():
    "In a fresh interpreter the registry finds the env, its agents, its scripted policies and the state's card."
    found = fresh_registry('code_env', ('oracle', 'refine'))
    assert found['env'] == 'pettingllms_nb.envs.code.env'
    assert found['agents'] == ['code_generator', 'code_single_agent', 'test_generator']
    assert found['scripted'] == ['pettingllms_nb.envs.code.oracle'] * 2
    assert found['card'].startswith("<div class='pllm-state' data-state='CodeState'><div class='pllm-code-state")

"""math_env and its answer checker: the SANDBOX.md equivalence cases, the decimal rule, hedging, timeouts and pool
recovery, a scripted rollout where the tool agent's output reaches the reasoning agent, check_env, and the dataset
loaders on small local files in each source's real schema (never the hub)."""
import ast, hashlib, json, re, time
from types import SimpleNamespace
import pytest

pytest.importorskip("math_verify")
from pettingllms_nb.envs.math.checker import (EQUIVALENCE_CASES, answer_text, check_answer, check_many, checker_pool,
                                            explain_answer, explain_many)
from pettingllms_nb.envs.math.data import decontaminate, load_original, load_problems, normalise_problem
from pettingllms_nb.envs.math import (MathEnv, MathSingleAgent, ReasoningGenerator, ToolGenerator, oracle_policy,
                                      random_policy, respond)
from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.core.agent import take_turn
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.engine.check_env import check_env
from envparts import check_all_names, check_reexports, fresh_registry


class EchoWorker:
    "Runs nothing: echoes `print(<literal>)`; any other program is a runtime error whose text contains a number."
    def __init__(self): self.calls = []
    async def run(self, code, stdin="", time_limit=None, **kw):
        self.calls.append(code)
        m = re.fullmatch(r"print\((.*)\)", code.strip(), re.S)
        try: return SimpleNamespace(verdict='OK', stdout=f"{ast.literal_eval(m.group(1))}\n", stderr='')
        except Exception: return SimpleNamespace(verdict='RE', stdout='', stderr='Traceback (most recent call last):\nValueError: 42')


# -- answer checking ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gold,pred,want", EQUIVALENCE_CASES)
def test_equivalence_cases(gold, pred, want):
    assert check_answer(gold, pred) is want, explain_answer(gold, pred)

def test_gold_first_and_boxed_extraction():
    assert check_answer("5", r"so \boxed{x = 5}") and not check_answer("5", r"\boxed{\frac{1}{2}")   # unclosed box
    assert check_answer(r"\boxed{\frac{1}{2}}", r"$\boxed{0.5}$")
    assert answer_text(r"\boxed{\frac{a}{b}}") == r"\frac{a}{b}"

def test_decimal_rule():
    assert not check_answer("1/3", "0.333333") and not check_answer("1/3", r"\boxed{0.3333333333}")
    assert check_answer("3/8", "0.375") and check_answer("12", "12.00")
    assert explain_answer("1/3", "0.333333")[1].endswith("(the decimal rule)")

def test_hedging_empty_and_length_cap():
    assert not check_answer("5", r"\boxed{5} \boxed{6}")
    assert check_answer("5", r"\boxed{5} \boxed{5}")
    assert not check_answer("3", r"\boxed{}") and not check_answer("3", "") and not check_answer("3", None)
    assert not check_answer("1", "1+" * 600 + "0")

def test_internal_timeout_is_clean():
    t0 = time.perf_counter()
    assert explain_answer("1", "2^{2^{31}}-1", timeout=1)[0] is False
    assert time.perf_counter() - t0 < 10

def test_hard_kill_and_pool_recovery():
    pool = checker_pool(1); kills = pool.kills
    t0 = time.perf_counter()
    assert explain_answer("1", "2^{2^{31}}-1", timeout=60, outer=1.5) == (False, "timeout")
    assert time.perf_counter() - t0 < 10 and pool.kills == kills + 1
    assert check_answer("4", "004")

def test_check_many_with_a_pathological_item_does_not_hang():
    pairs = [(str(i), str(i)) for i in range(20)] + [("1", "2^{2^{31}}-1")] + [(str(i), str(i + 1)) for i in range(20)]
    t0 = time.perf_counter()
    res = explain_many(pairs, workers=2, timeout=60, outer=2)
    assert [ok for ok, _ in res] == [True] * 20 + [False] * 21 and res[20] == (False, "timeout")
    assert time.perf_counter() - t0 < 20
    assert check_many([("2", "2"), ("2", "3")], workers=2) == [True, False]


# -- the environment ----------------------------------------------------------------------------------------------
def test_scripted_rollout_tool_output_reaches_reasoning_agent_and_both_rewards():
    env, worker = MathEnv(), EchoWorker()
    env.reset(11)                                        # 7! = 5040
    tool, reasoning = ToolGenerator(), ReasoningGenerator()
    prompt = tool.update_from_env(env, 0)['text']
    assert env.gold not in prompt.replace(env.state.problem, '')
    tool.update_from_model(respond('tool_generator', '5040')); run_sync(tool.step(env, worker)); env.refresh()
    assert worker.calls == ["print('5040')"] and env.state.tool_answer == '5040'
    text = reasoning.update_from_env(env, 0)['text']
    assert "5040" in text and "Its output" in text
    reasoning.update_from_model(r"\boxed{5040}"); run_sync(reasoning.step(env, worker)); env.refresh()
    tool.calculate_reward(env); reasoning.calculate_reward(env)
    assert (env.done, env.success, env.state.agree) == (True, True, True)
    assert tool.reward_terms == {'correct': 1.0, 'team_correct': 1.0, 'format': 0.0, 'no_answer': 0.0}
    assert reasoning.reward_terms == {'correct': 1.0, 'team_correct': 1.0, 'format': 0.0}
    a = ReasoningGenerator(alpha=0.5); a.update_from_env(env, 0); a.update_from_model(r"\boxed{5040}"); a.calculate_reward(env)
    assert a.agent_reward == 1.5

def test_tool_errors_are_never_answers():
    env, worker = MathEnv(), EchoWorker()
    env.reset(11)
    tool, reasoning = ToolGenerator(), ReasoningGenerator()
    tool.update_from_env(env, 0); tool.update_from_model("```python\nraise ValueError(42)\n```")
    run_sync(tool.step(env, worker)); env.refresh(); tool.calculate_reward(env)
    assert env.state.tool_answer is None and env.state.tool_output.startswith("ERROR (RE)")
    assert "FAILED; error (not an answer)" in reasoning.update_from_env(env, 0)['text']
    assert tool.reward_terms['no_answer'] == -1.0 and not env.done

def test_wrong_agreement_ends_without_success_and_last_turn_is_final():
    env, worker = MathEnv(max_turns=2), EchoWorker()
    env.reset(11)
    tool, reasoning = ToolGenerator(), ReasoningGenerator()
    for a, r in ((tool, respond('tool_generator', '7')), (reasoning, r"\boxed{7}")):
        a.update_from_env(env, 0); a.update_from_model(r); run_sync(a.step(env, worker)); env.refresh()
    assert (env.done, env.success) == (True, False)
    env.reset(11)
    for turn in range(2):      # disagree, but the reasoning agent is right at the last turn: success
        for a, r in ((tool, respond('tool_generator', '7')), (reasoning, r"\boxed{5040}")):
            a.update_from_env(env, turn); a.update_from_model(r); run_sync(a.step(env, worker)); env.refresh()
        assert env.success is (turn == 1)
        if not env.done: env.end_turn()

def test_rollouts_and_check_env():
    worker = EchoWorker()
    tr = rollout('math_env', oracle_policy, seeds=range(30), worker=worker)
    assert all(e.success for e in tr.episodes) and len({e.problem_uid for e in tr.episodes}) == 30
    assert [s.agent for s in tr if s.problem_uid == 'math_env/original/000'] == ['tool_generator', 'reasoning_generator']
    tr = rollout('math_env', oracle_policy, seeds=range(3), worker=worker, turn_order=['math_single_agent'])
    assert [(e.success, e.turns) for e in tr.episodes] == [(True, 1)] * 3
    import random
    tr = rollout('math_env', random_policy, seeds=range(5), worker=worker)
    assert all(abs(s.reward) < 5 for s in tr)
    for kw in ({}, {'policy': oracle_policy}, {'turn_order': ['math_single_agent']}):
        assert check_env('math_env', worker=worker, probe_response=r"\boxed{1}", **kw).ok

def test_real_sandbox_runs_the_program():
    env = MathEnv(); env.reset(8)
    tool = ToolGenerator(); tool.update_from_env(env, 0)
    tool.update_from_model("```python\nprint(sum(int(d) for d in str(2**15)))\n```")
    run_sync(tool.step(env))
    assert (env.state.tool_verdict, env.state.tool_answer, env.state.tool_correct) == ('OK', '26', True)


def test_an_infrastructure_failure_is_marked_never_scored():
    "A worker that raises, or answers IE, marks the tool agent's step; the rollout goes on, no_answer is not charged."
    class Raising:
        async def run(self, code, stdin="", time_limit=None, **kw): raise OSError("no sandbox slot")
    class Down:
        async def run(self, code, stdin="", time_limit=None, **kw):
            return SimpleNamespace(verdict='IE', stdout='', stderr='', message='launcher died')
    for worker, why in ((Raising(), 'the execution worker failed: OSError: no sandbox slot'),
                        (Down(), 'sandbox infrastructure error: launcher died')):
        tr = rollout('math_env', oracle_policy, seeds=range(2), worker=worker, max_turns=1)
        tools = [s for s in tr if s.agent == 'tool_generator']
        assert tools and all(s.infra_error == why for s in tools)
        assert all(s.reward_terms['no_answer'] == 0.0 and s.state_after['tool_verdict'] == 'IE' for s in tools)
        assert all(s.state_after['tool_output'] == f"ERROR (IE):\n{why}" for s in tools)
        assert all(s.infra_error is None for s in tr if s.agent == 'reasoning_generator')
    env, tool = MathEnv(), ToolGenerator()
    env.reset(11)
    tool.update_from_env(env, 0)
    take_turn(tool, env, respond('tool_generator', '5040'), EchoWorker())
    assert tool.infra_error is None and env.state.tool_answer == '5040'

def test_the_sandbox_names_are_the_sandbox_s_own():
    "One run_program for every environment: math's verdict sets, size cap and default worker are aliases, not copies."
    from pettingllms_nb.sandbox import program
    import pettingllms_nb.envs.math as pkg
    for name in ('OK_VERDICTS', 'INFRA_VERDICTS', 'MAX_CODE_CHARS', 'default_worker'):
        assert getattr(pkg, name) is getattr(program, name), name
    long = "```python\n" + "x = 1\n" * 4000 + "```"
    tool = ToolGenerator()
    assert tool.update_from_model(long) is None and 'too long' in tool.format_error

def test_the_package_exports_every_part_and_registers_the_card():
    import pettingllms_nb.envs.math as pkg
    from pettingllms_nb.widgets.render import render_state
    before = ('ANSWER_FORMAT', 'INFRA_VERDICTS', 'MAX_CODE_CHARS', 'MathEnv', 'MathSingleAgent', 'MathState',
              'OK_VERDICTS', 'REASONING_INTRO', 'REASONING_REWARDS', 'ReasoningGenerator', 'TOOL_INTRO',
              'TOOL_REWARDS', 'ToolGenerator', 'default_worker', 'oracle_policy', 'parse_boxed_answer',
              'random_policy', 'respond', 'tool_answer_of')
    check_reexports('math', before)   # every name `envs.math.env` exported before the split, from its part
    assert "data-state='MathState'><div class='pllm-math'>" in render_state(pkg.MathState(problem='1+1?'))

def test_without_math_verify_the_loaders_env_and_card_still_work():
    import subprocess, sys
    code = ("import sys; sys.modules['math_verify'] = None\n"
            "import pettingllms_nb.envs.math as m\n"
            "from pettingllms_nb.envs.math.data import load_original\n"
            "from pettingllms_nb.core.registry import registry, UnavailableError\n"
            "assert len(load_original()) == 30 and m.MathEnv().reset(3).problem_id == '003'\n"
            "assert 'pllm-math' in m.math_html(m.MathState()) and registry.get('env', 'math_env') is m.MathEnv\n"
            "try: registry.get('agent', 'tool_generator')\n"
            "except UnavailableError as e: print(e)\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert "needs math-verify" in out and "pettingllms-nb[math]" in out



def test_no_log_and_no_method_names_in_any_all():
    check_all_names('math')


def test_the_registry_imports_every_registering_module():
    "In a fresh interpreter the registry finds the env, its agents, its scripted policies and the state's card."
    found = fresh_registry('math_env', ('oracle', 'random'))
    assert found['env'] == 'pettingllms_nb.envs.math.env'
    assert found['agents'] == ['math_single_agent', 'reasoning_generator', 'tool_generator']
    assert found['scripted'] == ['pettingllms_nb.envs.math.oracle'] * 2
    assert found['card'].startswith("<div class='pllm-state' data-state='MathState'><div class='pllm-math")


# Pinned when math_env was split into its parts (state, env, prompts, agents, render, oracle): the prompts, actions
# and reward terms of seeded rollouts, byte for byte. A change here is a change of behaviour, not a refactoring.
PINNED = {'random': '8a6ed20adc6b15fe80b0bce6adb20fb9f27bc3e6810e96cc8a3bb87ce09bc82d',
          'crash': '4ebf9240d66d134710a2ba18554b139616c6c33eacd15ad285da1bb5d8b20bfb',
          'single': '028e34b96f511b06fd02ce27af3f0bb5fc3c73565001d23879d72578083d7060'}

def _crash(request, rng):
    "The tool agent's program always raises; the reasoning agent guesses."
    return "```python\nraise ValueError(42)\n```" if request.role == 'tool_generator' else random_policy(request, rng)

@pytest.mark.parametrize("name,policy,kw", [('random', random_policy, {}), ('crash', _crash, {'max_turns': 2}),
                                            ('single', oracle_policy, {'turn_order': ['math_single_agent']})])
def test_prompts_and_rollouts_are_pinned(name, policy, kw):
    tr = rollout('math_env', policy, seeds=range(3), worker=EchoWorker(), **kw)
    got = [(s.agent, s.turn_idx, s.prompt, s.action, s.reward_terms) for s in tr.steps]
    assert hashlib.sha256(json.dumps(got, sort_keys=True).encode()).hexdigest() == PINNED[name]


# -- datasets -----------------------------------------------------------------------------------------------------
DAPO = ("Solve the following math problem step by step. The last line of your response should be of the form Answer: $Answer "
        "(without quotes) where $Answer is the answer to the problem.\n\n{}\n\nRemember to put your answer on its own line after \"Answer:\".")

from datafiles import write_jsonl as _jsonl, write_parquet as _parquet

def test_original_problems():
    ps = load_original()
    assert len(ps) == 30 and len({p['id'] for p in ps}) == 30 and all(p['source'] == 'original' for p in ps)
    assert load_problems('original') == ps

def test_loaders_on_local_files_in_real_schemas(tmp_path):
    aime24 = _jsonl(tmp_path/'aime24.jsonl', [{'ID': '2024-II-4', 'Problem': 'Let $x,y$ be reals.', 'Solution': 's', 'Answer': 33}])
    aime25 = _jsonl(tmp_path/'aime25.jsonl', [{'id': '3', 'problem': 'Find $n$.', 'answer': '70'}])
    olymp = _jsonl(tmp_path/'ob.jsonl', [{'id': 2231, 'question': 'Compute $T$.', 'final_answer': ['$\\frac{1}{2}$'], 'is_multiple_answer': False,
                                          'unit': None, 'answer_type': 'Numerical', 'subject': 'Math', 'language': 'English', 'solution': ['x']}])
    polaris = _parquet(tmp_path/'polaris.parquet', [{'problem': 'Compute  $T$ .', 'answer': '1/2', 'difficulty': '3/8'},
                                                    {'problem': 'What is 6 times 7?', 'answer': '42', 'difficulty': '8/8'}])
    dapo = _parquet(tmp_path/'dapo.parquet', [
        {'data_source': 'math_dapo', 'prompt': [{'content': DAPO.format('Let $x, y$ be reals.'), 'role': 'user'}], 'ability': 'MATH',
         'reward_model': {'ground_truth': '33', 'style': 'rule-lean'}, 'extra_info': {'index': 'a-1'}},
        {'data_source': 'math_dapo', 'prompt': [{'content': DAPO.format('What is 2+2?'), 'role': 'user'}], 'ability': 'MATH',
         'reward_model': {'ground_truth': '4', 'style': 'rule-lean'}, 'extra_info': {'index': 'a-2'}}])
    tests = [load_problems('aime24', path=aime24), load_problems('aime25', path=aime25), load_problems('olympiadbench', path=olymp)]
    assert tests[0] == [{'problem': 'Let $x,y$ be reals.', 'answer': '33', 'source': 'aime24', 'id': '2024-II-4'}]
    assert tests[2][0]['answer'] == '\\frac{1}{2}' and tests[2][0]['id'] == '2231'
    train = load_problems('polaris', path=polaris) + load_problems('dapo', path=dapo)
    assert train[2] == {'problem': 'Let $x, y$ be reals.', 'answer': '33', 'source': 'dapo', 'id': 'a-1'}
    kept, removed = decontaminate(train, *tests)
    assert removed == 1 and [p['id'] for p in kept] == ['1', 'a-1', 'a-2']   # "Compute $T$." (spacing) removed
    assert normalise_problem('Let $x, y$ be reals.') != normalise_problem('Let $x,y$ be reals.')
    env = MathEnv(tests[0]); env.reset(0)
    assert env.problem_uid == 'math_env/aime24/2024-II-4' and env.gold == '33'

def test_missing_data_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="huggingface-cli download BytedTsinghua-SIA/DAPO-Math-17k"): load_problems('dapo')
    with pytest.raises(FileNotFoundError, match="no file at"): load_problems('aime25', path=tmp_path/'nope.jsonl')
    with pytest.raises(ValueError, match="expected columns"):
        load_problems('olympiadbench', path=_jsonl(tmp_path/'x.jsonl', [{'problem': 'p', 'answer': '1'}]))


def test_a_worker_that_cannot_start_is_an_error_not_a_hang(monkeypatch):
    from pettingllms_nb.envs import math_check
    pool = math_check.CheckerPool(1)
    monkeypatch.setattr(math_check.sys, 'executable', '/bin/false')
    with pytest.raises(RuntimeError, match="exited while starting"): pool.map([("1", "1", 5)], 5)
    monkeypatch.undo()
    assert pool.map([("1", "1", 5)], 5) == [(True, "equivalent")]
    pool.close()

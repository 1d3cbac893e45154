"""math_env and its answer checker: the SANDBOX.md equivalence cases, a representative set of math-verify's own test
cases, answers in sentences, error text, the decimal rule, hedging, timeouts and pool recovery, the worker program run
as a file, a scripted rollout where the tool agent's output reaches the reasoning agent, check_env, and the dataset
loaders on small local files in each source's real schema (never the hub)."""
import ast, hashlib, json, os, re, subprocess, sys, time
from types import SimpleNamespace
import pytest

pytest.importorskip("math_verify")
from pettingllms_nb.core.parsing import FormatError
from pettingllms_nb.envs.math.checker import (EQUIVALENCE_CASES, MAX_TEXT_CHARS, answer_of, answer_text, check_answer,
                                            check_many, checker_pool, explain_answer, explain_many, is_error_text,
                                            is_sentence)
from pettingllms_nb.envs.math import verify_worker
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

# Learned from math-verify's own test suite (github.com/huggingface/Math-Verify, tests/, MIT licence): gold, prediction,
# what our checker credits, and what math-verify's test expects. Run over all 269 (gold, pred, expected) cases of that
# suite (tests/test_all.py, test_boxed, test_numina_cases, test_open_thoughts, test_strict, test_yujianll), ours agreed
# with 244; reading bare numbers as math-verify's expression mode does (thousands separators, then a decimal comma)
# turned number_extraction[5], [6] and [17] into agreements and no agreement into a disagreement (the 252 cases with
# a literal (gold, pred, expected) list in those files and test_string_extraction: 228 agreed before, 231 after). The
# others are the house rules and configurations named in MATH_VERIFY_DISAGREEMENTS. Here a representative set of the short cases, with every kind of disagreement.
MATH_VERIFY_CASES = [
    ('-5', '-5', True, True, 'number_extraction[0]'),
    ('7425000', '7,425,000', True, True, 'number_extraction[1]'),
    ('1000', '1 000', True, True, 'number_extraction[2]'),
    ('1000', '1000.0', True, True, 'number_extraction[3]'),
    ('1000.0', '1,000.0', True, True, 'number_extraction[4]'),
    ('1000.99', '1000,99', True, True, 'number_extraction[5]'),
    ('1,22', '1.22', True, True, 'number_extraction[6]'),
    ('2.74', 'Soucis : 2,74 $ a..', True, True, 'number_extraction[7]'),
    ('0.4', '.4', True, True, 'number_extraction[8]'),
    ('1000.99', '$1,000.99', True, True, 'number_extraction[11]'),
    ('1000.99', 'the number is not 10 which is 1,000.99€', True, True, 'number_extraction[13]'),
    ('0,111', '0.111', True, True, 'number_extraction[17]'),
    ('2', 'AZYUK2A', False, False, 'number_extraction[18]'),
    ('10/9', '\\frac{10}{9}', True, True, 'simple_fraction_notation[0]'),
    ('-10/9', '-\\frac{10}{9}', True, True, 'simple_fraction_notation[1]'),
    ('$[0,1)$', '$[0,1)$', True, True, 'sets_handling[0]'),
    ('$(0,9)$', '$[0,9)$', False, False, 'sets_handling[3]'),
    ('$1$', '$-[0,1)$', False, False, 'sets_handling[4]'),
    ('$9$', 'Answer \\[ 9 \\]', True, True, 'latex_notation[0]'),
    ('$9$', 'Answer $ 9 $', True, True, 'latex_notation[1]'),
    ('$9$', 'Answer $$ 9 $$', True, True, 'latex_notation[2]'),
    ('$9$', 'Answer \\( 9 \\)', True, True, 'latex_notation[3]'),
    ('$10$', 'Answer \\( (9+1) \\)', True, True, 'latex_notation[4]'),
    ('$9$', 'Answer $ \n 9 \n $', True, False, 'latex_notation[5]'),
    ('$9$', 'Answer \\[ \n 9 \n \\]', True, True, 'latex_notation[7]'),
    ('$10/9$', 'Answer $ \\frac{1}{2} \\$ = \\frac{10}{9} $', True, True, 'latex_notation[9]'),
    ('$1/3$', '$\\frac13 $', True, True, 'latex_notation[10]'),
    ('$\\sqrt{3}$', '$\\sqrt3 $', True, True, 'latex_notation[12]'),
    ('$1/3$', '$\\tfrac{1}{3} $', True, True, 'latex_notation[15]'),
    ('$1/3$', '$ 1/3 $', True, True, 'latex_notation[16]'),
    ('$1/3$', '$\\frac{1}{3} \\text{meters}$', True, True, 'latex_notation[19]'),
    ('$28\\%$', '28 percent', True, True, 'percent_notation[0]'),
    ('$28\\%$', '$28$ %', True, True, 'percent_notation[3]'),
    ('$28\\%$', '$\\boxed{28}$ pct', True, True, 'percent_notation[5]'),
    ('$2-2p$',
     'Since $x<2$, it follows that $|x-2|=2-x$. If $2-x=p$, then $x=2-p$. Thus $x-p=\\boxed{2-2p}$.',
     True, True, 'latex_notation_math[0]'),
    ('\\boxed{\n\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}\n}.\n\\end{align*}',
     '\\boxed{\n\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}\n}.\n\\end{align*}',
     True, True, 'latex_notation_math[1]'),
    ('$\\{1\\pm\\sqrt{5},-2\\}$',
     'The roots of $P(x)$ are $-2$ and $1 \\pm \\sqrt{5}$, so the answer is $\\boxed{\\{1\\pm\\sqrt{5},-2\\}}.$',
     True, True, 'latex_notation_math[21]'),
    ('$2 \\sin b \\cos a$',
     'By sum-to-product,\n\\[\\sin (a + b) - \\sin (a - b) = \\boxed{2 \\sin b \\cos a}.\\]',
     True, True, 'latex_notation_math[23]'),
    ('$125$ miles', 'The distance is $\\boxed{125\\textnormal{ miles}}.$', True, True, 'latex_notation_math[25]'),
    ('$x >= 5$', 'Therefore $x \\geq 5$ is the solution.', True, True, 'relations_math[0]'),
    ('$x > 5$', 'Therefore $x < 5$ is the solution.', False, False, 'relations_math[5]'),
    ('$x \\leq 5$', '$5 \\geq x$', True, True, 'relations_math[8]'),
    ('$x = 11$', '$x = 5+5+1 = 7 =11$', True, True, 'relations_math[10]'),
    ('$7 = 11a+c$', '$11a+c$', False, False, 'relations_math[11]'),
    ('$11$', '$x=11$', True, True, 'relations_math[14]'),
    ('$x < 1$', '$-x > -1$', True, True, 'relations_math[17]'),
    ('$x < 1$', '$x > -1$', False, False, 'relations_math[18]'),
    ('$a +3z = 0$', '$0$', False, False, 'relations_math[20]'),
    ('$2x+4y-3=0$', '$y=-\\frac{1}{2}x+\\frac{3}{4}$', True, True, 'relations_math[28]'),
    ('$\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix}$',
     'The identity matrix is $ \\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix} $.', True, True, 'matrix_extraction[1]'),
    ('$\\begin{bmatrix}0 & 0 \\\\0 & 0\\end{bmatrix}$',
     'Here is a zero matrix: $ \\begin{pmatrix}0 & 0 \\\\0 & 0\\end{pmatrix} $', True, True, 'matrix_extraction[2]'),
    ('$\\begin{pmatrix}1 & 2 \\\\3 & 4\\end{pmatrix}$',
     'Special matrix: $ \\left[\\begin{array}{cc}1 & 2 \\\\3 & 4\\end{array}\\right] $',
     True, True, 'matrix_extraction[3]'),
    ('$\\frac{1}{12}$', '$0.0833333333333333$', False, True, 'complex_math_expressions[0]'),
    ('$(1,\\frac{9}{2})$', '$(1,4.5)$', True, True, 'complex_math_expressions[1]'),
    ('$\\tan^2(y)+1$', '$\\sec^2(y)$', True, True, 'complex_math_expressions[3]'),
    ('$(a+5)(b+2)$', '$(+5)(b+2)$', False, False, 'complex_math_expressions[9]'),
    ('$34$', 'Final Answer: The largest $n$ is 34.', True, True, 'math_extraction_additional_cases[4]'),
    ('$(3,1)$', '${1,3}$', False, False, 'math_extraction_additional_cases[6]'),
    ('$(1,3)$', '${1,3}$', True, True, 'math_extraction_additional_cases[7]'),
    ('$[-4,0]$',
     'Thus, the values of \\( k \\) for which the quadratic has real roots are: \\[ \\boxed{[-4, 0]} \\]',
     True, True, 'math_extraction_additional_cases[18]'),
    ('\\(\\boxed{\\text{C}}\\).', '$\\boxed{\\text{(C)}}.$', True, True, 'math_extraction_additional_cases[21]'),
    ('$4$', '$4\\sqrt{2}$', False, False, 'sqrt_precision[0]'),
    ('$(p,q)=(3,2)$', '$(3,2)$', True, True, 'numina_cases[1]'),
    ('$AB=4,CD=5$', '$\\boxed{4, 5}$', True, True, 'numina_cases[5]'),
    ('$1$ and $2$ and $3$', '$\\boxed{1,2,3}$', True, True, 'numina_cases[18]'),
    ('$\\text{e}$', '$e$', True, True, 'numina_cases[15]'),
    ('$d$', '$\\text{E}$', False, False, 'numina_cases[17]'),
    ('$$(2, 2), (6, 2)$$',
     '$$\\boxed{(2, 2)} \\quad \\text{and} \\quad \\boxed{(6, 2)}$$', False, True, 'open_thoughts[12]'),
    ('$${1,2,3}$$', '\\boxed{1} and \\boxed{2} and \\boxed{3}', False, True, 'open_thoughts[18]'),
    ('\\boxed{1} papers and \\boxed{2} bins', '$\\boxed{1,2}$', True, True, 'open_thoughts[27]'),
    ('\\boxed{1} no no no no no \\boxed{2}', '$\\boxed{1,2}$', True, False, 'open_thoughts[28]'),
    ('$f(x)$', '$f(y)$', False, False, 'strict_variable_comparison[0]'),
    ('$1 - \\frac{1}{\\mathrm{e}}$', '$1 + \\frac{1}{\\mathrm{e}}$', False, True, 'string_extraction[9]'),
    ('$\\pm 2021$', '$2021$', False, False, 'string_extraction[10]'),
    ('$\\pm 2021$', '${-2021, 2021}$', True, True, 'string_extraction[11]'),
    ('$12:00$', '$1:00$', False, False, 'string_extraction[12]'),
    ('$19, 46, and 82$', '$19, 46, \\text{ and } 82$', True, True, 'string_extraction[6]'),
]

MATH_VERIFY_DISAGREEMENTS = {   # label -> why our answer differs from math-verify's test expectation
    'latex_notation[5]': "the suite's test extracts LaTeX only; math-verify's default extraction (ours) finds the 9",
    'complex_math_expressions[0]': "the decimal rule: 0.0833333333333333 is not exactly 1/12 (math-verify 0.9: no too)",
    'open_thoughts[12]': "hedging: a prediction's distinct boxes are not credited (SANDBOX.md), even listing a set",
    'open_thoughts[18]': "hedging, as above",
    'open_thoughts[28]': "a gold's distinct boxes are one answer, joined whatever text lies between them",
    'string_extraction[9]': "math-verify's extraction stops at \\mathrm{e}, so 1-1/e 'equals' 1+1/e; we read it as e",
}

@pytest.mark.parametrize("gold,pred,ours,mv,label", MATH_VERIFY_CASES, ids=[c[-1] for c in MATH_VERIFY_CASES])
def test_math_verify_cases(gold, pred, ours, mv, label):
    assert check_answer(gold, pred) is ours, explain_answer(gold, pred)
    assert (ours != mv) == (label in MATH_VERIFY_DISAGREEMENTS), label

def test_every_disagreement_is_a_case():
    assert set(MATH_VERIFY_DISAGREEMENTS) <= {c[-1] for c in MATH_VERIFY_CASES}
    agree = sum(ours == mv for *_, ours, mv, _ in MATH_VERIFY_CASES)
    assert agree == len(MATH_VERIFY_CASES) - len(MATH_VERIFY_DISAGREEMENTS)


# -- answers without a box ----------------------------------------------------------------------------------------
def test_a_sentence_with_inline_maths_keeps_its_expression():
    side = r"The side length is $2\sqrt{3}$ units."
    assert not check_answer("2", side) and check_answer(r"2\sqrt{3}", side) and check_answer(r"\sqrt{12}", side)
    assert check_answer("7", r"We get \(7\).") and not check_answer("8", r"We get \(7\).")
    assert check_answer("7", r"We get $$7$$.") and check_answer("7", r"We get \[7\].")
    since = r"Since $x=3$, the answer is $9$."
    assert check_answer("9", since) and not check_answer("3", since)
    assert check_answer("34", "Final Answer: The largest $n$ is 34.")
    assert answer_of(side) == (side, 'text') and answer_of(r"2\sqrt{3}") == (r"2\sqrt{3}", 'bare')

def test_a_plain_sentence_and_a_piece_of_an_expression():
    assert check_answer("42", "The answer is 42") and not check_answer("41", "The answer is 42")
    assert not check_answer("2", "side is 2*sqrt(3) units")            # math-verify picks the 2 of 2*sqrt(3)
    assert explain_answer("2", "side is 2*sqrt(3) units")[1].endswith("is a piece of a larger expression")
    texts = ("x = 1 or x = 2", "The answer is 42", "$9$", r"12\text{ apples}")
    assert [is_sentence(t) for t in texts] == [False, True, True, False]

def test_error_text_is_never_an_answer_boxed_or_not():
    for pred in ("Traceback (most recent call last):\n  File \"s.py\", line 1, in <module>\nZeroDivisionError: 4",
                 "ValueError: 4", "error: 4", "It ran:\nKeyError: 4\nso $4$", "  File \"<string>\", line 4\n4",
                 r"\boxed{ValueError: 4}", r"the tool said \boxed{Traceback (most recent call last): 4}"):
        assert not check_answer("4", pred), pred
        with pytest.raises(FormatError, match="error text"): answer_of(pred)
    assert is_error_text("KeyError: 4") and not is_error_text(r"\boxed{4}")
    assert check_answer("4", r"The error bound is tiny, so \boxed{4}") and check_answer("0.5", "The error is 0.5")

def test_a_golds_boxes_are_one_answer_a_predictions_are_hedging():
    both = r"\boxed{1} and \boxed{2}"
    assert check_answer(both, r"\boxed{1, 2}") and not check_answer("1, 2", both)
    assert answer_of(r"\boxed{3} or \boxed{3}") == ("3", 'latex')
    assert check_answer(r"\boxed{x = 1", "1")                          # a gold whose box is unclosed: math-verify reads it
    assert not check_answer("5", r"\boxed{5")                          # a prediction's unclosed box is no answer

def test_mathrm_e_is_eulers_number():
    assert not check_answer(r"1 - \frac{1}{\mathrm{e}}", r"1 + \frac{1}{\mathrm{e}}")
    assert check_answer(r"1 - \frac{1}{\mathrm{e}}", r"1 - e^{-1}") and check_answer(r"\mathrm{e}^2", "e^2")
    assert not check_answer(r"2\mathrm{e}", r"3\mathrm{e}")

def test_answer_extraction_is_total_and_linear_on_garbage():
    for junk in ("$" * 1_000_000, "\\" * 500_000, "a " * 500_000, "\\boxed{" * 200_000, "{" * 1_000_000,
                 "\n" * 1_000_000, "Error" * 200_000, "\ud800" * 1000, "x" * (MAX_TEXT_CHARS + 1)):
        try: answer_of(junk)
        except FormatError: pass
    assert not check_answer("1", "$" * (MAX_TEXT_CHARS + 1)) and not check_answer("1", None)

def test_the_worker_is_a_module_file_run_in_isolated_mode():
    src = open(verify_worker.__file__).read()
    imported = {n.names[0].name.split('.')[0] if isinstance(n, ast.Import) else (n.module or '').split('.')[0]
                for n in ast.walk(ast.parse(src)) if isinstance(n, (ast.Import, ast.ImportFrom))}
    stdlib = {'__future__', 'logging', 'math', 're', 'sys', 'multiprocessing', 'resource'}
    assert imported <= stdlib | {'math_verify', 'sympy'}, imported
    r_job, w_job = os.pipe(); r_res, w_res = os.pipe()
    argv = [sys.executable, '-I', verify_worker.__file__, str(r_job), str(w_res)]
    proc = subprocess.Popen(argv, pass_fds=(r_job, w_res))
    os.close(r_job); os.close(w_res)
    from multiprocessing.connection import Connection
    tx, rx = Connection(w_job, readable=False), Connection(r_res, writable=False)
    try:
        assert rx.recv() == 'ready'
        tx.send(("5", ("The answer is 5", 'text'), 5)); assert rx.recv() == (True, "equivalent")
        tx.send(("5", ("nonsense", 'prose'), 5)); assert rx.recv()[1].startswith("ValueError")   # an answer, no crash
        tx.send(("1/3", "0.333333", 5)); assert rx.recv()[0] is False
    finally:
        tx.close(); assert proc.wait(30) == 0; rx.close()
    assert subprocess.run([sys.executable, '-I', verify_worker.__file__], capture_output=True).returncode == 1

def test_ruff_check_worker():
    pytest.importorskip('ruff', reason="ruff comes with the dev extra")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, '-m', 'ruff', 'check', '--config', os.path.join(root, 'pyproject.toml'),
                        verify_worker.__file__], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr

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
    assert [s.role for s in tr if s.problem_uid == 'math_env/original/000'] == ['tool_generator', 'reasoning_generator']
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
    "A worker that raises, or answers IE, marks the tool agent's step; the rollout goes on, and the step is not scored."
    class Raising:
        async def run(self, code, stdin="", time_limit=None, **kw): raise OSError("no sandbox slot")
    class Down:
        async def run(self, code, stdin="", time_limit=None, **kw):
            return SimpleNamespace(verdict='IE', stdout='', stderr='', message='launcher died')
    for worker, why in ((Raising(), 'the execution worker failed: OSError: no sandbox slot'),
                        (Down(), 'sandbox infrastructure error: launcher died')):
        tr = rollout('math_env', oracle_policy, seeds=range(2), worker=worker, max_turns=1)
        tools = [s for s in tr if s.role == 'tool_generator']
        assert tools and all(s.infra_error == why for s in tools)
        assert all(s.reward is None and s.reward_terms == {} and s.state_after['tool_verdict'] == 'IE' for s in tools)  # not scored
        assert all(s.state_after['tool_output'] == f"ERROR (IE):\n{why}" for s in tools)
        assert all(s.infra_error is None for s in tr if s.role == 'reasoning_generator')
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
    got = [(s.role, s.turn_idx, s.prompt, s.action, s.reward_terms) for s in tr.steps]
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

"""math_env's generated word problems and compact style: one problem per seed, held-out seeds apart from training ones,
the oracle solving every problem and random guesses almost none in the compact prompts, garbage replies as format
errors (never exceptions), and the tiny_math presets."""
import ast, random, string
from types import SimpleNamespace
import pytest

pytest.importorskip("math_verify")
from pettingllms_nb.core.parsing import FormatError
from pettingllms_nb.core.accessors import DEMO_SEED_BASE, VAL_SEED_BASE, env_kwargs
from pettingllms_nb.core.config import load_config, preset_description
from pettingllms_nb.core.registry import make_env, registry
from pettingllms_nb.core.agent import take_turn
from pettingllms_nb.engine.check_env import GARBAGE, check_env
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.envs.math.agents import (COMPACT_ANSWER_CHARS, MathSingleAgent, ReasoningGenerator, ToolGenerator,
                                             compact_program, parse_compact_answer)
from pettingllms_nb.envs.math.data import WORD_TEMPLATES, generated_problem, solve_generated
from pettingllms_nb.envs.math.env import MathEnv
from pettingllms_nb.envs.math.oracle import oracle_policy, random_policy
from pettingllms_nb.envs.math.prompts import compact_prompt

PRESETS = ['tiny_math', 'tiny_math_lora', 'tiny_math_single']


class ArithmeticWorker:
    "Runs nothing: answers `print(<integer arithmetic>)` by walking its syntax tree (no eval); anything else fails."
    OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__}

    def value(self, node):
        if isinstance(node, ast.Constant) and type(node.value) is int: return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in self.OPS:
            return self.OPS[type(node.op)](self.value(node.left), self.value(node.right))
        raise ValueError("not integer arithmetic")

    async def run(self, code, stdin="", time_limit=None, **kw):
        try:
            (stmt,) = ast.parse(code).body
            call = stmt.value
            assert isinstance(call, ast.Call) and call.func.id == 'print' and len(call.args) == 1
            return SimpleNamespace(verdict='OK', stdout=f"{self.value(call.args[0])}\n", stderr='')
        except Exception:
            return SimpleNamespace(verdict='RE', stdout='', stderr='Traceback (most recent call last):\nValueError: 7')


WORKER = ArithmeticWorker()
HELD_OUT = list(range(DEMO_SEED_BASE, DEMO_SEED_BASE + 100))


# -- the family ------------------------------------------------------------------------------------------------------
def test_a_seed_is_one_problem():
    assert [generated_problem(s) for s in range(50)] == [generated_problem(s) for s in range(50)]
    env = make_env('math_env', seed=12, dataset='generated')
    assert (env.state.problem, env.gold, env.problem_uid) == (generated_problem(12)['problem'], generated_problem(12)['answer'],
                                                             'math_env/generated/12')
    assert env.reset(12).problem == env.clone().state.problem


def test_held_out_seeds_are_other_problems():
    train = [generated_problem(s)['problem'] for s in range(200)]
    for base in (VAL_SEED_BASE, DEMO_SEED_BASE):
        held = [generated_problem(base + s)['problem'] for s in range(200)]
        assert sum(a != b for a, b in zip(train, held)) > 190
        assert len(set(held) - set(train)) > 150


def test_every_template_is_drawn_with_integer_answers_its_program_computes():
    drawn = {}
    for s in range(600):
        p = generated_problem(s)
        assert int(p['answer']) >= 0 and len(p['problem']) < 70
        assert WORKER.value(ast.parse(p['program']).body[0].value.args[0]) == int(p['answer'])
        assert solve_generated(p['problem']) == {'answer': p['answer'], 'program': p['program']}
        drawn[p['problem'].split()[-1]] = True
    assert len(WORD_TEMPLATES) == 6 and {'left?', 'now?', 'x?'} <= set(drawn)


def test_solve_generated_refuses_other_text():
    for text in ("What is 7! (seven factorial)?", "", None, "x*3+4=. x?", "What is 1+2+3?" * 30, 42):
        assert solve_generated(text) is None


# -- compact prompts and replies -------------------------------------------------------------------------------------
def test_compact_prompts_are_a_few_dozen_characters():
    env = make_env('math_env', seed=3, dataset='generated', prompt_style='compact')
    q = env.state.problem
    tool, reasoning, single = ToolGenerator(), ReasoningGenerator(), MathSingleAgent()
    assert tool.update_from_env(env, 0)['text'] == f"Q:{q}\ncode:"
    assert single.update_from_env(env, 0)['text'] == f"Q:{q}\nanswer:"
    assert reasoning.update_from_env(env, 0)['text'] == f"Q:{q}\nout:-\nanswer:"
    take_turn(tool, env, generated_problem(3)['program'], WORKER)
    assert reasoning.update_from_env(env, 0)['text'] == f"Q:{q}\nout:{env.gold}\nanswer:"
    take_turn(reasoning, env, env.gold, WORKER)
    assert (env.done, env.success) == (True, True)
    assert all(len(compact_prompt(r, env.state)) < 80 for r in ('tool_generator', 'reasoning_generator', 'math_single_agent'))


def test_a_failed_program_shows_as_an_error_not_an_answer():
    env = make_env('math_env', seed=3, dataset='generated', prompt_style='compact')
    tool, reasoning = ToolGenerator(), ReasoningGenerator()
    tool.update_from_env(env, 0)
    take_turn(tool, env, "print(undefined)", WORKER)
    assert env.state.tool_answer is None and tool.reward_terms['no_answer'] == -1.0
    assert reasoning.update_from_env(env, 0)['text'].endswith("\nout:error\nanswer:")


def _garbage(n=300, seed=0):
    rng = random.Random(seed)
    chars = string.printable + '\x00\u00ff\ufffd'
    return GARBAGE + [''.join(rng.choice(chars) for _ in range(rng.randint(0, 40))) for _ in range(n)]


@pytest.mark.parametrize('cls', [ToolGenerator, ReasoningGenerator, MathSingleAgent])
def test_garbage_is_a_format_error_never_an_exception(cls):
    env = make_env('math_env', seed=0, dataset='generated', prompt_style='compact')
    agent = cls()
    agent.update_from_env(env, 0)
    parse = compact_program if cls is ToolGenerator else parse_compact_answer
    accepted = 0
    for g in _garbage():
        agent.update_from_model(g)   # never raises
        try: parse(g)
        except FormatError: pass
        else: accepted += 1
        assert (agent.format_error is None) == (agent.current_action is not None)
    assert agent.update_from_model('x' * 100_000) is None and agent.format_error
    assert accepted < 60   # random text is rarely a program or a bare answer


def test_compact_answers_are_bare_and_short():
    assert [parse_compact_answer(a) for a in ("19", " -4\n", "5/6")] == ["19", "-4", "5/6"]
    for bad in ("19 20", "1" * (COMPACT_ANSWER_CHARS + 1), "```python", "Answer: 19", "'19'"):
        with pytest.raises(FormatError): parse_compact_answer(bad)
    assert compact_program("print(3*7-2)") == "print(3*7-2)"
    for bad in ("3*7-2", "print(3*", "19"):
        with pytest.raises(FormatError): compact_program(bad)


# -- the scripted policies through the engine ------------------------------------------------------------------------
def test_the_oracle_solves_every_held_out_problem_and_random_almost_none():
    assert registry.scripted('math_env', 'oracle') is oracle_policy
    for preset in ('tiny_math', 'tiny_math_single'):
        tr = rollout(preset, oracle_policy, seeds=HELD_OUT, worker=WORKER)
        assert [e.success for e in tr.episodes] == [True] * len(HELD_OUT), preset
        assert all(s.format_error is None for s in tr.steps)
        assert all(s.completion == generated_problem(int(s.problem_uid.rsplit('/', 1)[1]))['program']
                   for s in tr.steps if s.role == 'tool_generator')
        tr = rollout(preset, random_policy, seeds=HELD_OUT, worker=WORKER)
        assert sum(e.success for e in tr.episodes) <= 5, preset
        assert all(s.format_error is None for s in tr.steps)   # random, but in the compact format


def test_the_oracle_in_the_full_style_writes_the_problems_program():
    tr = rollout('math_env', oracle_policy, seeds=range(20), worker=WORKER, dataset='generated')
    assert all(e.success for e in tr.episodes)
    tool = [s for s in tr.steps if s.role == 'tool_generator']
    assert tool[0].completion.startswith("Computed.\n```python\nprint(") and "Problem:\n" in tool[0].prompt['text']


def test_the_real_sandbox_computes_the_program():
    tr = rollout('tiny_math', oracle_policy, seeds=HELD_OUT[:4])
    assert [e.success for e in tr.episodes] == [True] * 4


def test_check_env_passes_in_the_compact_style():
    assert check_env('tiny_math', worker=WORKER, probe_response="19").ok
    assert check_env('tiny_math', worker=WORKER, policy=oracle_policy, probe_response="print(1)").ok
    assert check_env('tiny_math_single', worker=WORKER, probe_response="19").ok


# -- the presets -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize('name', PRESETS)
def test_the_presets_load(name):
    cfg = load_config(name)
    kw = env_kwargs(cfg)
    assert cfg.env.name == 'math_env' and (kw['dataset'], kw['prompt_style']) == ('generated', 'compact')
    assert preset_description(name)
    t = cfg.training
    assert cfg.base_models.policy_0.path == 'tiny' and t.max_prompt_length >= 110 and t.max_response_length >= 20
    assert t.warmstart_steps > 0 and 0 < t.warmstart_p_oracle < 1
    roles = list(cfg.multi_agent_interaction.turn_order)
    assert roles == (['math_single_agent'] if name == 'tiny_math_single' else ['tool_generator', 'reasoning_generator'])
    assert cfg.specialization == ('lora' if name == 'tiny_math_lora' else 'prompt')


def test_env_source_generated_selects_the_family():
    cfg = load_config('tiny_math', ['env.source=math_generated'])
    assert make_env('math_env', seed=4, **env_kwargs(cfg)).state.problem == generated_problem(4)['problem']


def test_the_warm_start_demonstrations_are_compact():
    from pettingllms_nb.training.trainer import warm_start_pairs
    pairs = warm_start_pairs(load_config('tiny_math'), [['math_single_agent'], ['tool_generator', 'reasoning_generator']],
                             n_seeds=6, p_oracle=0.5, worker=WORKER)
    assert len(pairs) >= 18
    for prompt, completion in pairs:
        text = prompt['text'] if isinstance(prompt, dict) else prompt
        assert text.startswith('Q:') and len(completion) <= 24, (text, completion)
        (compact_program if text.endswith('code:') else parse_compact_answer)(completion)

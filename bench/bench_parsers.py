"""Parse time per kB and per MB of every parser that reads model text or program output, on its worst inputs beside
a normal reply of the same size, with the acceptance bar: every call returns within BUDGET ms of CPU per kB of input
(2 by default), or within FLOOR ms for inputs of a kB or two (a call has fixed costs). The budget is set by `ast`:
reading Python literals (generated call tests, Python-style lists) costs it about 1.2-1.5 ms per kB on a loaded
2-core machine, and the parsers that need it cap what they give it; everything else runs well under 1 ms per kB.

Each parser is fed a normal reply padded to the size and the inputs that made an older version slow (floods of
backticks, brackets, braces, markers, unclosed fences, deep nesting). Sizes run small to large; once one call of a
case takes longer than --cap seconds its larger sizes are skipped (printed as `>cap`), so the script also runs on
an old, quadratic checkout (`PYTHONPATH=/path/to/old/checkout python bench/bench_parsers.py`) to print the before
numbers. A parser whose module (or extra) is missing is listed as skipped with the reason. Exit status 1 when any
measured input is over budget.

    python bench/bench_parsers.py [--sizes 1,10,100,1000] [--cap 5] [--budget 2.0] [--floor 2.0] [--only NAME]
"""
import argparse, importlib, sys, time
from _load import load_report

KB = 1000

def _pad(reply, n):
    "A normal reply of about `n` characters: prose before it, the reply itself at the end."
    prose = "Let me think about the problem step by step and check each case carefully. "
    return (prose * (max(0, n - len(reply)) // len(prose) + 1))[:max(0, n - len(reply))] + reply

def _fill(unit, n, head='', tail=''):
    "`head`, then `unit` repeated to about `n` characters, then `tail`."
    return head + unit * max(1, (n - len(head) - len(tail)) // len(unit)) + tail

def _nest(n, o='[', c=']', head=''):
    k = max(1, (n - len(head)) // 2)
    return head + o * k + c * k

# The worst inputs of each family of parsers, as functions of the size n (characters).
FENCES = {
    'normal': lambda n: _pad("Here it is:\n```python\nprint(sum(map(int, input().split())))\n```\nDone.", n),
    'backticks': lambda n: '`' * n,
    'label line, no newline': lambda n: _fill(' ', n, '```python'),
    'spaces after ```': lambda n: _fill(' ', n, '```'),
    'fences, no newline': lambda n: _fill('```a', n),
    'one unclosed fence': lambda n: _fill('x\n', n, '```python\n'),
    'unclosed + ``': lambda n: _fill('``', n, '```\n'),
    'many fences': lambda n: _fill('```\n', n),
    'fence per line': lambda n: _fill('```py\nx=1\n', n),
}
BOXES = {
    'normal': lambda n: _pad(r"so the answer is $\boxed{\frac{1}{2}}$.", n),
    r'\boxed{ flood': lambda n: _fill(r'\boxed{', n),
    'open braces': lambda n: _fill('{', n, r'\boxed{'),
    r'\boxed + spaces': lambda n: _fill(' ', n, r'\boxed'),
    'many empty boxes': lambda n: _fill(r'\boxed{}', n),
    'NUL box': lambda n: _pad('\\boxed{5\x00}', n),
}
LITERALS = {
    'normal': lambda n: _pad('I go right twice, then down.\n#### ["R", "R", "D"]', n),
    ']' + ' flood': lambda n: ']' * n,
    '[ flood': lambda n: '[' * n,
    '[ then ] flood': lambda n: _fill(']', n, '['),
    'nested deep': lambda n: _nest(n),
    'nested 1500 after marker': lambda n: _pad('#### ' + '[' * 1500 + ']' * 1500, n),
    '[] pairs': lambda n: _fill('[]', n),
    'marker flood': lambda n: _fill('####', n),
    'long list': lambda n: _fill('1,', n, '#### [', ']'),
    'unary chain': lambda n: _fill('-', min(n, 19_000), '#### [', '1]'),
}
SUDOKU_COMPACT = {
    'normal': lambda n: '023 114 201',
    'digits': lambda n: '0' * n,
    'triples then x': lambda n: _fill('000 ', n, '', 'x'),
    'comma flood': lambda n: _fill(', ', n, '000'),
}
PROGRAMS = {
    'normal': lambda n: 'print("RRD")',
    'open parens': lambda n: _fill('(', n, 'print'),
    'one long line': lambda n: _fill('x', n),
    'sum chain': lambda n: _fill('1+', n, 'print(', '1)'),
    'backticks': lambda n: '`' * n,
}

TEST_BLOCKS = {
    'normal': lambda n: _pad("```input\n2 3\n```\n```output\n5\n```", n),
    'unclosed input block': lambda n: _fill('1 2\n', n, '```input\n'),
    'backticks': lambda n: '`' * n,
    'spaces after ```': lambda n: _fill(' ', n, '```'),
    'unclosed + ``': lambda n: _fill('``', n, '```input\n'),
    'many blocks': lambda n: _fill('```input\n1\n```\n```output\n1\n```\n', n),
    'labels, no newline': lambda n: _fill('```input', n),
    'label, then spaces': lambda n: _fill(' ', n, '```input'),
}
ASSERTS = {
    'normal': lambda n: _pad("```python\nassert add(1, 2) == 3\nassert add(2, 2) == 4\n```", n),
    'many asserts': lambda n: _fill('assert add(1, 2) == 3\n', n),
    'one long assert': lambda n: _fill('1, ', n, 'assert add(', '1) == 3'),
    'deep parens': lambda n: _fill('(', n, 'assert add(', ') == 1'),
    'NUL asserts': lambda n: _fill('assert add(\x00) == 1\n', n),
    'unary chain': lambda n: _fill('-', n, 'assert add(', '1) == 1'),
}
RESULT_LINES = {   # a call-style program's stdout, which the judge reads
    'normal': lambda n: _pad('\x1e#pettingllms-result#{"return": [1, 2, 3]}\n', n),
    'nested result': lambda n: _fill('[', n, '\x1e#pettingllms-result#{"return": '),
    'marker flood': lambda n: _fill('\x1e#pettingllms-result#', n),
    'long result': lambda n: _fill('1, ', n, '\x1e#pettingllms-result#{"return": [', '1]}'),
}
ANSWERS = {   # math answers, boxed or not
    'normal': lambda n: _pad(r"so the answer is $\boxed{\frac{1}{2}}$.", n),
    'prose, no box': lambda n: _pad('The answer is 42', n),
    r'\boxed{ flood': lambda n: _fill(r'\boxed{', n), 'open braces': lambda n: _fill('{', n, r'\boxed{'),
    r'\text{ flood': lambda n: _fill(r'\text{', n), r'\textxxx': lambda n: _fill('x', n, r'\text'),
    'dollars': lambda n: '$' * n, 'error lines': lambda n: _fill('    Error\n', n),
    'word run': lambda n: _fill('a', n, '  '), 'NUL': lambda n: _pad('\\boxed{5\x00}', n),
}
TAGS = {   # search_env's tagged answers
    'normal': lambda n: _pad('<think>I need the capital.</think><search>capital of Trelsk</search>', n),
    'open tags': lambda n: _fill('<search>', n), 'think flood': lambda n: _fill('</think>', n),
    'unclosed': lambda n: _fill('a ', n, '<answer>'), 'long content': lambda n: _fill('a ', n, '<answer>', '</answer>'),
}

WEB_ACTIONS = {
    'normal': lambda n: _pad('I will search.\nfill(5, "running shoes")', n),
    'open quote': lambda n: _fill('x', n, "fill(3, '"), 'escapes': lambda n: _fill('\\n', n, "fill(3, '", "')"),
    'bare argument': lambda n: _fill('x', n, 'click('), 'commas': lambda n: _fill(',', n, 'fill(', ')'),
    'calls': lambda n: _fill('click(', n), 'spaces': lambda n: _fill(' ', n, 'click('),
    'open parens': lambda n: '(' * n,
}
VERDICTS = {'normal': lambda n: _pad('reject: the size is wrong', n), 'verdict flood': lambda n: _fill('approve ', n),
            'reject, long note': lambda n: _fill('x', n, 'reject: ')}
ALFWORLD = {
    'normal': lambda n: _pad('Think: the mug is on the desk.\nAction: go to desk 1', n),
    'action lines': lambda n: _fill('Action: go to desk 1\n', n), 'prefix run': lambda n: _fill('>', n, '', 'action'),
    'no newline': lambda n: _fill('x', n, 'Action: '),
    'plan': lambda n: _pad('Plan:\n1. find a mug\n2. take the mug', n), 'plan lines': lambda n: _fill('- x\n', n, 'Plan:\n'),
    'plan flood': lambda n: _fill('plan:', n),
}

def _stateful(name):
    "A stateful agent's action parser for `name` (benchmark, style), prompted once so it knows its task."
    def make():
        from pettingllms_nb.envs.stateful import StatefulEnv, PlanAgent, ToolCallAgent
        bench, style, role = name
        env = StatefulEnv(bench, prompt_style=style)
        env.reset(0)
        a = (ToolCallAgent if role == 'tool' else PlanAgent)()
        a.update_from_env(env, 0)
        if role == 'tool': return lambda s: a.parse(s)
        if role == 'tool output':
            from pettingllms_nb.envs.stateful.prompts import TOOL_MARKER
            return lambda s: a.parse_action(s, TOOL_MARKER)
        return lambda s: a.parse(s)
    return make

def _attr(module, name, wrap=None):
    def make():
        fn = getattr(importlib.import_module(module), name)
        return wrap(fn) if wrap else fn
    return make

# (parser, how to get it, its cases)
PARSERS = [
    ('core fenced_blocks', _attr('pettingllms_nb.core.parsing', 'fenced_blocks'), FENCES),
    ('core extract_code', _attr('pettingllms_nb.core.parsing', 'extract_code'), FENCES),
    ('core all_boxed', _attr('pettingllms_nb.core.parsing', 'all_boxed'), BOXES),
    ('core extract_boxed', _attr('pettingllms_nb.core.parsing', 'extract_boxed'), BOXES),
    ('core parse_literal', _attr('pettingllms_nb.core.parsing', 'parse_literal'), LITERALS),
    ('core parse_actions', _attr('pettingllms_nb.core.parsing', 'parse_actions'), LITERALS),
    ('core parse_grid 4x4', _attr('pettingllms_nb.core.parsing', 'parse_grid', lambda f: lambda s: f(s, 4)), LITERALS),
    ('stateful parse_sudoku', _attr('pettingllms_nb.envs.stateful.games.sudoku', 'parse_sudoku'), LITERALS),
    ('stateful plan_agent (plan_path)', _stateful(('plan_path', 'full', 'plan')), LITERALS),
    ('stateful plan_agent (sudoku, compact)', _stateful(('sudoku', 'compact', 'plan')), {**LITERALS, **SUDOKU_COMPACT}),
    ('stateful tool output (sokoban)', _stateful(('sokoban', 'full', 'tool output')), LITERALS),
    ('stateful tool_call_agent (full)', _stateful(('plan_path', 'full', 'tool')), {**FENCES, **PROGRAMS}),
    ('stateful tool_call_agent (compact)', _stateful(('plan_path', 'compact', 'tool')), {**FENCES, **PROGRAMS}),
    ('math answer_text', _attr('pettingllms_nb.envs.math.checker', 'answer_text'), ANSWERS),
    ('code parse_tests (stdio)', _attr('pettingllms_nb.envs.code.judge', 'parse_tests'), TEST_BLOCKS),
    ('code parse_tests (call)', _attr('pettingllms_nb.envs.code.judge', 'parse_tests',
                                      lambda f: lambda s: f(s, 'call', 'add')), ASSERTS),
    ('code call_result', _attr('pettingllms_nb.envs.code.judge', 'call_result'), RESULT_LINES),
    ('search parse_tagged', _attr('pettingllms_nb.envs.search.agents', 'parse_tagged',
                                  lambda f: lambda s: f(s, ('answer', 'search'))), TAGS),
    ('toy parse_number', _attr('pettingllms_nb.envs.toy.agents', 'parse_number'), LITERALS),
    ('web parse_action', _attr('pettingllms_nb.envs.web.observation', 'parse_action'), WEB_ACTIONS),
    ('web parse_verdict', _attr('pettingllms_nb.envs.web.prompts', 'parse_verdict'), VERDICTS),
    ('alfworld parse_action', _attr('pettingllms_nb.envs.alfworld.agents', 'parse_action'), ALFWORLD),
    ('alfworld parse_plan', _attr('pettingllms_nb.envs.alfworld.agents', 'parse_plan'), ALFWORLD),
]

def once(fn, s) -> float:
    "CPU seconds of one call (CPU, not wall time: on a shared machine the wall clock also counts other programs)."
    t0 = time.process_time()
    try: fn(s)
    except Exception: pass   # a FormatError is the expected outcome on garbage; the time is what is measured
    return time.process_time() - t0

def timed(fn, s, reps:int=3) -> float:
    "Best of `reps` calls (one call when that one is slow)."
    best = once(fn, s)
    for _ in range(reps - 1 if best < 0.2 else 0): best = min(best, once(fn, s))
    return best

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sizes', default='1,10,100,1000', help='input sizes in kB (1 kB = 1000 characters)')
    ap.add_argument('--cap', type=float, default=5.0, help='skip the larger sizes of a case after a call this slow (s)')
    ap.add_argument('--budget', type=float, default=2.0, help='acceptance bar: ms per kB of input')
    ap.add_argument('--floor', type=float, default=2.0, help='acceptance bar for small inputs: ms per call')
    ap.add_argument('--only', default='', help='run only parsers whose name contains this')
    a = ap.parse_args()
    sizes = [int(float(x) * KB) for x in a.sizes.split(',')]
    head = f"{'parser':38} {'input':26}" + ''.join(f"{f'{n // KB} kB':>11}" for n in sizes)
    print(f"CPU time per call in ms, the worst ms per kB over the sizes, and the time over a normal reply's at the "
          f"largest size; budget {a.budget:g} ms/kB (at least {a.floor:g} ms a call)\n{head}  {'ms/kB':>7}  x normal")
    over = []
    for pname, make, cases in PARSERS:
        if a.only and a.only not in pname: continue
        try: fn = make()
        except Exception as e:
            print(f"{pname:38} skipped: {type(e).__name__}: {e}")
            continue
        normal = {}
        for cname, gen in cases.items():
            cells, slow, worst, last = [], False, 0.0, None
            for n in sizes:
                if slow:
                    cells.append(f"{'>' + format(a.cap, 'g') + ' s':>11}")
                    over.append((pname, cname, n, None))
                    continue
                text = gen(n)
                t = timed(fn, text)
                if cname == 'normal': normal[n] = t
                per_kb = 1e3 * t / max(1.0, len(text) / KB)
                worst = max(worst, per_kb)
                if 1e3 * t > max(a.floor, a.budget * len(text) / KB): over.append((pname, cname, n, per_kb))
                cells.append(f"{1e3 * t:11.2f}")
                slow, last = t > a.cap, (n, t)
            ratio = last[1] / normal[last[0]] if normal.get(last[0]) else float('nan')
            print(f"{pname[:38]:38} {cname[:26]:26}{''.join(cells)}  {worst:7.3f}  {ratio:7.1f}", flush=True)
    print()
    if over:
        print(f"OVER BUDGET ({a.budget:g} ms/kB, at least {a.floor:g} ms a call): {len(over)} measurements")
        for p, c, n, v in over:
            print(f"  {p} / {c} / {n // KB} kB: {'skipped (too slow)' if v is None else f'{v:.3f} ms/kB'}")
        sys.exit(1)
    print(f"all within budget: every call took under {a.budget:g} ms per kB of input (or under {a.floor:g} ms)")

if __name__ == '__main__':
    with load_report('bench_parsers'): main()

"""Fail when a notebook is committed without its outputs (run it after `execute_notebooks.py --save`).

    python scripts/check_outputs.py [PATH ...]        # default: tutorials/ ; folders are searched recursively

A notebook carries its outputs when it has some, and every code cell that ends in a bare value (a name, an
attribute, a subscript, a tuple...: what a reader expects to see below the cell) shows one. Cells flagged `#| slow`
or `#| gpu` are exempt (the smoke run leaves them out; on a CPU machine a GPU cell only says what it would do), and
so are cells ending in a call (many calls return `None`) or an assignment. Exit status 1 lists what is missing.
"""
from __future__ import annotations
import ast, json, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from execute_notebooks import cell_flags, notebooks   # noqa: E402

EXEMPT = {'slow', 'gpu', 'notest'}


def shows_a_value(src:str) -> bool:
    "Whether a cell's last statement is a bare value that Jupyter displays (not a call, not `None`)."
    code = '\n'.join(line for line in src.splitlines() if not line.lstrip().startswith(('%', '!')))
    try: body = ast.parse(code).body
    except SyntaxError: return False
    if not body or not isinstance(body[-1], ast.Expr): return False
    v = body[-1].value
    return not isinstance(v, (ast.Call, ast.Await, ast.Constant)) and not src.rstrip().endswith(';')


def missing_outputs(path) -> list[str]:
    "What notebook `path` lacks: its cells that should show a value and show nothing (or that it has no output at all)."
    cells = json.loads(Path(path).read_text())['cells']
    code = [(i, c) for i, c in enumerate(cells) if c['cell_type'] == 'code']
    src = lambda c: c['source'] if isinstance(c['source'], str) else ''.join(c['source'])
    if code and not any(c.get('outputs') for _, c in code): return ['no cell has an output']
    return [f"cell {i} ends in a value but shows none: {src(c).strip().splitlines()[-1][:80]!r}" for i, c in code
            if not c.get('outputs') and not cell_flags(c) & EXEMPT and shows_a_value(src(c))]


def main(argv=None) -> int:
    paths = (argv if argv is not None else sys.argv[1:]) or ['tutorials']
    nbs = notebooks(paths)
    bad = {nb: m for nb in nbs if (m := missing_outputs(nb))}
    for nb, m in bad.items():
        print(f"[outputs] {nb}: " + '; '.join(m[:3]) + (f"; and {len(m) - 3} more" if len(m) > 3 else ''), file=sys.stderr)
    n = len(nbs)
    print(f"[outputs] {n - len(bad)} of {n} notebooks carry their outputs", file=sys.stderr)
    return 1 if bad else 0


if __name__ == '__main__': sys.exit(main())

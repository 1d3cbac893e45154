"""Notebook order: numbers unique across nbs/ and increasing in dependency order, an index in every folder.

A notebook's number is its reading position: a reader who follows the numbers never meets a module before the ones
it imports. `#| default_exp M` names a notebook's module; what M imports is read (ast, top level and inside
functions, relative imports resolved) from the exported file, or from the notebook's `#| export` cells when it is not
exported yet. A package `__init__` counts as its folder's index notebook, which is unnumbered and exempt.
The renumbering that makes this hold is computed by a script (see the project's notebook-order issue).
"""
import ast, json, re
import pytest
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS, PKG = ROOT / 'nbs', 'pettingllms_nb'
NUMBERED = re.compile(r'^(\d+)([a-z]*)_.+\.ipynb$')


def notebooks() -> list:
    return sorted(p for p in NBS.rglob('*.ipynb') if '.ipynb_checkpoints' not in p.parts and not p.name.startswith('_'))


def cells(nb: Path) -> list: return json.loads(nb.read_text())['cells']


def number(nb: Path): return int(m[1]) if (m := NUMBERED.match(nb.name)) else None


def default_exp(nb: Path):
    for c in cells(nb):
        if c['cell_type'] == 'code' and (m := re.search(r'^\s*#\|\s*default_exp\s+(\S+)', ''.join(c['source']), re.M)):
            return f'{PKG}.{m[1]}'.removesuffix('.__init__')
    return None


def module_source(nb: Path, mod: str):
    "(source, is_package): the exported file, or the notebook's `#| export` cells if it has none yet."
    base = ROOT / Path(*mod.split('.'))
    for f in (base.with_suffix('.py'), base / '__init__.py'):
        if f.exists(): return f.read_text(), f.name == '__init__.py'
    src = '\n'.join(''.join(c['source']) for c in cells(nb)
                    if c['cell_type'] == 'code' and re.match(r'\s*#\|\s*export', ''.join(c['source'])))
    return src, nb.name == 'index.ipynb'


def internal_imports(source: str, mod: str, is_pkg: bool, known: set) -> set:
    "Every module of the package that `source` (module `mod`) imports, anywhere in it."
    pkg, out = (mod if is_pkg else mod.rpartition('.')[0]), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import): out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = pkg.split('.')
            target = ('.'.join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                      if node.level else node.module or '')
            out |= {f'{target}.{a.name}' if f'{target}.{a.name}' in known else target for a in node.names}
    return {m for m in out if m == PKG or m.startswith(PKG + '.')}


def folders() -> list:
    "Every folder of nbs/ that holds notebooks (at any depth), nbs/ itself first."
    return sorted({d for nb in notebooks() for d in [nb.parent, *nb.parent.parents] if d == NBS or NBS in d.parents})


def test_numbers_are_unique_across_nbs():
    by_number = defaultdict(list)
    for nb in notebooks():
        if (n := number(nb)) is not None: by_number[n].append(str(nb.relative_to(NBS)))
    shared = {n: ps for n, ps in sorted(by_number.items()) if len(ps) > 1}
    if shared: pytest.fail(f"{len(shared)} numbers are shared by {sum(map(len, shared.values()))} notebooks "
                        "(a number is the notebook's place in the reading order):\n"
                        + '\n'.join(f"  {n}: {', '.join(ps)}" for n, ps in shared.items()), pytrace=False)


def test_numbers_increase_in_dependency_order():
    exporter = {m: nb for nb in notebooks() if (m := default_exp(nb))}
    known = set(exporter) | {'.'.join(p.relative_to(ROOT).with_suffix('').parts).removesuffix('.__init__')
                             for p in (ROOT / PKG).rglob('*.py')}
    wrong = []
    for mod, nb in sorted(exporter.items()):
        if (n := number(nb)) is None: continue                   # an index notebook (a package __init__) is exempt
        source, is_pkg = module_source(nb, mod)
        for dep in sorted(internal_imports(source, mod, is_pkg, known) - {mod}):
            other = exporter.get(dep)
            if other is None or number(other) is None: continue  # hand-written, or a package __init__
            if number(other) >= n:
                wrong.append(f"  {nb.relative_to(NBS)} ({mod}) imports {dep}, exported by {other.relative_to(NBS)}")
    if wrong: pytest.fail(f"{len(wrong)} imports reach a notebook numbered at or after the importer (renumber, or make "
                       "the import go down the layers):\n" + '\n'.join(wrong), pytrace=False)


def test_every_folder_has_an_index():
    missing = [f"nbs/{d.relative_to(NBS)}/".replace('/./', '/') for d in folders() if not (d / 'index.ipynb').exists()]
    if missing: pytest.fail("folders of nbs/ without an index.ipynb:\n  " + '\n  '.join(missing), pytrace=False)


def mentions_in_order(text: str, stems: list):
    "The first of `stems` (in number order) that `text` does not mention after the ones before it, else None."
    at = 0
    for s in stems:
        m = re.compile(rf'(?<![A-Za-z0-9_]){re.escape(s)}(?![A-Za-z0-9_])').search(text, at)
        if not m: return s
        at = m.end()
    return None


def test_each_index_lists_its_notebooks_in_number_order():
    wrong = []
    for d in folders():
        idx = d / 'index.ipynb'
        if not idx.exists(): continue                           # reported by test_every_folder_has_an_index
        stems = [nb.stem for nb in sorted(d.glob('*.ipynb'), key=lambda p: (number(p) or 0, p.name)) if number(nb) is not None]
        text = '\n'.join(''.join(c['source']) for c in cells(idx))
        if (s := mentions_in_order(text, stems)):
            missing = [x for x in stems if not re.search(rf'(?<![A-Za-z0-9_]){re.escape(x)}(?![A-Za-z0-9_])', text)]
            wrong.append(f"  {idx.relative_to(NBS)}: " + (f"does not mention {', '.join(missing)}" if missing else
                         f"mentions {s} out of number order (expected {', '.join(stems)})"))
    if wrong: pytest.fail("folder indexes must name every notebook of their folder, in number order:\n" + '\n'.join(wrong),
                          pytrace=False)

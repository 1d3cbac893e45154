"Project layout guards: nbdev config, settings.ini stub, fast core import, public names."
import configparser, subprocess, sys, tomllib
import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_settings_ini_agrees_with_pyproject():
    nbdev = tomllib.loads((ROOT / 'pyproject.toml').read_text())['tool']['nbdev']
    ini = configparser.ConfigParser(); ini.read(ROOT / 'settings.ini')
    d = ini['DEFAULT']
    for key in ('lib_path', 'nbs_path', 'doc_path', 'tst_flags', 'branch'):
        assert d[key] == str(nbdev[key]), f"settings.ini {key}={d[key]!r} but pyproject [tool.nbdev] {key}={nbdev[key]!r}"
    proj = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    assert d['lib_name'] == proj['name']


def test_extras_declared():
    extras = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['optional-dependencies']
    for name in ('train', 'vllm', 'data', 'code', 'dev', 'ray'):
        assert name in extras, f"extra [{name}] missing from pyproject.toml"
    assert any(r.startswith('torch') for r in extras['train'])


def test_core_import_is_fast_and_light():
    code = ("import time, sys; t=time.perf_counter(); import pettingllms_nb as p; "
            "from pettingllms_nb.core import registry, agent, env, state, parsing, rewards; "
            "from pettingllms_nb.engine import rollout, trace, policies; "
            "dt=time.perf_counter()-t; heavy=[m for m in ('torch','transformers','peft','vllm','datasets') if m in sys.modules]; "
            "print(dt, heavy)")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.split(maxsplit=1)
    assert out[1].strip() == '[]', f"heavy modules imported eagerly: {out[1]}"
    assert float(out[0]) < 1.0, f"core import took {out[0]} s"


# Public names whose home is still being written, and why (each gets its own test that skips until it resolves).
PENDING = {'run_program': "pettingllms_nb.sandbox.run_program is being written with the sandbox's rebuild"}


def test_public_names_resolve():
    import pettingllms_nb as p
    for name in p.__all__:
        if name in PENDING: continue
        assert getattr(p, name) is not None, name


def test_newcomer_names_are_importable_from_the_package():
    "The names a newcomer reaches for, from `pettingllms_nb` itself, are the objects their modules define."
    import pettingllms_nb as p
    from pettingllms_nb.training.trainer import Trainer
    from pettingllms_nb.training.advantages import grpo, at_grpo
    from pettingllms_nb.widgets.stepthrough import StepThrough, TreeView, GroupInspector
    from pettingllms_nb.models.tiny import tiny_model
    from pettingllms_nb.core.agent import take_turn
    from pettingllms_nb.envs.math.checker import check_answer
    from pettingllms_nb import Trainer as T, StepThrough as S, TreeView as TV, GroupInspector as G, tiny_model as tm
    assert (T, S, TV, G, tm, p.grpo, p.at_grpo, p.take_turn, p.check_answer) == \
           (Trainer, StepThrough, TreeView, GroupInspector, tiny_model, grpo, at_grpo, take_turn, check_answer)


def test_every_environments_scripted_policies_have_distinct_public_names():
    "`pettingllms_nb.<env>_oracle` / `_random` are the very functions each environment registered."
    import pettingllms_nb as p
    from pettingllms_nb.core.registry import registry
    pairs = {'stateful_oracle': ('stateful_env', 'oracle'), 'stateful_random': ('stateful_env', 'random'),
             'math_oracle': ('math_env', 'oracle'), 'math_random': ('math_env', 'random'),
             'code_oracle': ('code_env', 'oracle'), 'code_refine': ('code_env', 'refine'),
             'search_oracle': ('search_env', 'oracle'), 'search_random': ('search_env', 'random'),
             'toy_oracle': ('toy_relay', 'oracle'), 'toy_random': ('toy_relay', 'random')}
    for name, (env, kind) in pairs.items():
        assert name in p.__all__ and getattr(p, name) is registry.scripted(env, kind), name
    assert len({id(getattr(p, n)) for n in pairs}) == len(pairs)


def test_run_program_is_public():
    import pettingllms_nb as p
    try: fn = p.run_program
    except (AttributeError, ImportError) as e: pytest.skip(f"run_program does not resolve yet ({e}): {PENDING['run_program']}")
    from pettingllms_nb.sandbox import run_program
    assert fn is run_program


def test_public_names_stay_lazy():
    "Importing the package imports none of the modules behind its public names."
    code = ("import sys, pettingllms_nb as p; "
            "print(sorted(m for m in sys.modules if m.startswith(tuple(f'pettingllms_nb.{b}' for b in "
            "('envs', 'training', 'models', 'widgets', 'sandbox')))))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == '[]', out


def test_every_notebook_exports_a_module():
    "Every notebook exports its module, but the indexes and the glossary (they only guide the reader)."
    import json
    for nb in sorted((ROOT / 'nbs').rglob('*.ipynb')):
        if nb.name == 'index.ipynb' or nb.stem.endswith('_glossary'): continue
        cells = json.loads(nb.read_text())['cells']
        assert any('default_exp' in ''.join(c['source']) for c in cells), f"{nb.name} has no #| default_exp"


# Modules that still export a `log` (math's data loaders; empty this once they log through `_log`).
NOT_YET_CONVERTED = ('pettingllms_nb.envs.math.data',)
BARE = {'log', 'fit', 'load', 'show', 'get', 'clone', 'update_from_env', 'update_from_model', 'save', 'step', 'reset'}


def _exported_modules():
    import importlib, pkgutil, pettingllms_nb
    for m in pkgutil.walk_packages(pettingllms_nb.__path__, 'pettingllms_nb.'):
        if m.name.endswith('_modidx') or m.name.startswith(NOT_YET_CONVERTED): continue
        try: yield importlib.import_module(m.name)
        except ImportError: continue          # an optional extra that is not installed here


def test_no_logger_or_bare_method_name_in_any_all():
    "`__all__` lists what a module offers: never its logger, never a method that `@patch` put on a class."
    import inspect
    for mod in _exported_modules():
        names = getattr(mod, '__all__', [])
        assert not BARE & set(names), f"{mod.__name__}.__all__ has {sorted(BARE & set(names))}"
        for n in names:
            obj = getattr(mod, n, None)
            if inspect.isfunction(obj):
                assert '.' not in obj.__qualname__.replace('<locals>.', ''), f"{mod.__name__}.{n} is a method ({obj.__qualname__})"


# ---- Layers: imports only go down (ARCHITECTURE.md, "Layers") -------------------------------------------------------
# The package's folders from the bottom up. A module may import from its own folder and the folders before it, never
# from one after it; values a lower layer must know about reach it by registration (core.registry, core.cards,
# core.checks). `sandbox` sits below `scale`: everything that needs a Ray cluster (the Ray pool too) lives in `scale`.
LAYERS = ('core', 'data', 'engine', 'sandbox', 'models', 'scale', 'training', 'widgets', 'envs', 'interop', 'demo', 'cli')
TOP = len(LAYERS)          # the package root re-exports every layer: it sits above them all


def import_graph(pkg:Path) -> dict:
    "`{module: {(imported module, line)}}` for every internal import of `pkg`, top-level and inside functions."
    import ast
    name, files = pkg.name, {}
    for p in pkg.rglob('*.py'):
        if p.name == '_modidx.py': continue
        parts = p.relative_to(pkg.parent).with_suffix('').parts
        files['.'.join(parts[:-1] if parts[-1] == '__init__' else parts)] = p
    graph = {}
    for mod, p in files.items():
        base = mod.split('.') if p.name == '__init__.py' else mod.split('.')[:-1]
        edges = graph.setdefault(mod, set())
        for node in ast.walk(ast.parse(p.read_text(encoding='utf-8'))):
            if isinstance(node, ast.Import): targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                m = '.'.join(base[:len(base) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module or ''
                targets = [m] + [f"{m}.{a.name}" for a in node.names]   # `from pkg import module` imports that module
            else: continue
            for t in targets:
                while t and t not in files: t = t.rpartition('.')[0]
                if t and t != mod and t.split('.')[0] == name: edges.add((t, node.lineno))
    return graph


def layer(mod:str) -> int:
    "The floor of a module: its folder's place in LAYERS (the package root: above them all)."
    parts = mod.split('.')
    if len(parts) == 1: return TOP
    if parts[1] not in LAYERS: raise AssertionError(f"{mod}: its folder {parts[1]!r} has no place in LAYERS {LAYERS}")
    return LAYERS.index(parts[1])


def climbing_imports(graph:dict) -> list:
    "`'a (line n) -> b'` for every import from a lower floor to a higher one (the package root may import anything)."
    return sorted(f"{a} (line {n}) -> {b}" for a, es in graph.items() if '.' in a for b, n in es if layer(b) > layer(a))


def import_cycles(graph:dict) -> list:
    "Groups of modules that import each other (directly or round a loop); a package `__init__` is not followed."
    import sys
    inits = {m for m in graph if m.count('.') == 0 or any(k.startswith(m + '.') for k in graph)}
    adj = {a: sorted({b for b, _ in es if b not in inits}) for a, es in graph.items() if a not in inits}
    index, low, stack, on, out = {}, {}, [], set(), []
    def visit(v):
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w in adj.get(v, ()):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(adj):
        if v not in index: visit(v)
    return sorted(out)


def test_imports_only_go_down():
    "No module imports from a layer above its own, at the top or inside a function."
    climbs = climbing_imports(import_graph(ROOT / 'pettingllms_nb'))
    assert not climbs, f"{len(climbs)} import(s) climb the layer order {LAYERS}:\n" + '\n'.join(climbs)


def test_no_import_cycles():
    "No two files import each other, directly or round a loop (inside functions too)."
    cycles = import_cycles(import_graph(ROOT / 'pettingllms_nb'))
    assert not cycles, "import cycles:\n" + '\n'.join(' <-> '.join(c) for c in cycles)


def test_the_layer_checks_catch_a_climb_and_a_cycle(tmp_path):
    "The two checks above find what they look for: one climbing import and one cycle, in a package made for it."
    pkg = tmp_path / 'pkg'
    for d in ('core', 'engine'): (pkg / d).mkdir(parents=True); (pkg / d / '__init__.py').write_text('')
    (pkg / '__init__.py').write_text('from .core import state')
    (pkg / 'core' / 'state.py').write_text('def card():\n    from pkg.engine.rollout import MODES\n')
    (pkg / 'engine' / 'rollout.py').write_text('from ..core import state\nfrom . import trace\nMODES = ()\n')
    (pkg / 'engine' / 'trace.py').write_text('from .rollout import MODES\n')
    g = import_graph(pkg)
    assert climbing_imports(g) == ['pkg.core.state (line 2) -> pkg.engine.rollout']
    assert import_cycles(g) == [['pkg.core.state', 'pkg.engine.rollout', 'pkg.engine.trace']]   # one loop of three
    assert climbing_imports({'pkg.core.state': {('pkg.core.params', 1)}}) == []

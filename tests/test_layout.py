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
    import json
    for nb in sorted((ROOT / 'nbs').rglob('*.ipynb')):
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

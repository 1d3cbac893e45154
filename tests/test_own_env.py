"""A user's own environment, trained from the command line: `--import mymodule`, and an installed plugin found
through the entry-point group `pettingllms_nb.plugins`; the warm start takes its demonstrations from the module's
registered oracle."""
import json, os, shutil, subprocess, sys, textwrap
from pathlib import Path

import pytest

MODULE = textwrap.dedent('''
    "Pass the digit: a caller sees a secret digit and calls it out; a mover hears the call and plays it."
    import re
    from dataclasses import dataclass
    from pettingllms_nb import Env, EnvState, Agent, FormatError, register_env, register_agent, register_scripted
    from pettingllms_nb.core.rewards import RewardSpec, local, team, process

    @dataclass
    class PassState(EnvState):
        secret: int = 0
        call: int | None = None
        played: int | None = None

    @register_env('pass_digit')
    class PassEnv(Env):
        state_cls, default_max_turns, default_turn_order = PassState, 1, ('caller', 'mover')
        def make_state(self, rng): return PassState(secret=rng.randint(0, 4))
        def is_success(self): return self.state.played == self.state.secret

    def _digit(text):
        if not text[:1].isdigit(): raise FormatError("expected one digit first")
        return int(text[0])

    fmt = process('format', lambda env, a: -0.5 if a.format_error else 0.0)

    @register_agent('caller', env='pass_digit')
    class Caller(Agent):
        reward_spec = RewardSpec([local('true_call', lambda env, a: float(env.state.call == env.state.secret)), fmt])
        def build_prompt(self, env, turn_idx): return f"s{env.state.secret}"
        def parse(self, response): return _digit(response)
        async def step(self, env, worker=None): env.state.call = self.current_action

    @register_agent('mover', env='pass_digit')
    class Mover(Agent):
        reward_spec = RewardSpec([team('solved', lambda env, a: float(env.success)), fmt])
        def build_prompt(self, env, turn_idx): return f"c{env.state.call}"
        def parse(self, response): return _digit(response)
        async def step(self, env, worker=None): env.state.played = self.current_action

    @register_scripted('pass_digit', 'oracle')
    def oracle(request): return request.text[1:] if request.text[1:].isdigit() else "0"

    @register_scripted('pass_digit', 'random')
    def random_digit(request, rng): return str(rng.randint(0, 4))
''')

CONFIG = textwrap.dedent('''
    description: "pass_digit on a CPU: a tiny model, two agents, one shared policy"
    env: {name: pass_digit, max_turns: 1}
    base_models: {policy_0: {path: tiny, name: shared_model}}
    agent_policy_configs:
      agent_configs:
        agent_0: {name: caller, policy_name: shared_model}
        agent_1: {name: mover, policy_name: shared_model}
    multi_agent_interaction: {turn_order: [caller, mover]}
    training:
      total_training_steps: 1
      train_batch_size: 2
      train_sample_num: 2
      val_size: 2
      val_freq: 1
      warmstart_steps: 5
      warmstart_p_oracle: 0.5
      max_prompt_length: 16
      max_response_length: 2
      rollout_mode: independent
      lr: 1.0e-3
''')


def cli() -> list:
    exe = Path(sys.executable).parent / 'pettingllms-nb'
    return [str(exe)] if exe.exists() else [sys.executable, '-c', 'import sys; from pettingllms_nb.cli import main; sys.exit(main())']


def run(args, cwd, **env):
    e = {**os.environ, 'HF_HUB_OFFLINE': '1', 'OMP_NUM_THREADS': '1', **env}
    return subprocess.run(cli() + args, cwd=cwd, env=e, capture_output=True, text=True, timeout=600)


def _trained(r, out:Path):
    assert r.returncode == 0, r.stderr[-3000:]
    metrics = [json.loads(l) for l in (out / 'metrics.jsonl').read_text().splitlines()]
    assert [m['step'] for m in metrics] == [0, 1] and 'val/success_rate' in metrics[-1]
    assert (out / 'base' / 'config.json').exists() and (out / 'curves.png').exists()   # warm-started, plotted
    assert 'val/success_rate' in r.stdout


def test_train_my_yaml_with_import_mymodule(tmp_path):
    pytest.importorskip('torch')
    (tmp_path / 'mymodule.py').write_text(MODULE)
    (tmp_path / 'my.yaml').write_text(CONFIG)
    r = run(['train', 'my.yaml', '--import', 'mymodule', '--out', 'run'], cwd=tmp_path)
    _trained(r, tmp_path / 'run')
    # without the flag, the environment is unknown, and the message says so
    r = run(['train', 'my.yaml', '--out', 'run2'], cwd=tmp_path)
    assert r.returncode == 2 and "no env named 'pass_digit'" in r.stderr, r.stderr[-2000:]


def _plugin(site:Path):
    "An installed distribution in `site`: the module, and a dist-info with one entry point in the plugin group."
    site.mkdir()
    (site / 'pass_digit_plugin.py').write_text(MODULE)
    info = site / 'pass_digit_plugin-0.1.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text("Metadata-Version: 2.1\nName: pass-digit-plugin\nVersion: 0.1\n")
    (info / 'entry_points.txt').write_text("[pettingllms_nb.plugins]\npass_digit = pass_digit_plugin\n")
    (info / 'RECORD').write_text('')


def test_an_installed_plugin_is_found_through_its_entry_point(tmp_path):
    pytest.importorskip('torch')
    _plugin(tmp_path / 'site')
    (tmp_path / 'my.yaml').write_text(CONFIG)
    pypath = os.pathsep.join([str(tmp_path / 'site'), os.environ.get('PYTHONPATH', '')]).rstrip(os.pathsep)
    r = run(['registry'], cwd=tmp_path, PYTHONPATH=pypath)
    assert r.returncode == 0 and 'pass_digit_plugin' in r.stdout and 'pass_digit.oracle' in r.stdout, r.stdout[-2000:]
    r = run(['train', 'my.yaml', '--out', 'run'], cwd=tmp_path, PYTHONPATH=pypath)
    _trained(r, tmp_path / 'run')


def test_the_warm_start_plays_the_modules_oracle(tmp_path, monkeypatch):
    "In-process: the demonstrations are the registered oracle's (and random policy's) replies to real prompts."
    import importlib
    from pettingllms_nb.core.config import load_config
    from pettingllms_nb.training.trainer import warm_start_pairs
    (tmp_path / 'pass_digit_inproc.py').write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module('pass_digit_inproc')
    (tmp_path / 'my.yaml').write_text(CONFIG)
    cfg = load_config(tmp_path / 'my.yaml')
    oracle = warm_start_pairs(cfg, n_seeds=20, p_oracle=1.0)
    assert len(oracle) == 40 and [p['text'][0] for p, _ in oracle[:2]] == ['s', 'c']
    assert all(p['text'][1:] == c for p, c in oracle)                       # the oracle repeats what it sees
    mixed = warm_start_pairs(cfg, n_seeds=20, p_oracle=0.5)
    wrong = sum(p['text'][1:] != c for p, c in mixed)
    assert 5 <= wrong <= 30, wrong                                           # about half random, a fifth of them right


def _defs(source:str) -> dict:
    "Name -> AST dump of every top-level class and function (decorators kept, docstrings left out)."
    import ast
    out = {}
    for node in ast.parse(source).body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef)): continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], 'value', None), ast.Constant) \
                and isinstance(body[0].value.value, str): node.body = body[1:] or [ast.Pass()]
        out[node.name] = ast.dump(node)
    return out

def test_tutorial_10s_module_is_its_cells():
    "The relay.py that tutorial 10 writes defines what its cells define (a change to one shows up as a difference)."
    import re
    nb = json.loads((Path(__file__).parent.parent / 'tutorials' / '10_train_your_own_env.ipynb').read_text())
    code = [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code']
    writer = next(s for s in code if '"relay.py").write_text(' in s)
    module = _defs(re.search(r"write_text\('''\\\n(.*?)'''\)", writer, re.S).group(1))
    cells = {}
    for s in code[:code.index(writer)]:
        try: cells.update(_defs(s))
        except SyntaxError: pass   # a cell with IPython syntax defines nothing the module needs
    assert set(module) == {'RelayState', 'RelayEnv', 'read_digit', 'Spotter', 'Striker', 'relay_oracle', 'relay_random'}
    assert {n: cells.get(n) for n in module} == module

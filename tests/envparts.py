"What every environment package must pass: its parts' names re-exported, clean `__all__`s, its registering modules found."
import importlib, inspect, json, subprocess, sys


def part_modules(env:str) -> dict:
    "`{part: module}` for the parts the package `pettingllms_nb.envs.<env>` re-exports from."
    parts = importlib.import_module(f'pettingllms_nb.envs.{env}')._PARTS
    return {p: importlib.import_module(f'pettingllms_nb.envs.{env}.{p}') for p in parts}


def check_reexports(env:str, old_names) -> None:
    "Each name of each part is the part's own object, named once; every name in `old_names` is still exported."
    pkg, mods = importlib.import_module(f'pettingllms_nb.envs.{env}'), part_modules(env)
    names = [n for ns in pkg._PARTS.values() for n in ns]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for part, ns in pkg._PARTS.items():
        assert all(getattr(pkg, n) is getattr(mods[part], n) for n in ns), part
    assert not set(old_names) - set(names), set(old_names) - set(names)


def check_all_names(env:str) -> None:
    "No `log` and no method names (of the classes the parts define) in any part's `__all__`."
    mods = list(part_modules(env).values())
    classes = [c for m in mods for c in vars(m).values() if inspect.isclass(c) and c.__module__ == m.__name__]
    methods = {n for c in classes for n, v in vars(c).items() if callable(v) or isinstance(v, property)}
    methods -= {c.__name__ for c in classes}
    for m in mods:
        assert 'log' not in m.__all__ and not set(m.__all__) & methods, (m.__name__, set(m.__all__) & methods)


def fresh_registry(name:str, scripted) -> dict:
    "What a fresh interpreter's registry finds for env `name`: its module, agents, scripted policies' modules, card."
    code = ("import json\nfrom pettingllms_nb.core.registry import registry\n"
            "from pettingllms_nb.widgets.render import render_state\n"
            f"env = registry.get('env', {name!r})\n"
            f"print(json.dumps({{'env': env.__module__, 'agents': sorted(registry.agents_for({name!r})),\n"
            f"                  'scripted': [registry.scripted({name!r}, k).__module__ for k in {tuple(scripted)!r}],\n"
            "                  'card': render_state(env.state_cls())}))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out)

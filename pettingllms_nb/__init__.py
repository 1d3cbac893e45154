"""pettingllms-nb: multi-agent reinforcement learning with LLMs, taught and researched in Jupyter.

This file is written by hand (nbdev only maintains `__version__`): it re-exports the public names lazily, so
`import pettingllms_nb` stays fast and heavy modules load on first use.
"""
__version__ = "0.0.1"

import importlib as _importlib

_PUBLIC = {
    'EnvState': 'core.state', 'Env': 'core.env', 'Agent': 'core.agent', 'AgentData': 'core.agent',
    'FormatError': 'core.parsing', 'RewardSpec': 'core.rewards',
    'registry': 'core.registry', 'make_env': 'core.registry', 'make_agent': 'core.registry',
    'register_env': 'core.registry', 'register_agent': 'core.registry', 'register_worker': 'core.registry',
    'register_policy': 'core.registry',
    'load_config': 'core.config',
    'Request': 'engine.policies', 'Completion': 'engine.policies', 'Policy': 'engine.policies',
    'ScriptedPolicy': 'engine.policies', 'ReplayPolicy': 'engine.policies', 'HumanPolicy': 'engine.policies',
    'Trace': 'engine.trace', 'Step': 'engine.trace',
    'rollout': 'engine.rollout', 'arollout': 'engine.rollout',
    'check_env': 'engine.check_env',
    'run_code': 'sandbox',
}
__all__ = sorted(_PUBLIC)

def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(_importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pettingllms_nb' has no attribute {name!r}")

def __dir__(): return sorted(list(globals()) + list(_PUBLIC))

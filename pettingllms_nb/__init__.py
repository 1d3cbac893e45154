"""pettingllms-nb: multi-agent reinforcement learning with LLMs, taught and researched in Jupyter.

This file is written by hand (nbdev only maintains `__version__`): it re-exports the public names lazily, so
`import pettingllms_nb` stays fast and heavy modules load on first use.
"""
__version__ = "0.0.1"

import importlib as _importlib, importlib.abc as _abc, importlib.util as _util, sys as _sys

# Modules that moved when the package took its per-block layout; the old paths stay importable and give the very same
# module object (so patching, isinstance and pickling agree). Each notebook says where its module used to live.
_MOVED = {
    'advantages': 'training.advantages', 'losses': 'training.losses', 'trainer': 'training.trainer',
    'envs.games': 'envs.stateful.games', 'envs.games.plan_path': 'envs.stateful.games.plan_path',
    'envs.games.sudoku': 'envs.stateful.games.sudoku', 'envs.games.sokoban': 'envs.stateful.games.sokoban',
    'envs.math_check': 'envs.math.checker', 'envs.math_data': 'envs.math.data',
    'envs.code_judge': 'envs.code.judge', 'envs.code_data': 'envs.code.data',
    'sandbox.ray_pool': 'scale.ray_pool',
}

class _MovedModules(_abc.MetaPathFinder, _abc.Loader):
    "Import `pettingllms_nb.<old path>` as the module now at its new path."
    def find_spec(self, fullname, path=None, target=None):
        old = fullname.partition(__name__ + '.')[2]
        return _util.spec_from_loader(fullname, self) if fullname.startswith(__name__ + '.') and old in _MOVED else None
    def create_module(self, spec):
        module = _importlib.import_module(f"{__name__}.{_MOVED[spec.name.partition('.')[2]]}")
        self._spec = module.__spec__
        return module
    def exec_module(self, module): module.__spec__ = self._spec   # importlib set it to the alias's; keep the real one

if not any(isinstance(f, _MovedModules) for f in _sys.meta_path): _sys.meta_path.insert(0, _MovedModules())

_PUBLIC = {   # name -> 'module' (the same name there) or 'module:attribute'
    'EnvState': 'core.state', 'Env': 'core.env', 'Agent': 'core.agent', 'AgentData': 'core.agent',
    'take_turn': 'core.agent', 'atake_turn': 'core.agent',
    'FormatError': 'core.parsing', 'RewardSpec': 'core.rewards',
    'registry': 'core.registry', 'make_env': 'core.registry', 'make_agent': 'core.registry',
    'register_env': 'core.registry', 'register_agent': 'core.registry', 'register_worker': 'core.registry',
    'register_policy': 'core.registry', 'register_scripted': 'core.registry',
    'load_config': 'core.config',
    'Request': 'engine.policies', 'Completion': 'engine.policies', 'Policy': 'engine.policies',
    'ScriptedPolicy': 'engine.policies', 'ReplayPolicy': 'engine.policies', 'HumanPolicy': 'engine.policies',
    'Trace': 'engine.trace', 'Step': 'engine.trace',
    'rollout': 'engine.rollout', 'arollout': 'engine.rollout',
    'check_env': 'engine.check_env',
    'grpo': 'training.advantages', 'at_grpo': 'training.advantages', 'Trainer': 'training.trainer',
    'tiny_model': 'models.tiny',
    'StepThrough': 'widgets.stepthrough', 'TreeView': 'widgets.stepthrough', 'GroupInspector': 'widgets.stepthrough',
    'TrainingDashboard': 'widgets.stepthrough',
    'run_code': 'sandbox', 'run_program': 'sandbox',
    'check_answer': 'envs.math.checker',
    # each environment's scripted policies, under names that say whose they are (the functions the environment
    # registered: `registry.scripted(env, 'oracle')` is the same object)
    'stateful_oracle': 'envs.stateful:oracle_policy', 'stateful_random': 'envs.stateful:random_policy',
    'math_oracle': 'envs.math:oracle_policy', 'math_random': 'envs.math:random_policy',
    'code_oracle': 'envs.code:oracle_policy', 'code_refine': 'envs.code:refine_policy',
    'search_oracle': 'envs.search:oracle_policy', 'search_random': 'envs.search:random_policy',
    'toy_oracle': 'envs.toy:oracle_policy', 'toy_random': 'envs.toy:random_policy',
}
__all__ = sorted(_PUBLIC)

def __getattr__(name):
    if name in _PUBLIC:
        module, _, attr = _PUBLIC[name].partition(':')
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), attr or name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pettingllms_nb' has no attribute {name!r}")

def __dir__(): return sorted(list(globals()) + list(_PUBLIC))

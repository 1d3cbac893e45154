"Every registered environment and agent declares its parameters (core.params), and the declarations match the constructors."
import inspect
import pytest
from pettingllms_nb.core.env import ENV_PARAMS
from pettingllms_nb.core.params import Param
from pettingllms_nb.core.registry import registry

ENVS = registry.names('env')
AGENTS = registry.names('agent')
TEST_ONLY = {'toy_unordered', 'leaky', 'appender', 'toy_flaky_runner', 'toy_crasher'}   # registered by notebooks, not shipped


def _own_params(cls) -> dict:
    "The constructor's named keyword parameters (what `cls(**kw)` accepts by name) and their defaults."
    ps = inspect.signature(cls.__init__).parameters
    return {n: p.default for n, p in ps.items() if n != 'self' and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


@pytest.mark.parametrize('name', [n for n in ENVS if n not in TEST_ONLY])
def test_every_env_declares_what_its_constructor_takes(name):
    cls = registry.get('env', name)
    assert cls.param_schema is not None, f"{name}: declare its parameters with core.params.declare_params"
    declared = {**ENV_PARAMS, **cls.param_schema}
    assert all(isinstance(p, Param) for p in declared.values())
    own = _own_params(cls)
    assert set(own) <= set(declared), f"{name}: {sorted(set(own) - set(declared))} taken but not declared"
    for n, default in own.items():      # the constructor's own defaults are allowed values
        if default is not inspect.Parameter.empty: assert declared[n].problem(default) is None, (name, n, default)
    assert cls.check_params({}) == [], name


@pytest.mark.parametrize('name', [n for n in AGENTS if n not in TEST_ONLY])
def test_every_agent_declares_its_parameters(name):
    cls = registry.get('agent', name)
    assert cls.param_schema is not None, f"{name}: declare its parameters with core.params.declare_params"
    assert cls.check_params({}) == [] and cls.check_params({'alpha': 0.5, 'system_prompt': 'You plan.'}) == []
    assert cls.check_params({'no_such_parameter': 1}), f"{name}: an unknown parameter must be refused"


def test_agents_that_run_programs_say_so():
    runs = {n for n in AGENTS if getattr(registry.get('agent', n), 'uses_sandbox', False)}
    assert {'tool_call_agent', 'code_generator', 'test_generator', 'code_single_agent'} <= runs
    assert 'math_env' not in ENVS or 'tool_generator' in runs
    assert not runs & {'plan_agent', 'stateful_single_agent', 'reasoning_agent', 'web_search_agent', 'scout', 'runner'}


@pytest.mark.parametrize('overrides,says', [
    (['env.kwargs.toolkit=hammer'], "env.kwargs.toolkit='hammer': allowed values are ['board']"),
    (['env.kwargs.max_plays=2'], "env.kwargs.max_plays=2: max_plays=2 needs a toolkit"),
    (['env.source=sudoku', 'env.kwargs.toolkit=board'], "toolkit 'board' plays ['plan_path'], not 'sudoku'"),
])
def test_tool_mode_configs_are_refused_at_load(overrides, says):
    "Plan-Path's tool mode (toolkit, max_plays) is checked by load_config, not first by the env's constructor."
    from pettingllms_nb.core.config import ConfigError, load_config
    with pytest.raises(ConfigError) as e: load_config('tiny_plan_path', overrides)
    assert says in str(e.value)

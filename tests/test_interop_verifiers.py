"verifiers: our environments as verifiers 0.4 environments; one rollout through verifiers' own loop with a scripted endpoint."
import pytest

pytest.importorskip('verifiers', reason="the verifiers adapter needs the [interop] extra (pip install -e '.[interop]')")
pytest.importorskip('fastapi', reason="the scripted endpoint needs FastAPI (the [interop] extra)")
from pettingllms_nb.core.registry import registry
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.interop.session import ServedApp
from pettingllms_nb.interop.verifiers import load_environment, scripted_chat, run_episode, MODULE, plugin_id


def test_plugin_module_exports_one_of_each():
    "verifiers resolves a taskset, an env and a harness from one module id, each exported once."
    import verifiers.v1 as vf
    from verifiers.v1.utils.loaders import taskset_class, harness_class, environment_class
    assert plugin_id() == MODULE
    assert issubclass(taskset_class(MODULE), vf.Taskset) and issubclass(harness_class(MODULE), vf.Harness)
    assert issubclass(environment_class(MODULE), vf.Env)


@pytest.mark.parametrize('name,roles', [('stateful_sudoku', ['tool_call_agent', 'plan_agent']),
                                        ('stateful_sudoku_single', ['stateful_single_agent']),
                                        ('search_env', ['reasoning_agent', 'web_search_agent'])])
def test_one_agent_field_per_role(name, roles):
    env = load_environment(name, seeds=[0, 5])
    assert list(env._agent_specs) == roles
    assert [t.data.info['seed'] for t in env.taskset] == [0, 5]


@pytest.mark.parametrize('name,env_name', [('stateful_sudoku', 'stateful_env'), ('stateful_sudoku_single', 'stateful_env'),
                                           ('search_env', 'search_env')])
def test_one_rollout_through_verifiers_loop(name, env_name):
    "Each agent turn is one verifiers trace, scored with our reward; the same as our engine on the same seed and policy."
    oracle = registry.scripted(env_name, 'oracle')
    env = load_environment(name, seeds=[0])
    env = load_environment(name, seeds=[0], model={r: r for r in env._agent_specs})   # the endpoint tells roles by model
    with ServedApp(scripted_chat(oracle)) as chat:
        ep = run_episode(env, chat.url + '/v1')
        calls = list(chat.app.state.calls)
    assert ep.ok, ep.errors
    direct = rollout(name, oracle, seeds=[0])
    assert [t.agent.name for t in ep.traces] == [s.role for s in direct]
    assert [t.rewards['reward'].score for t in ep.traces] == [s.reward for s in direct]
    assert [c[1] for c in calls] == [s.completion for s in direct]   # verifiers' interception relayed every call
    assert ep.traces[-1].metrics['success'] == float(direct.episodes[0].success)
    assert all(t.num_turns == 1 for t in ep.traces)


def test_a_failing_endpoint_fails_the_episode_not_a_step():
    "A model endpoint that fails is verifiers' episode failure (retried there), never a format error of our agents."
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse
    down = FastAPI()

    @down.post('/v1/chat/completions')
    async def _down(body: dict): return JSONResponse({'error': {'message': 'overloaded'}}, status_code=500)

    with ServedApp(down) as srv:
        ep = run_episode(load_environment('stateful_sudoku', seeds=[0]), srv.url + '/v1')
    assert not ep.ok and 'failed' in ep.errors[0].message
    assert all('reward' not in t.rewards for t in ep.traces)

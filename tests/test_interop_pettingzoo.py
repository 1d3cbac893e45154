"Our environments as PettingZoo AEC environments: PettingZoo's own api_test, turn order, rewards, terminations."
import warnings
import pytest

pytest.importorskip('pettingzoo', reason="the PettingZoo adapter needs the [interop] extra (pip install -e '.[interop]')")
from pettingzoo.test import api_test
from pettingllms_nb.core.registry import registry
from pettingllms_nb.engine.policies import Request
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.interop.pettingzoo import aec_env, PettingZooEnv, TextSpace


@pytest.mark.parametrize('name', ['stateful_sudoku', 'search_env', 'tiny_math'])
def test_api_test_passes(name):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')   # advice for numeric environments (NumPy observations, agent_0 names)
        api_test(aec_env(name, render_mode='ansi'), num_cycles=30)


def _play(env, policy, seed):
    env.reset(seed=seed)
    out = []
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        if term or trunc: env.step(None); continue
        assert obs == info['prompt']['text'] and info['role'] == agent
        env.step(policy(Request(agent, info['prompt'], problem_uid=info['problem_uid'], turn_idx=info['turn'])))
        out.append((agent, info['turn'], env.rewards[agent], {a for a, r in env.rewards.items() if r and a != agent}))
    return out


@pytest.mark.parametrize('name,env_name', [('stateful_sudoku', 'stateful_env'), ('search_env', 'search_env')])
def test_rewards_and_turn_order_are_the_engines(name, env_name):
    "Each agent's AEC reward is its agent_reward, in the config's turn order, as our engine plays it."
    oracle = registry.scripted(env_name, 'oracle')
    env = aec_env(name)
    for seed in (0, 1):
        played = _play(env, oracle, seed)
        steps = rollout(name, oracle, seeds=[seed]).steps
        assert [(a, t, r) for a, t, r, _ in played] == [(s.role, s.turn_idx, s.reward) for s in steps]
        assert all(not others for *_, others in played)   # only the agent that acted is rewarded
    assert env.possible_agents == rollout(name, oracle, seeds=[0]).meta['turn_order']


def test_turn_cap_truncates_and_solving_terminates():
    env = aec_env('stateful_sudoku', max_turns=1)
    env.reset(seed=0)
    env.step('garbage'); env.step('garbage')
    assert all(env.truncations.values()) and not any(env.terminations.values())
    oracle = registry.scripted('stateful_env', 'oracle')
    env = aec_env('stateful_sudoku')
    _play(env, oracle, 0)
    assert env.agents == []
    env.reset(seed=0)
    info = env.infos['tool_call_agent']
    env.step(oracle(Request('tool_call_agent', info['prompt'], problem_uid=info['problem_uid'])))
    info = env.infos['plan_agent']
    env.step(oracle(Request('plan_agent', info['prompt'], problem_uid=info['problem_uid'])))
    assert all(env.terminations.values()) and not any(env.truncations.values())


def test_text_spaces_hold_any_prompt():
    env = aec_env('stateful_sudoku')
    env.reset(seed=2)
    obs = env.observe(env.agent_selection)
    assert env.observation_space(env.agent_selection).contains(obs) and obs.dtype == env.observation_space('plan_agent').dtype
    assert TextSpace(5).contains('ü✓') and not TextSpace(1).contains('ab')


def test_reset_without_seed_moves_to_the_next_problem():
    env = aec_env('stateful_sudoku')
    env.reset(seed=7); first = env.infos['tool_call_agent']['problem_uid']
    env.reset(); second = env.infos['tool_call_agent']['problem_uid']
    assert first.endswith('seed=7') and second.endswith('seed=8')

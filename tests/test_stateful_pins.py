"""Pins of `stateful_env`'s behaviour: prompt texts, rollouts, demonstrations and the warm-start pairs, as sha256.

The demo's and the trainer's learning results depend on these exact bytes: a refactor of `envs.stateful` must leave
every one unchanged. A pin changes only with a deliberate change of behaviour, with a commit message that says why.
"""
import hashlib, json, random

import pytest

from echoworker import EchoWorker

from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.envs.stateful import (StatefulEnv, ToolCallAgent, PlanAgent, StatefulSingleAgent,
                                          oracle_policy, random_policy, random_response, sft_pairs)

ROLES = {'tool_call_agent': ToolCallAgent, 'plan_agent': PlanAgent, 'stateful_single_agent': StatefulSingleAgent}


def sha(x) -> str: return hashlib.sha256(json.dumps(x, sort_keys=True, default=str).encode()).hexdigest()[:16]


def prompts_along_an_episode(benchmark, style, seed=2, turns=3):
    "Every role's prompt text at each turn of an episode played by random replies (so it lasts and shows history)."
    env = StatefulEnv(benchmark, prompt_style=style, max_turns=turns)
    env.reset(seed)
    rng, texts = random.Random(seed), []
    agents = {r: cls() for r, cls in ROLES.items()}
    while not env.done:
        for role in ('tool_call_agent', 'plan_agent'):
            if env.done: break
            texts += [agents[r].update_from_env(env, env.turn)['text'] for r in ROLES]
            a = agents[role]
            a.update_from_env(env, env.turn)
            a.update_from_model(random_response(role, env, rng))
            run_sync(a.step(env, EchoWorker()))
            env.refresh()
            a.calculate_reward(env)
        if not env.done: env.end_turn()
    return texts


PROMPT_PINS = {
    ('plan_path', 'full'): 'd7c196c444e3d606', ('plan_path', 'compact'): '21466181e6cdd7f3',
    ('sudoku', 'full'): 'c2739f33a61e74a2', ('sudoku', 'compact'): 'a847bb0a6bcb5c6f',
    ('sokoban', 'full'): '46b7abefc300bb19', ('sokoban', 'compact'): '1e39254e45637d8e',
}

@pytest.mark.parametrize("benchmark,style", list(PROMPT_PINS))
def test_prompts_are_pinned(benchmark, style):
    texts = prompts_along_an_episode(benchmark, style)
    assert len(texts) == 18 and len(set(texts)) > 8   # three turns: the later prompts show history and moved boards
    assert sha(texts) == PROMPT_PINS[(benchmark, style)], (benchmark, style, sha(texts))


def test_first_prompts_are_pinned():
    "The very first prompt of each role, each game and each style: the ones a newcomer reads first."
    got = {}
    for b in ('plan_path', 'sudoku', 'sokoban'):
        for style in ('full', 'compact'):
            env = StatefulEnv(b, prompt_style=style); env.reset(0)
            for r, cls in ROLES.items(): got[f"{b}/{style}/{r}"] = sha(cls().update_from_env(env, 0))
    assert sha(got) == '9d367af3fb370642', got


def trace_fingerprint(tr) -> str:
    "Everything a trace records that depends on the environment (ids aside, which the engine names)."
    return sha([(s.problem_uid, s.turn_idx, s.role, s.prompt, s.completion, s.action, s.format_error, s.infra_error,
                 s.reward, s.reward_terms, s.state_after, s.selected, s.done, s.success) for s in tr])


ROLLOUT_PINS = {
    ('plan_path', 'full', 'oracle'): 'fa48a8ec6f4f4895', ('sudoku', 'full', 'random'): 'a0092b4b93eeedf3',
    ('sokoban', 'full', 'random'): '11135ff109d1a52e',   # sokoban: its uid says max_moves= (was max_steps=), which seeds random_policy
    ('plan_path', 'compact', 'random'): 'a0c82bdb331ea51b', ('sudoku', 'compact', 'oracle'): '2e026bb931d7c2b2',
    ('sokoban', 'compact', 'random'): 'deb4d38876ee2d3a',
}

@pytest.mark.parametrize("benchmark,style,policy", list(ROLLOUT_PINS))
def test_rollouts_are_pinned(benchmark, style, policy):
    from pettingllms_nb.engine.rollout import rollout
    pol = {'oracle': oracle_policy, 'random': random_policy}[policy]
    tr = rollout('stateful_env', pol, seeds=range(3), worker=EchoWorker(), benchmark=benchmark, prompt_style=style,
                 max_turns=3)
    tree = rollout('stateful_env', pol, mode='tree', sample_num=3, seeds=[5], worker=EchoWorker(), benchmark=benchmark,
                   prompt_style=style, max_turns=2)
    assert len(tr) and len(tree)
    got = (trace_fingerprint(tr), trace_fingerprint(tree))
    assert sha(got) == ROLLOUT_PINS[(benchmark, style, policy)], (benchmark, style, policy, sha(got))


def test_boards_and_summaries_are_pinned():
    "The SVG board of each game state and the text summary of the shared state, before and after a random turn."
    from pettingllms_nb.widgets.render import board_svg, render_state
    got = []
    for b in ('plan_path', 'sudoku', 'sokoban'):
        env = StatefulEnv(b); env.reset(4)
        a = StatefulSingleAgent(); a.update_from_env(env, 0)
        for _ in range(2):
            got += [board_svg(env.state.game), board_svg(env.state), render_state(env.state), env.state.summary()]
            a.update_from_model(random_response('stateful_single_agent', env, random.Random(1)))
            run_sync(a.step(env)); env.refresh()
    assert all(got) and sha(got) == '79513e1effb10fb0', sha(got)   # issue 28: left-aligned cells, prompts wrap at words


def test_sft_pairs_are_pinned():
    got = [sha(sft_pairs(dict(benchmark='plan_path', size=4, prompt_style='compact'), seeds=range(4))),
           sha(sft_pairs(dict(benchmark='sudoku', prompt_style='compact', max_turns=3), seeds=range(4), p_oracle=0.5)),
           sha(sft_pairs(dict(benchmark='sokoban'), ['stateful_single_agent'], seeds=range(2), p_oracle=0.5,
                         rng=random.Random(3)))]
    assert sha(got) == '4baa60de39b66c51', got

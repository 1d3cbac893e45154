"openspiel_env (issue 30, deliverable 1): three sequential OpenSpiel games played to the end by random players, outcomes known only at the end reaching every player's last step, forfeits, hidden information, check_env; the registry without the package."
import subprocess, sys
import pytest

pytest.importorskip('pyspiel', reason="open_spiel is not installed (the [games] extra: pip install -e '.[games]')")

from pettingllms_nb.core.registry import registry, make_env, make_agent
from pettingllms_nb.core.agent import take_turn
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.engine.check_env import check_env
from pettingllms_nb.interop.openspiel import parse_move, refusal

GAMES = ['tic_tac_toe', 'kuhn_poker', 'first_sealed_auction']
rand = lambda: registry.scripted('openspiel_env', 'random')


@pytest.mark.parametrize('game', GAMES)
def test_rewards_sum_to_the_returns(game):
    "Each player's rewards over a game add up to its return, also the player whose last move came before the end."
    tr = rollout('openspiel_env', rand(), seeds=range(30), sample_num=2, game=game)
    assert len(tr.episodes) == 60
    for e in tr.episodes:
        final = tr.step(e.final_id).state_after
        assert final['terminal'] and final['forfeit'] is None
        assert {r: round(v, 6) for r, v in e.rewards.items()} == {f'os_player_{p}': round(v, 6) for p, v in enumerate(final['returns'])}
        assert e.success == all(final['returns'][0] > r for r in final['returns'][1:])


def test_the_loser_hears_of_its_loss():
    "Tic-tac-toe where player 0 wins on its third move: player 1's last step (before the end) carries the -1."
    moves = iter(['x(0,0)', 'o(1,0)', 'x(0,1)', 'o(1,1)', 'x(0,2)'])
    tr = rollout('openspiel_env', lambda req: next(moves), seeds=[0], game='tic_tac_toe')
    p1 = [s for s in tr.steps if s.role == 'os_player_1']
    assert [s.reward for s in p1] == [0.0, -1.0] and p1[-1].reward_terms['outcome'] == -1.0
    assert tr.episodes[0].success and tr.episodes[0].turns == 3   # rounds of both players: x o, x o, x


def test_illegal_move_forfeits():
    env = make_env('openspiel_env', seed=0, game='kuhn_poker')
    p0 = make_agent('os_player_0'); p0.update_from_env(env, 0); take_turn(p0, env, 'fold')
    r = p0.calculate_reward(env)
    assert env.done and env.state.forfeit == 0 and env.state.returns == [-2.0, 0.0] and r == -2.5


@pytest.mark.parametrize('bad', [None, '', '\ud800', 'x(1,1)' * 100_000, '```\n' * 1000, 'o(0,0)\nnot this'])
def test_parse_is_total(bad):
    from pettingllms_nb.core.parsing import FormatError
    with pytest.raises(FormatError): parse_move(bad, ['o(0,0)', 'o(0,1)'])


def test_seeds_and_clones():
    deal = lambda s: make_env('openspiel_env', seed=s, game='kuhn_poker').state.history
    assert deal(4) == deal(4) and len({tuple(deal(s)) for s in range(10)}) > 1
    same = {make_env('openspiel_env', seed=s, game='tic_tac_toe').state.board for s in range(5)}
    opened = {make_env('openspiel_env', seed=s, game='tic_tac_toe', opening_moves=1).state.board for s in range(20)}
    assert len(same) == 1 and len(opened) > 3
    env = make_env('openspiel_env', seed=0, game='tic_tac_toe'); c = env.clone(); c.play(0, 'x(1,1)')
    assert env.state.moves == [] and env.state.current == 0 and c.state.current == 1


def test_hidden_information_stays_hidden():
    "In the sealed-bid auction a player's prompt shows neither the other's value nor its bid."
    env = make_env('openspiel_env', seed=3, game='first_sealed_auction')
    p0 = make_agent('os_player_0'); p0.update_from_env(env, 0); take_turn(p0, env, env.state.legal[-1])
    p1 = make_agent('os_player_1'); p1.update_from_env(env, 1)
    text = p1.current_prompt['text']
    assert env.state.moves[0]['move'] not in text and 'Player 0 value' not in text and 'Your moves so far: none yet' in text


def test_refused_games_name_the_reason():
    from pettingllms_nb.core.config import ConfigError, load_config
    assert 'simultaneous' in refusal('matrix_pd') and 'not an OpenSpiel game' in refusal('no_such_game')
    with pytest.raises(ValueError, match='simultaneous'): make_env('openspiel_env', seed=0, game='goofspiel')
    assert 'simultaneous' in registry.get('env', 'openspiel_env').check_rules({'game': 'matrix_pd'})[0]


@pytest.mark.parametrize('game', GAMES)
def test_check_env(game):
    kw = dict(game=game, opening_moves=1 if game == 'tic_tac_toe' else 0)
    check_env('openspiel_env', probe_response='pass', **kw)
    check_env('openspiel_env', policy=rand(), **kw)


def test_unavailable_without_the_package():
    code = ("import sys; sys.modules['pyspiel'] = None\n"
            "import importlib.util as u; u.find_spec = (lambda f: lambda n, *a: None if n == 'pyspiel' else f(n, *a))(u.find_spec)\n"
            "from pettingllms_nb.core.registry import registry\n"
            "e = registry.load().entries['env']['openspiel_env']\n"
            "print(e.available, e.extra, e.reason)")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith('False games') and 'open_spiel' in out.stdout, out.stdout


def test_import_stays_lazy():
    out = subprocess.run([sys.executable, '-c', "import sys, pettingllms_nb; print('pyspiel' in sys.modules)"],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == 'False', out.stderr


def test_a_player_declines_turns_that_are_not_its_move():
    "After a one-move opening player 1 moves first: no step is recorded for a player whose move it was not."
    tr = rollout('openspiel_env', rand(), seeds=range(10), game='tic_tac_toe', opening_moves=1)
    for e in tr.episodes:
        path, final = tr.kept_path(e), tr.step(e.final_id).state_after
        played = final['moves'][final['opening']:]
        assert [s.role for s in path] == [f"os_player_{m['player']}" for m in played]
        assert all(s.format_error is None for s in path)


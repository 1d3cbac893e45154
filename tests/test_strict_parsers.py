"""Issue 26: a verdict is the declared line, not a word found in prose; control characters are not moves."""
import json
import pytest
from pettingllms_nb.core.parsing import FormatError, parse_actions
from pettingllms_nb.envs.web.prompts import parse_verdict


@pytest.mark.parametrize('prose', ["I do not approve this order.", "while True:\n    pass", "x" * 1_000_000 + "approve",
                                   "approve, but check the size", "rejection", "the order passed"])
def test_prose_is_not_a_verdict(prose):
    with pytest.raises(FormatError, match='no verdict'): parse_verdict(prose)


@pytest.mark.parametrize('reply, verdict', [("approve", ('approve', '')), ("Approved.", ('approve', '')),
                                            ("reject: size 10", ('reject', 'size 10')), ("reject the size", ('reject', 'the size')),
                                            ("Looks right.\napprove", ('approve', '')), ("pass", ('pass', ''))])
def test_the_declared_verdicts_read(reply, verdict):
    assert parse_verdict(reply) == verdict


@pytest.mark.parametrize('text', ['\x00\x01R\x02', '#### R\x00R', 'UU\x1bD'])
def test_control_characters_are_a_format_error_not_a_move(text):
    with pytest.raises(FormatError, match='control character'): parse_actions(text)
    assert parse_actions('#### RRD') == ['R', 'R', 'D'] and parse_actions('#### R\tR') == ['R', 'R']


def test_a_seed_given_twice_gets_its_own_ids_and_groups():
    "Issue 26: rollout(seeds=[0, 0]) gave both episodes the same root and step ids, and in tree mode one advantage group."
    from pettingllms_nb.engine.rollout import rollout
    from pettingllms_nb.envs.toy import oracle_policy
    for mode, episodes in (('independent', 6), ('tree', 3)):   # independent: sample_num rollouts of each seed given
        tr = rollout('toy_relay', oracle_policy, seeds=[0, 0, 1], mode=mode, sample_num=2)
        assert len(tr.episodes) == len({e.root_id for e in tr.episodes}) == episodes
        assert len({s.id for s in tr.steps}) == len(tr.steps)
        assert sorted(e.rollout_idx for e in tr.episodes if e.seed == 0) == list(range(episodes * 2 // 3))
    tree = rollout('toy_relay', oracle_policy, seeds=[0, 0], mode='tree', sample_num=2)
    first = [s.group_id for s in tree.steps if s.turn_idx == 0 and s.role == tree.steps[0].role]   # one group per root
    assert len(set(first)) == 2, first


@pytest.mark.parametrize('gold, pred, ok', [('0', '1 000', False), ('1000', '1 000', True), ('1000', '1,000', True),
                                            ('1000.5', '1 000.5', True), ('12345', '12{,}345', True), ('2, 3', '3, 2', True),
                                            ('1000', '1 001', False)])
def test_thousands_separators_make_one_number(gold, pred, ok):
    "Issue 26: check_answer('0', '1 000') was True and check_answer('1000', '1 000') False."
    pytest.importorskip('math_verify')
    from pettingllms_nb.envs.math.checker import check_answer
    assert check_answer(gold, pred) is ok


@pytest.mark.parametrize('gold, pred, ok', [
    ('1000.99', '1000,99', True), ('1,22', '1.22', True), ('1.22', '1,22', True), ('0,111', '0.111', True),
    ('3.14', '3{,}14', True), ('-1.5', '-1,5', True), ('1000,99', '1000.98', False),
    ('1000', '1,000', True), ('1', '1,000', False),                  # three digits after the comma: thousands first
    ('2,3', '2.3', True), ('2,3', '3,2', False),                      # no space: a decimal comma, as in math-verify
    ('2, 3', '3, 2', True), (r'\{2,3\}', '2, 3', True), ('2.3', '2, 3', False), ('1,2,3', '3, 2, 1', True),
    ('1, 2', r'\boxed{1,2}', True), ('1.2', r'\boxed{1,2}', False)])          # a box holds LaTeX: a list
def test_decimal_commas_read_as_math_verify_expression_mode(gold, pred, ok):
    "Issue 26: `1000,99` and `1,22` as bare answers were LaTeX pairs; math-verify's expression mode reads decimal commas."
    pytest.importorskip('math_verify')
    from pettingllms_nb.envs.math.checker import check_answer
    assert check_answer(gold, pred) is ok


def test_tree_rollouts_leave_no_shop_session_behind():
    "Issue 26: every discarded branch of a web_env tree rollout left its server-side session (36 after one small rollout)."
    from pettingllms_nb.engine.rollout import rollout
    from pettingllms_nb.envs.web.env import shop_app
    from pettingllms_nb.core.registry import registry
    oracle = registry.get('scripted', 'web_env.oracle')
    app = shop_app('tiny-0')
    before = len(app.sessions)
    tr = rollout('tiny_web_shop', oracle, mode='tree', sample_num=3, seeds=[0, 1], max_turns=3)
    assert len(tr.steps) > 6 and len(app.sessions) == before, len(app.sessions) - before
    rollout('tiny_web_shop', oracle, seeds=[0, 1], sample_num=2)
    assert len(app.sessions) == before


def test_a_broken_game_file_is_named(tmp_path):
    "Issue 26: a typo in an ALFWorld game file gave SimulatorError: 'the game does not load: AssertionError: ' (no file named)."
    pytest.importorskip('alfworld')
    from pettingllms_nb.envs.alfworld.data import Game, generate_solvable
    from pettingllms_nb.envs.alfworld.engine import SimulatorError
    d = generate_solvable(0).game()   # a generated task's game.tw-pddl dict
    f = tmp_path / 'game.tw-pddl'
    f.write_text(json.dumps({**d, 'pddl_problem': d['pddl_problem'].replace('(:objects', '(:objcts', 1)}))
    with pytest.raises(SimulatorError, match=f"the game {f} does not load"): Game('x', 'alfworld', path=str(f)).engine()
    (tmp_path / 'torn.tw-pddl').write_text('{"pddl_domain": ')
    with pytest.raises(SimulatorError, match='torn.tw-pddl does not read'): Game('y', 'alfworld', path=str(tmp_path / 'torn.tw-pddl')).engine()

"""Issue 26: a verdict is the declared line, not a word found in prose; control characters are not moves."""
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

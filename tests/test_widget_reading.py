"""What a person reads in the widgets and their static copies (issue 28): names that import, curves with axes, badges that
say what is true now, text that wraps at word boundaries and expands where it is cut, images shown as images."""
import re, subprocess, sys
from types import SimpleNamespace
import pytest
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.engine.trace import Step, Trace
from pettingllms_nb.envs.stateful import random_policy
from pettingllms_nb.widgets.render import PHASES, flag_badge, render_diff, render_phase, render_prompt
from pettingllms_nb.widgets.stepthrough import (StepThrough, TrainingDashboard, GroupInspector, dashboard_series, render_tree,
                                                sparkline)

RED, GREEN, NEUTRAL = '#d1242f', '#1f883d', '#57606a'
PNG = 'data:image/png;base64,' + 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk' * 3

# -- TrainingDashboard --------------------------------------------------------------------------------------------------

def test_dashboard_imports_from_the_package_and_widgets():
    from pettingllms_nb import TrainingDashboard as top
    from pettingllms_nb.widgets import TrainingDashboard as mid, StepThrough as st
    assert top is mid is TrainingDashboard and st is StepThrough
    code = "import sys, pettingllms_nb, pettingllms_nb.widgets; print('ipywidgets' in sys.modules, 'torch' in sys.modules)"
    assert subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.split() == ['False', 'False']

def test_dashboard_draws_the_losses_the_trainer_writes():
    history = [{'step': i, 'train/success_rate': 0.1 * i, 'shared/pg_loss': 1 / i, 'plan_agent/pg_loss': 0.5 / i} for i in (1, 2)]
    assert {'shared/pg_loss', 'plan_agent/pg_loss'} <= set(dashboard_series(history))
    fake = SimpleNamespace(cfg=SimpleNamespace(training=SimpleNamespace(total_training_steps=2)))
    dash = TrainingDashboard()
    for m in history: dash(fake, m)
    assert 'shared/pg_loss' in dash.html and dash.html.count('<polyline') == 3

def axis_labels(svg:str) -> list: return re.findall(r"<text class='pllm-axis'[^>]*>([^<]*)</text>", svg)

def test_curves_have_axes_with_values():
    svg = sparkline([0.062, 0.09, 0.125], xs=[10, 20, 30])
    labels = axis_labels(svg)
    assert '0.125' in labels and '0.062' in labels            # the y range, so 0.062 -> 0.125 is not mistaken for 0 -> 1
    assert 'step 10' in labels and '30' in labels             # and the steps
    assert "class='pllm-axes'" in svg

def test_a_one_point_series_is_a_visible_point():
    svg = sparkline([0.5], xs=[3])
    assert '<circle' in svg and '0.5' in ' '.join(axis_labels(svg))
    assert '<circle' not in sparkline([None, float('nan')])   # nothing to show: no dot

# -- badges -------------------------------------------------------------------------------------------------------------

def test_flag_badge_is_neutral_until_decided():
    assert GREEN in flag_badge('won', True) and RED in flag_badge('won', False)
    for b in (flag_badge('won', None), flag_badge('won', False, pending='not won yet')):
        assert RED not in b and '✘' not in b and NEUTRAL in b
    assert 'not won yet' in flag_badge('won', False, pending='not won yet')

def test_alfworld_card_does_not_say_lost_while_playing():
    from pettingllms_nb.envs.alfworld.render import alfworld_card
    playing = alfworld_card({'task': 'put a hot apple in diningtable', 'won': False})
    assert '✘ won' not in playing and 'not won yet' in playing
    assert '✔ won' in alfworld_card({'task': 't', 'won': True})

def test_web_card_outcome_says_what_is_true_now():
    from pettingllms_nb.envs.web.render import web_card
    going = web_card({'task': 'g0001', 'finished': False, 'reward': 0.0, 'progress': 0.4})
    assert '✘' not in going and RED not in going and 'in progress' in going and 'progress 40%' in going
    assert GREEN in web_card({'finished': True, 'reward': 1.0}) and '✔ finished · reward 1.00' in web_card({'finished': True, 'reward': 1.0})
    assert '✘ finished · reward 0.00' in web_card({'finished': True, 'reward': 0.0})

def test_a_won_web_episode_never_shows_red_on_its_last_step():
    from pettingllms_nb.envs.web import oracle_policy
    t = rollout('web_env', oracle_policy, seeds=[0], split='test', max_turns=14)
    assert t.success_rate() == 1.0
    for phase in PHASES:
        view = render_phase(t, len(t) - 1, phase)
        assert '✘ finished' not in view, phase
    assert '✔ finished' in render_phase(t, len(t) - 1, 'step')

# -- text ---------------------------------------------------------------------------------------------------------------

def styles(html:str, tag:str) -> list:
    "The style attribute of every `tag` in `html`, as a browser's parser reads it."
    from html.parser import HTMLParser
    found = []
    class P(HTMLParser):
        def handle_starttag(self, t, attrs):
            if t == tag: found.append(dict(attrs).get('style') or '')
    P().feed(html)
    return found

def test_prompts_wrap_at_words_in_a_monospace_font():
    html = render_prompt({'system': 'Each turn, answer the question.', 'text': '+-+-+\n|1|2|\n+-+-+'})
    pres = styles(html, 'pre')
    assert len(pres) == 2 and all('word-break:normal' in s and 'overflow-wrap:anywhere' in s and 'monospace' in s
                                  and 'max-height' in s for s in pres)   # the whole style survives its quoting
    assert 'break-all' not in html

def test_phase_buttons_show_the_whole_phase_name():
    st = StepThrough(rollout('stateful_sudoku', random_policy, seeds=[3]))
    width = st.phases.style.button_width   # 'auto': each button as wide as its name (tests/browser/test_reading.py looks)
    assert width == 'auto' or (width.endswith('em') and float(width[:-2]) >= 0.7 * max(map(len, PHASES)) + 2)

def test_stop_button_pauses_where_it_is():
    st = StepThrough(rollout('stateful_sudoku', random_policy, seeds=[3]))
    st.play.playing = True
    st.play.value = 7                                          # the animation moved on
    at = (st.step, st.phase)
    st.play.playing = False; st.play.value = st.play.min       # what the ■ button sends: pause, then back to the start
    assert (st.step, st.phase) == at and st.play.value == st.position
    st.play.value = 0                                          # a later move to the start (the slider of the play control) works
    assert (st.step, st.phase) == (0, PHASES[0])

@pytest.fixture(scope='module')
def tree(): return rollout('stateful_sudoku', random_policy, mode='tree', sample_num=3, seeds=[0], max_turns=2)

def test_group_key_shows_the_agent_whole_and_the_problem_once(tree):
    html = GroupInspector(tree).html
    cells = re.findall(r"<tr class='pllm-group'[^>]*><td[^>]*>(.*?)</td>", html)
    problem = tree.steps[0].problem_uid
    assert cells and all('chars cut' not in c and c.count(problem) == 1 for c in cells)
    assert any('tool_call_agent' in c for c in cells) and any('plan_agent' in c for c in cells)

def test_treeview_long_actions_expand():
    long = 'click(' + 'x' * 300 + ')'
    s = Step('s0', 'root', 'p', 0, 'agent', 'prompt', 'completion', action=long, reward=1.0, group_id='g')
    html = render_tree(Trace([s], roots={'root': {}}, meta={'mode': 'tree'}))
    assert '<details' in html and long in html

# -- images and tables --------------------------------------------------------------------------------------------------

def test_diff_shows_screenshots_as_images():
    html = render_diff({'screenshot': PNG, 'title': 'a'}, {'screenshot': PNG[:-4] + 'AAAA', 'title': 'b'})
    assert 'data:image' not in re.sub(r"src='[^']*'", '', html)   # no data URI as text
    assert html.count('<img') == 4 and '<details' in html         # before and after, each openable at full size

def test_web_screenshot_opens_full_size():
    from pettingllms_nb.envs.web.render import screenshot_html
    html = screenshot_html(PNG)
    assert "width='360'" in html and re.search(r"<details.*<img[^>]*max-width:none", html, re.S)

def test_table_cells_are_left_aligned():
    html = render_diff({'a': 1}, {'a': 2}) + render_tree(Trace([Step('s0', 'root', 'p', 0, 'agent', 'x', 'y', action='a', reward=1.0,
                                                                  group_id='g')], roots={'root': {}}, meta={'mode': 'tree'}))
    tds = re.findall(r'<td[^>]*>', html)
    assert tds and all('text-align:left' in td for td in tds)

def test_math_card_is_not_red_before_anyone_answered():
    from pettingllms_nb.envs.math import MathState, math_html
    fresh = math_html(MathState(problem='What is 6*7?', problem_id='1'))
    assert '✘' not in fresh and RED not in fresh
    answered = math_html(MathState(problem='What is 6*7?', problem_id='1', tool_answer='41', reasoning_answer='42'))
    assert '✘ agree' in answered and '✘ tool correct' in answered

def test_static_copies_left_align_and_wrap_every_table_of_every_card():
    "An environment's own tables (math's tool history, code's tests) read left to right in the static copy too."
    html = StepThrough(rollout('stateful_sudoku', random_policy, seeds=[3]))._repr_mimebundle_()['text/html']
    assert html.startswith('<style>') and '.pllm-copy td' in html and 'text-align: left' in html and "<div class='pllm-copy'>" in html
    assert 'overflow-wrap: anywhere' in html

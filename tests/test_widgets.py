"Headless tests of the render functions and widgets (no browser): escaping, navigation, groups, the human text box."
import math
from types import SimpleNamespace
import pytest
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.engine.trace import Step, Trace
from pettingllms_nb.engine.policies import Request
from pettingllms_nb.envs.stateful import oracle_policy, random_policy, StatefulState
from pettingllms_nb.training.advantages import group_stats, at_grpo, at_grpo_key
from pettingllms_nb.widgets.render import (PHASES, esc, render_state, render_diff, render_prompt, render_completion, render_action,
                                           render_reward, render_step_card, render_phase, board_svg, changed, show_html)
from pettingllms_nb.widgets.stepthrough import (StepThrough, TreeView, GroupInspector, HumanTextPolicy, human_widget,
                                                TrainingDashboard, render_tree, render_groups, sparkline)

EVIL = '<script>alert("x")</script>'

@pytest.fixture(scope='module')
def sudoku(): return rollout('stateful_sudoku', random_policy, seeds=[3])

@pytest.fixture(scope='module')
def tree(): return rollout('stateful_sudoku', random_policy, mode='tree', sample_num=3, seeds=[0, 1], max_turns=2)

def evil_trace():
    st = {'benchmark': 'sudoku', 'tool_code': EVIL, 'game': {'size': 4, 'puzzle': [[1, 0, 0, 0]] + [[0] * 4] * 3,
          'grid': [[1, 0, 0, 0]] + [[0] * 4] * 3, 'solution': [[1, 2, 3, 4]] * 4}}
    s = Step('s0', 'root', 'p', 0, EVIL, {'text': EVIL, 'system': EVIL}, EVIL, action=EVIL, reward=1.0,
             reward_terms={EVIL: 1.0}, state_after={**st, 'tool_output': EVIL}, group_id='g')
    bad = Step('s1', 's0', 'p', 0, EVIL, [{'role': 'user', 'content': EVIL}], EVIL, format_error=EVIL, sample_idx=1, selected=False, group_id='g')
    return Trace([s, bad], roots={'root': st}, meta={'turn_order': [EVIL], 'mode': 'tree'})

# -- renderers ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('bench,kind,mark', [('stateful_plan_path', 'plan_path', 'walker'), ('stateful_sudoku', 'sudoku', 'clue'),
                                             ('stateful_sokoban', 'sokoban', 'player')])
def test_boards(bench, kind, mark):
    tr = rollout(bench, oracle_policy, seeds=[1])
    for st in (tr.state_before(tr[0]), tr[-1].state_after, StatefulState.from_dict(tr[-1].state_after)):
        h = render_state(st, env='stateful_env')
        assert f"data-board='{kind}'" in h and f"class='{mark}'" in h and h.startswith("<div class='pllm-state' data-state='StatefulState'>")
    game = StatefulState.from_dict(tr.state_before(tr[0])).game
    assert board_svg(game) == board_svg(tr.state_before(tr[0]), 'stateful_env') != ''  # a bare game state draws too

def test_sudoku_clues_distinct_from_filled():
    tr = rollout('stateful_sudoku', oracle_policy, seeds=[0])
    before, after = render_state(tr.state_before(tr[0]), env='stateful_env'), render_state(tr[-1].state_after, env='stateful_env')
    assert "class='clue'" in before and "class='filled'" not in before
    assert "class='clue'" in after and "class='filled'" in after and after.count("class='clue'") == before.count("class='clue'")

def test_generic_state_and_diff():
    assert 'pllm-kv' in render_state({'a': 1, 'b': [1, 2]}) and 'data-board' not in render_state({'a': 1})
    assert changed({'a': 1, 'b': 2}, {'a': 1, 'b': 3, 'c': 0}) == ['b', 'c']
    d = render_diff({'a': 1, 'b': 2}, {'a': 1, 'b': 3})
    assert "pllm-changed" in d and '>b<' in d and '>a<' not in d
    assert 'no field changed' in render_diff({'a': 1}, {'a': 1})

def test_diff_of_a_real_step():
    tr = rollout('stateful_sudoku', oracle_policy, seeds=[0])
    d = render_diff(tr.state_before(tr[-1]), tr[-1].state_after, env='stateful_env')
    assert 'game.grid' in d and d.count("data-board='sudoku'") == 2

def test_step_parts(sudoku):
    s = sudoku[0]
    assert 'pllm-prompt' in render_prompt(s.prompt) and 'pllm-completion' in render_completion(s.completion)
    assert 'pllm-reward' in render_reward(s) and all(esc(k) in render_reward(s) for k in s.reward_terms)
    assert render_prompt('hi').count('pllm-prompt') == 1 and render_prompt([{'role': 'system', 'content': 'a'}, {'role': 'user', 'content': 'b'}]).count('pllm-prompt') == 2
    err = next((x for x in sudoku if x.format_error), None)
    if err is not None: assert 'format error' in render_action(err)
    ok = next(x for x in sudoku if x.format_error is None)
    assert 'pllm-action' in render_action(ok)
    for ph in PHASES: assert f"<i>{ph}</i>" in render_step_card(s, ph, sudoku.state_before(s))
    with pytest.raises(ValueError, match='allowed'): render_step_card(s, 'think')

def test_show_returns_html(sudoku):
    from pettingllms_nb.widgets import render
    assert 'pllm-card' in show_html(sudoku[0]).data and 'pllm-state' in show_html(sudoku.state_before(sudoku[0])).data
    assert render.show is show_html and 'show' not in render.__all__     # the old name still imports

def test_script_escaped_in_every_view():
    tr = evil_trace()
    views = [render_prompt(tr[0].prompt), render_prompt(tr[1].prompt), render_completion(tr[0].completion), render_action(tr[0]),
             render_action(tr[1]), render_reward(tr[0]), render_state(tr[0].state_after), render_diff(tr.roots['root'], tr[0].state_after),
             render_tree(tr), render_groups(group_stats(tr.steps, lambda s: s.role)), sparkline([1, 2], label=EVIL)]
    views += [render_step_card(s, ph, tr.state_before(s)) for s in tr for ph in PHASES]
    views += [render_phase(tr, i, ph) for i in range(len(tr)) for ph in PHASES]
    st = StepThrough(tr)
    for i in range(len(tr) * len(PHASES)):
        views.append(st.html); st.next_button.click()
    views += [TreeView(tr).html, GroupInspector(tr, key=lambda s: s.role).html]
    for v in views: assert '<script' not in v.lower(), v[:300]
    assert any('&lt;script&gt;' in v for v in views)

# -- StepThrough ----------------------------------------------------------------------------------------------------

def test_empty_trace():
    st = StepThrough(Trace())
    assert 'empty trace' in st.html and st.slider.disabled and st.next_button.disabled
    st.next_button.click(); st.prev_button.click(); st.move(3)
    assert 'empty trace' in st.html and st.position == 0

def test_one_step_trace(sudoku):
    one = Trace(sudoku.steps[:1], roots=sudoku.roots, meta=sudoku.meta)
    st = StepThrough(one)
    seen = set()
    for _ in range(len(PHASES) + 2):
        seen.add(st.html); st.next_button.click()
    assert st.step == 0 and st.phase == 'reward' and len(seen) == len(PHASES)
    assert st.slider.max == 0 and st.play.max == len(PHASES) - 1

def test_navigation_changes_html(sudoku):
    assert len(sudoku) >= 3
    st = StepThrough(sudoku)
    h = st.html
    st.next_button.click(); assert (st.step, st.phase) == (0, 'generate') and st.html != h
    h = st.html; st.phases.value = 'step'; assert st.html != h and "data-phase='step'" in st.html
    h = st.html; st.slider.value = 2; assert st.html != h and "data-step='2'" in st.html and st.play.value == 2 * len(PHASES) + 3
    st.play.value = len(PHASES) + 1; assert (st.step, st.phase) == (1, 'generate')
    st.prev_button.click(); assert (st.step, st.phase) == (1, 'update_from_env')
    st.prev_button.click(); assert (st.step, st.phase) == (0, 'reward')
    st.goto(len(sudoku) - 1, 'reward').move(1); assert st.position == len(sudoku) * len(PHASES) - 1

def test_active_agent_and_board(sudoku):
    st = StepThrough(sudoku)
    for i, s in enumerate(sudoku):
        st.goto(i, 'generate')
        assert f"pllm-active' data-agent='{s.role}'" in st.html and st.html.count("class='pllm-card") == 2
    plan = next(i for i, s in enumerate(sudoku) if s.role == 'plan_agent' and changed(sudoku.state_before(s)['game'], s.state_after['game']))
    st.goto(plan, 'update_from_model'); before = st.html
    st.next_button.click(); assert st.phase == 'step' and 'pllm-changed' in st.html
    board = lambda h: h[h.index('<svg'):h.index('</svg>')]
    assert board(before) != board(st.html)

def test_refresh_follows_growing_trace(sudoku):
    live = Trace(roots=sudoku.roots, meta=sudoku.meta)
    st = StepThrough(live)
    assert 'empty trace' in st.html
    live.steps.extend(sudoku.steps[:2]); st.refresh()
    assert st.slider.max == 1 and not st.next_button.disabled and "data-step='0'" in st.html

# -- TreeView and GroupInspector --------------------------------------------------------------------------------------

def test_treeview_marks_selected(tree):
    tv = TreeView(tree)
    kept = tree.filter(selected=True)
    assert tv.html.count("class='pllm-kept'") == len(kept) and tv.html.count("class='pllm-dropped'") == len(tree) - len(kept)
    assert tv.html.count('pllm-tree-group') == len(tree.groups())
    adv = at_grpo(tree)
    assert all(a is None or f"{a:+.3f}" in tv.html for a in adv)

def test_group_inspector_matches_group_stats(tree):
    gi = GroupInspector(tree)
    ref = group_stats(tree.steps, lambda s: at_grpo_key(s, True))
    assert [(g.key, g.rewards, g.mean, g.std, g.advantages) for g in gi.groups] == [(g.key, g.rewards, g.mean, g.std, g.advantages) for g in ref]
    for g in ref: assert f"{g.mean:+.3f}" in gi.html and f"{g.std:.3f}" in gi.html
    flat = {i: a for g in gi.groups for i, a in zip(g.indices, g.advantages)}
    assert [flat[i] for i in range(len(tree))] == list(at_grpo(tree))
    gl = GroupInspector(list(tree), normalize_std=False)
    assert gl.groups == group_stats(list(tree), lambda s: at_grpo_key(s, True), normalize_std=False)

# -- the human text box ------------------------------------------------------------------------------------------------

def test_human_text_box_answers_a_request():
    me = human_widget(timeout=2)
    req = Request('plan_agent', {'text': EVIL, 'system': ''})
    me.box.value = 'RRD'; me.submit.click()
    assert me.box.value == '' and me.ask(req) == 'RRD'
    assert '&lt;script&gt;' in me.prompt.value and '<script' not in me.prompt.value
    me.box.value = '#### [[0, 0, 2]]'; me.submit.click()
    out = me.generate([req])
    assert out[0][0].text == '#### [[0, 0, 2]]'
    with pytest.raises(TimeoutError, match='background thread'): human_widget(timeout=0.05).ask(req)

def test_human_text_box_in_a_rollout():
    me = HumanTextPolicy(timeout=5)
    me.box.value = '#### [[0, 0, 2]]'; me.submit.click()
    tr = rollout('stateful_sudoku', {'tool_call_agent': oracle_policy, 'plan_agent': me}, seeds=[0], max_turns=1)
    assert tr.filter(role='plan_agent')[0].completion == '#### [[0, 0, 2]]'

def test_human_box_answers_from_another_thread():
    import threading
    me = HumanTextPolicy(timeout=5)
    res = []
    t = threading.Thread(target=lambda: res.append(me.ask(Request('a', 'hi')))); t.start()
    me.box.value = 'ok'; me.submit.click(); t.join(5)
    assert res == ['ok']

# -- TrainingDashboard ------------------------------------------------------------------------------------------------

def test_dashboard_redraws_every_k():
    fake = SimpleNamespace(cfg=SimpleNamespace(training=SimpleNamespace(total_training_steps=7)))
    dash = TrainingDashboard(every=3)
    assert 'waiting' in dash.html
    for i in range(1, 8): dash(fake, {'step': i, 'train/success_rate': i / 7, 'train/plan_agent/reward': 0.1 * i,
                                      'shared/loss': 1 / i, 'val/success_rate': float('nan')})
    assert dash.draws == 3 and (dash.bar.value, dash.bar.max) == (7, 7)   # steps 3, 6 and the last
    for k in ('train/success_rate', 'train/plan_agent/reward', 'shared/loss'): assert k in dash.html
    assert dash.html.count('<polyline') == 3 and 'step 7/7' in dash.status.value

def test_sparkline_edge_cases():
    assert '<polyline' not in sparkline([]) and '—' in sparkline([])
    assert '<polyline' not in sparkline([1.0]) and '<polyline' in sparkline([1.0, None, math.nan, 2.0])
    assert '<polyline' in sparkline([1.0, 1.0])

def test_import_stays_light():
    import subprocess, sys
    code = "import sys, pettingllms_nb, pettingllms_nb.widgets.render, pettingllms_nb.widgets.stepthrough; print('ipywidgets' in sys.modules)"
    assert subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip() == 'False'

# -- math and code states -----------------------------------------------------------------------------------------------

from pettingllms_nb.engine.rollout import arollout
from pettingllms_nb.envs.math import MathState, math_html     # each environment draws its own card
from pettingllms_nb.envs.code import code_html
from pettingllms_nb.widgets.render import verdict_badge, flag_badge, badge, as_dict, VERDICT_COLOURS

def test_the_cards_old_home_still_imports():
    from pettingllms_nb.widgets import render
    from pettingllms_nb.widgets.render import math_html as old_math, code_html as old_code
    assert (old_math, old_code) == (math_html, code_html) and render.code_html is code_html
    with pytest.raises(AttributeError, match="no attribute 'code_card'"): render.code_card

def math_state(**kw):
    return MathState(**{'problem': f'What is 6*7? {EVIL}', 'source': 'demo', 'problem_id': '1', 'tool_code': f'print(42)  # {EVIL}',
                        'tool_verdict': 'OK', 'tool_output': f'42\n{EVIL}', 'tool_answer': '42', 'reasoning_response': f'so {EVIL} \\boxed{{42}}',
                        'reasoning_answer': '42', 'agree': True, 'tool_correct': True, 'reasoning_correct': False,
                        'tool_history': [{'code': f'while 1: pass  # {EVIL}', 'verdict': 'TLE', 'output': 'ERROR (TLE)', 'answer': None},
                                         {'code': 'print(42)', 'verdict': 'OK', 'output': '42', 'answer': '42'}],
                        'reasoning_history': [{'response': '\\boxed{41}', 'answer': f'41{EVIL}'}, {'response': '\\boxed{42}', 'answer': '42'}], **kw})

def code_state(**kw):
    return {'problem': f'Add two numbers. {EVIL}', 'source': 'demo', 'problem_id': '7', 'style': 'stdio', 'fn_name': '', 'starter_code': '',
            'code': f'print(sum(map(int, input().split())))  # {EVIL}',
            'code_history': [{'turn': 0, 'code': f'print(0) # {EVIL}', 'gen_pass_rate': 0.0, 'gt_pass_rate': 0.25},
                             {'turn': 1, 'code': 'print(3)', 'gen_pass_rate': 0.5, 'gt_pass_rate': 0.5}],
            'tests': [{'input': '1 2', 'output': '3'}, {'input': EVIL, 'output': EVIL}],
            'invalid_tests': [{'input': f'in {EVIL}', 'output': f'out {EVIL}', 'why': f'reference prints 4 {EVIL}'}],
            'test_results': [{'input': '1 2', 'expected': '3', 'got': '3', 'verdict': 'AC'},
                             {'input': EVIL, 'expected': EVIL, 'got': f'Traceback {EVIL}', 'verdict': 'RE'}],
            'gen_pass_rate': 0.5, 'gt_verdicts': ['AC', 'WA', 'TLE', 'MLE', 'OLE', 'RE', 'CE', 'IE'], 'gt_pass_rate': 0.125,
            'tests_agree_rate': 1.0, 'single': False, **kw}

def test_math_view():
    ms = math_state()
    h = math_html(ms)
    assert '<script' not in h.lower() and h.count('&lt;script&gt;') >= 6   # problem, code, output, response, history code, answer
    assert h == math_html(ms.to_dict()) and "data-verdict='OK'" in h and "data-verdict='TLE'" in h
    assert '✔ agree' in h and '✔ tool correct' in h and '✘ reasoning correct' in h
    assert "class='pllm-code'" in h and h.count('<tr>') == 2 + 1                        # two turns, one header row
    assert 'no program yet' in math_html(MathState(problem='1+1?')) and 'no response yet' in math_html(MathState(problem='1+1?'))
    assert "pllm-section pllm-changed" in math_html(ms, highlight=['tool_verdict']) and 'pllm-changed' not in h
    for st in (ms, ms.to_dict()):
        assert render_state(st, env='math_env').startswith("<div class='pllm-state' data-state='MathState'><div class='pllm-math'>")

def test_code_view():
    cs = code_state()
    h = code_html(cs)
    assert '<script' not in h.lower() and h.count('&lt;script&gt;') >= 8   # problem, code, test input/expected/got, invalid, why, history
    assert [h.count(f"data-verdict='{v}'") for v in ('AC', 'RE', 'WA', 'TLE', 'INVALID', 'IE')] == [2, 2, 1, 1, 1, 1]
    assert 'hidden tests (shown to the viewer only' in h and 'passed 12% of 8' in h and 'reference prints 4' in h
    assert h.count("class='pllm-test'") == 2 and 'the program passes 50%' in h and 'stdin → stdout' in h
    call = code_html(code_state(style='call', fn_name='add', code=None, test_results=[], gen_pass_rate=None, gt_verdicts=[], code_history=[]))
    assert 'function add' in call and 'no program yet' in call and 'not run yet' in call and call.count("class='pllm-test'") == 2
    assert 'no valid tests yet' in code_html(code_state(tests=[], test_results=[]))
    assert 'pllm-changed' in code_html(cs, highlight=['gt_verdicts']) and 'pllm-changed' not in h
    assert "data-state='CodeState'><div class='pllm-code-state'>" in render_state(cs, env='code_env')
    more = code_html(code_state(test_results=[{'input': '1', 'expected': '2', 'got': '1', 'verdict': 'WA', 'message': f'differs {EVIL}'}],
                                public_pass_rate=1.0, hidden_pass_rate=0.0, infra_errors=2))    # fields the real CodeState adds
    assert "title='differs &lt;script&gt;" in more and 'public 100%, hidden 0%' in more and '2 sandbox errors' in more
    assert '<script' not in more.lower()

def test_verdict_colours():
    colour = lambda v: verdict_badge(v).split('background:')[1].split(';')[0]
    assert colour('AC') == colour('ok') == '#1f883d' and colour('WA') == '#d1242f'
    assert colour('TLE') == colour('MLE') == colour('OLE') == '#e67700' and colour('RE') == colour('CE') == '#82071e'
    assert colour('INVALID') == '#8c959f' and colour('IE') == colour('worker_error') == '#8250df'
    assert 'not run' in verdict_badge(None) and '&lt;script&gt;' in verdict_badge(EVIL) and '<script' not in verdict_badge(EVIL)
    assert '✔ x' in flag_badge('x', True) and '✘ x' in flag_badge('x', 0) and '<script' not in badge(EVIL, title=EVIL)

def test_stateful_state_keeps_its_board():
    tr = rollout('stateful_sudoku', oracle_policy, seeds=[0])
    assert "data-board='sudoku'" in render_state(tr[-1].state_after, env=tr.meta['env'])
    assert 'data-board' not in render_state(tr[-1].state_after)   # a dict alone: no guessing from its keys

def test_math_and_code_in_stepthrough():
    before = math_state(tool_code=None, tool_verdict=None, tool_output=None, tool_answer=None).to_dict()
    s = Step('s0', 'root', 'p', 0, 'tool_generator', {'text': EVIL}, EVIL, action=EVIL, state_after=math_state().to_dict())
    c = Step('c0', 'croot', 'q', 0, 'code_generator', {'text': EVIL}, EVIL, state_after=code_state())
    mt = Trace([s], roots={'root': before}, meta={'env': 'math_env', 'turn_order': ['tool_generator']})
    ct = Trace([c], roots={'croot': code_state(code=None)}, meta={'env': 'code_env', 'turn_order': ['code_generator']})
    st = StepThrough(mt, phase='step')
    assert "data-state='MathState'" in st.html and 'pllm-section pllm-changed' in st.html
    assert "data-state='CodeState'" in StepThrough(ct, phase='step').html   # each trace's env draws its states
    for tr in (mt, ct):
        st = StepThrough(tr)
        for i in range(len(tr) * len(PHASES)):
            st.goto(*divmod(i, len(PHASES))); assert '<script' not in st.html.lower()

# -- following a live rollout -------------------------------------------------------------------------------------------

def test_follow_a_live_rollout_and_step_away():
    live = Trace()
    st = StepThrough(live, follow=True, phase='step')
    assert 'waiting for its first step' in st.html and st.new_steps == 0
    seen = []
    def spy(req, rng):
        if len(seen) == 3: st.prev_button.click()            # the person steps back (to the previous phase of step 2)
        if len(seen) == 4: st.goto(0, 'generate')
        seen.append((len(live), st.step, st.new_steps, st.live_button.layout.display, st.html))
        return random_policy(req, rng)
    out = rollout('stateful_sudoku', spy, seeds=[3], trace=live)
    assert out is live and len(live) >= 6 and live.episodes
    for n, step, new, shown, h in seen[:3]:                   # following: always at the newest step
        assert step == max(n - 1, 0) and new == 0 and shown == 'none'
        assert (f"data-step='{n - 1}' data-phase='step'" in h) if n else 'waiting' in h
    assert seen[3][1:3] == (2, 0)                             # a phase back on the last step: still the live end
    for k, (n, step, new, shown, h) in enumerate(seen[4:]):   # stepped away: the view stays, the new steps are counted
        assert (step, new, shown) == (0, k, 'none' if k == 0 else '') and "data-step='0' data-phase='generate'" in h
    assert st.new_steps == len(live) - 4 and f"new steps: {len(live) - 4}" in st.live_button.description
    st.live_button.click()
    assert (st.step, st.phase, st.new_steps, st.live_button.layout.display) == (len(live) - 1, 'generate', 0, 'none')
    assert st.slider.max == len(live) - 1 and f"data-step='{len(live) - 1}'" in st.html

def test_follow_in_the_event_loop():
    import asyncio
    async def main():
        live = Trace()
        st = StepThrough(live, follow=True)
        task = asyncio.ensure_future(arollout('stateful_plan_path', oracle_policy, seeds=[1, 2], trace=live))
        sizes = []
        while not task.done():                                # the notebook's loop runs other work between turns
            await asyncio.sleep(0)
            sizes.append(len(live))
            if len(live): assert f"data-step='{len(live) - 1}'" in st.html
        await task
        return live, st, sizes
    live, st, sizes = asyncio.run(main())
    assert any(0 < n < len(live) for n in sizes)              # it was seen mid-rollout, not only at the end
    assert st.step == len(live) - 1 and f"data-step='{len(live) - 1}'" in st.html

def test_follow_starts_at_the_newest_step_and_needs_a_trace(sudoku):
    assert StepThrough(sudoku, follow=True).step == len(sudoku) - 1 and StepThrough(sudoku).step == 0
    with pytest.raises(TypeError, match='needs a Trace'): StepThrough(list(sudoku), follow=True)

def test_a_broken_view_never_stops_a_rollout(caplog):
    live = Trace()
    live.on_step.append(lambda s: 1 / 0)
    tr = rollout('stateful_plan_path', oracle_policy, seeds=[1], trace=live)
    assert tr is live and len(live) and live.episodes and 'on_step callback' in caplog.text


# -- static fallback: exported pages and GitHub show what the widget shows ----------------------------------------

def test_every_widget_carries_a_static_html_copy(sudoku, tree):
    "Beside the live view, each widget's mimebundle has `text/html` with the cards, the board or the table it shows."
    from types import SimpleNamespace
    fake = SimpleNamespace(cfg=SimpleNamespace(training=SimpleNamespace(total_training_steps=2)))
    dash = TrainingDashboard()
    for i in (1, 2): dash(fake, {'step': i, 'train/success_rate': i / 2})
    human = HumanTextPolicy(timeout=0.01)
    with pytest.raises(TimeoutError): human.ask(Request('plan_agent', 'move the walker', turn_idx=0))
    st = StepThrough(sudoku).goto(1, 'step')
    widgets = {'StepThrough': (st, ["data-board='sudoku'", "data-step='1'", f'step 2 of {len(sudoku)}, phase step']),
               'TreeView': (TreeView(tree), ['✔ kept', 'advantage']),
               'GroupInspector': (GroupInspector(tree), ['groups</b>', 'advantages']),
               'HumanTextPolicy': (human, ['move the walker']),
               'TrainingDashboard': (dash, ['train/success_rate: 1.000', 'step 2/2'])}
    for name, (w, marks) in widgets.items():
        b = w._repr_mimebundle_()
        assert 'application/vnd.jupyter.widget-view+json' in b, name
        assert all(m in b['text/html'] for m in marks), (name, [m for m in marks if m not in b['text/html']])
    test_html = StepThrough(sudoku)._repr_mimebundle_()['text/html']
    assert test_html != widgets['StepThrough'][0]._repr_mimebundle_()['text/html']   # it follows the position
    assert StepThrough(Trace())._repr_mimebundle_()['text/html'].count('no steps') == 1


def test_trace_table_groups_rows_by_episode_with_seed_and_sample():
    "Concurrent episodes arrive interleaved; the table shows them one after the other, under their seed, with samples."
    import re
    tr = rollout('stateful_sudoku', random_policy, seeds=[4, 7], sample_num=2, max_turns=2)
    num = tr.episode_numbers()
    assert [num[s.id][0] for s in tr] != sorted(num[s.id][0] for s in tr)   # recorded interleaved
    h = tr._repr_html_(max_rows=len(tr))
    heads = re.findall(r"<b>episode (\d+)</b> · seed (\d+)", h)
    test_eq = lambda a, b: (a == b) or pytest.fail(f"{a!r} != {b!r}")
    test_eq(heads, [(str(k), str(e.seed)) for k, e in enumerate(tr.episodes)])
    test_eq(sorted(e.seed for e in tr.episodes), [4, 4, 7, 7])
    cells = re.findall(r"<tr><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>", h)   # episode, seed, sample
    test_eq(len(cells), len(tr))
    test_eq([int(k) for k, _, _ in cells], sorted(int(k) for k, _, _ in cells))   # grouped by episode
    for k, seed, _ in cells: test_eq(int(seed), tr.episodes[int(k)].seed)
    test_eq({x for *_, x in cells}, {'0', '1'})                                   # both samples of each seed
    k, ep = tr.episode_of(tr[-1])
    assert f"episode {k} · seed {ep.seed} · sample {tr[-1].rollout_idx} · " in StepThrough(tr).goto(len(tr) - 1).html

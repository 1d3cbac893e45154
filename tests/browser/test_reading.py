"""Real-browser test of what a person reads (issue 28): a StepThrough over each environment in JupyterLab, in Chromium.

Per environment it checks what a reader would: prompts wrap at word boundaries (no `word-break: break-all` on text),
the phase buttons show whole names, no table cell shows a `data:` URI as text, a screenshot opens at its natural size,
and a won episode's badges never read as a failure. Screenshots of each card go to $PLLM_SCREENSHOT_DIR (default: a temp
dir). Skips like tests/browser/test_browser.py without chromium, playwright or jupyterlab."""
import os, tempfile
from pathlib import Path
import pytest
from labtools import CHROMIUM, FLAGS, jupyter_lab, run_all, write_notebook

pytestmark = pytest.mark.slow
pytest.importorskip('playwright.sync_api', reason='pip install playwright (scripts/browser-test.sh)')
pytest.importorskip('jupyterlab', reason='pip install jupyterlab (the dev extra)')
if not os.path.exists(CHROMIUM): pytest.skip(f'no chromium at {CHROMIUM} (apt-get install -y chromium)', allow_module_level=True)

SETUP = """import pettingllms_nb as p
from pettingllms_nb import rollout, StepThrough
from pettingllms_nb.core.registry import registry
def last_step(env, policy, **kw):   # the episode's last step, as it opens: its update_from_env
    tr = rollout(env, policy, seeds=[0], **kw)
    assert tr.success_rate() == 1.0, env
    return StepThrough(tr, step=len(tr) - 1)"""
ENVS = {'stateful': "last_step('stateful_sudoku', p.stateful_oracle)",
        'math': "last_step('math_env', p.math_oracle)",
        'code': "last_step('code_env', p.code_oracle, split='test')",
        'search': "last_step('search_env', p.search_oracle, split='test')",
        'alfworld': "last_step('alfworld_env', registry.scripted('alfworld_env', 'oracle'), split='test')",
        'web': "last_step('web_env', registry.scripted('web_env', 'oracle'), split='test', backend='browser', max_turns=12)"}
PLAYED = "StepThrough(rollout('stateful_sudoku', p.stateful_oracle, seeds=[0]), interval=300)"   # ▶ then ■ from the start

# Every `pre` (prompts, completions, observations) and its computed word-break; every table cell's text; badges.
READ = """(out) => ({
  pres: [...out.querySelectorAll('.pllm-stepthrough pre')].map(e => getComputedStyle(e).wordBreak),
  cells: [...out.querySelectorAll('.pllm-stepthrough td')].map(e => e.textContent),
  badges: [...out.querySelectorAll('.pllm-badge')].map(e => e.textContent),
  cut: [...out.querySelectorAll('.widget-toggle-button')].filter(b => b.scrollWidth > b.clientWidth + 1).map(b => b.textContent),
})"""

@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp('lab')
    write_notebook(root / 'reading.ipynb', [SETUP, *ENVS.values(), PLAYED])
    with jupyter_lab(root) as (url, token): yield url, token, root

def test_each_environment_reads_well(lab):
    from playwright.sync_api import sync_playwright
    url, token, root = lab
    shots = Path(os.environ.get('PLLM_SCREENSHOT_DIR') or tempfile.mkdtemp(prefix='pllm-reading-'))
    shots.mkdir(parents=True, exist_ok=True)
    seen = {}
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(root / '.chromium-profile'), executable_path=CHROMIUM, headless=True,
                                                   args=FLAGS, viewport={'width': 1200, 'height': 2400})   # tall: a whole card in view
        try:
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            run_all(page, url, token, 'reading.ipynb')
            page.wait_for_function(f"() => document.querySelectorAll('.pllm-stepthrough-widget').length === {len(ENVS) + 1}",
                                   timeout=240_000)
            outputs = page.locator('.jp-OutputArea-output:has(.pllm-stepthrough-widget)')
            for i, name in enumerate(ENVS):
                out = outputs.nth(i)
                out.scroll_into_view_if_needed()
                seen[name] = {'open': out.evaluate(READ)}
                out.locator('.pllm-stepthrough-widget').screenshot(path=str(shots / f'stepthrough_{name}.png'))
                out.get_by_role('button', name='step', exact=True).click()    # the step phase: the state before -> after
                page.wait_for_timeout(300)
                seen[name]['step'] = out.evaluate(READ)
                if name == 'web':
                    full = out.locator('details.pllm-full-size')
                    if full.count():
                        full.first.locator('summary').click()
                        seen[name]['full'] = full.first.locator('img').evaluate("i => [i.naturalWidth, i.getBoundingClientRect().width]")
            played = outputs.nth(len(ENVS))
            played.scroll_into_view_if_needed()
            buttons = played.locator('.widget-play button')
            buttons.nth(0).click(); page.wait_for_timeout(1200)           # ▶: a few positions on
            buttons.nth(1).click(); page.wait_for_timeout(800)            # ■
            view = played.locator('.pllm-stepthrough')
            stopped_at = (view.get_attribute('data-step'), view.get_attribute('data-phase'))
        finally: ctx.close()
    print(f'screenshots: {shots}')
    wrong = []
    for name, views in seen.items():
        for phase in ('open', 'step'):
            v = views[phase]
            if not v['pres'] or 'break-all' in v['pres']: wrong.append((name, phase, 'word-break', sorted(set(v['pres']))))
            if [c for c in v['cells'] if 'data:' in c]: wrong.append((name, phase, 'a data: URI as text'))
            if bad := [b for b in v['badges'] if b.startswith('✘')]: wrong.append((name, phase, 'badges', bad))  # each was won
            if v['cut']: wrong.append((name, phase, 'buttons cut', v['cut']))
    assert not wrong, wrong
    assert stopped_at != ('0', 'update_from_env'), 'the ■ button went back to the start instead of pausing'
    assert 'full' in seen['web'], 'the web card has no way to open its screenshot at full size'
    natural, shown = seen['web']['full']
    assert natural > 360 and shown >= natural, (natural, shown)   # full size: the screenshot at its natural size

"""Real-browser test: JupyterLab on loopback, a notebook with a two-agent Sudoku StepThrough, run in headless Chromium.

Skips cleanly unless Debian's chromium (or $CHROMIUM), the `playwright` package and `jupyterlab` are installed.
Run it with `scripts/browser-test.sh`; the screenshot goes to $PLLM_SCREENSHOT (default: a temp dir)."""
import os, tempfile
from pathlib import Path
import pytest
from labtools import CHROMIUM, FLAGS, jupyter_lab, run_all, write_notebook

# One cell a newcomer can paste: a two-agent Sudoku rollout (scripted oracle), stepped through from the plan agent's
# parsed action, so that *next* applies it to the board.
CELL = """from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.envs.stateful import oracle_policy
from pettingllms_nb.widgets.stepthrough import StepThrough
StepThrough(rollout('stateful_sudoku', oracle_policy, seeds=[0]), step=1, phase='update_from_model')"""

pytestmark = pytest.mark.slow
pytest.importorskip('playwright.sync_api', reason='pip install playwright (scripts/browser-test.sh)')
pytest.importorskip('jupyterlab', reason='pip install jupyterlab (the dev extra)')
if not os.path.exists(CHROMIUM): pytest.skip(f'no chromium at {CHROMIUM} (apt-get install -y chromium)', allow_module_level=True)

@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp('lab')
    write_notebook(root / 'stepthrough.ipynb', [CELL])
    with jupyter_lab(root) as (url, token): yield url, token, root

def _board(page) -> str:
    "The shared-state board of the StepThrough, as rendered in the page."
    return page.locator('.pllm-stepthrough .pllm-shared svg.pllm-board').first.inner_html()

def test_stepthrough_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright
    url, token, root = lab
    shot = Path(os.environ.get('PLLM_SCREENSHOT') or Path(tempfile.mkdtemp(prefix='pllm-browser-')) / 'stepthrough.png')
    shot.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(root / '.chromium-profile'), executable_path=CHROMIUM, headless=True,
                                                   args=FLAGS, viewport={'width': 1400, 'height': 1000})
        try:
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            run_all(page, url, token, 'stepthrough.ipynb')
            page.wait_for_selector(".pllm-stepthrough[data-phase='update_from_model']", timeout=60_000)
            before = _board(page)
            page.get_by_role('button', name='next ▶').click()
            page.wait_for_selector(".pllm-stepthrough[data-phase='step']", timeout=30_000)
            after = _board(page)
            page.screenshot(path=str(shot), full_page=True)
        finally: ctx.close()
    print(f'screenshot: {shot}')
    assert before != after, 'clicking next did not change the rendered board'
    assert 'class="filled"' not in before and 'class="filled"' in after   # the DOM serialises with double quotes
    assert shot.stat().st_size > 10_000

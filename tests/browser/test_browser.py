"""Real-browser test: JupyterLab on loopback, a notebook with a two-agent Sudoku StepThrough, run in headless Chromium.

Skips cleanly unless Debian's chromium (or $CHROMIUM), the `playwright` package and `jupyterlab` are installed.
Run it with `scripts/browser-test.sh`; the screenshot goes to $PLLM_SCREENSHOT (default: a temp dir)."""
import json, os, shutil, socket, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path
import pytest

CHROMIUM = os.environ.get('CHROMIUM') or shutil.which('chromium') or '/usr/bin/chromium'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--disable-quic']
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

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def _notebook(path:Path):
    nb = {'cells': [{'cell_type': 'code', 'execution_count': None, 'id': 'stepthrough', 'metadata': {}, 'outputs': [], 'source': CELL}],
          'metadata': {'kernelspec': {'display_name': 'Python 3', 'language': 'python', 'name': 'python3'}},
          'nbformat': 4, 'nbformat_minor': 5}
    path.write_text(json.dumps(nb))

@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp('lab')
    _notebook(root / 'stepthrough.ipynb')
    port, token = _free_port(), 'pllm-browser-test'
    # no "get notified about Jupyter news?" toast over the screenshot
    (root / '.cfg' / 'labconfig').mkdir(parents=True)
    (root / '.cfg' / 'labconfig' / 'page_config.json').write_text(json.dumps({'disabledExtensions': {'@jupyterlab/apputils-extension:announcements': True}}))
    env = {**os.environ, 'JUPYTER_CONFIG_DIR': str(root / '.cfg'), 'JUPYTER_RUNTIME_DIR': str(root / '.rt')}
    cmd = [sys.executable, '-m', 'jupyterlab', '--no-browser', '--ip=127.0.0.1', f'--port={port}', f'--ServerApp.root_dir={root}',
           f'--IdentityProvider.token={token}', '--LabApp.expose_app_in_browser=True', '--LabApp.news_url=None',
           '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate', '--LabApp.extension_manager=readonly']
    if hasattr(os, 'geteuid') and os.geteuid() == 0: cmd.append('--allow-root')   # CI containers run as root
    log = open(root / 'lab.log', 'w')
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f'http://127.0.0.1:{port}'
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f'{url}/api/status?token={token}', timeout=1); break
            except OSError: time.sleep(0.5)
            if proc.poll() is not None: break
        else: pytest.fail(f'JupyterLab did not start; see {root / "lab.log"}')
        if proc.poll() is not None: pytest.fail(f'JupyterLab exited: {(root / "lab.log").read_text()[-2000:]}')
        yield url, token, root
    finally:
        proc.terminate()
        try: proc.wait(10)
        except subprocess.TimeoutExpired: proc.kill()
        log.close()

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
            page.goto(f'{url}/lab/tree/stepthrough.ipynb?token={token}', timeout=60_000)
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell && window.jupyterapp.shell.currentWidget", timeout=60_000)
            page.wait_for_selector('.jp-Notebook .jp-Cell', timeout=60_000)
            # wait for the kernel, then run every cell through JupyterLab's own command
            page.wait_for_function("() => { const w = window.jupyterapp.shell.currentWidget;"
                                   " return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel"
                                   " && w.sessionContext.session.kernel.status === 'idle'; }", timeout=60_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
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

"""What the real-browser tests share: JupyterLab on loopback over a folder of notebooks, and Run All in headless Chromium."""
import contextlib, json, os, shutil, socket, subprocess, sys, time, urllib.request
from pathlib import Path
import pytest

CHROMIUM = os.environ.get('CHROMIUM') or shutil.which('chromium') or '/usr/bin/chromium'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--disable-quic']

def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def write_notebook(path:Path, cells:list):
    "A notebook of `cells` (code sources), no outputs."
    nb = {'cells': [{'cell_type': 'code', 'execution_count': None, 'id': f'c{i}', 'metadata': {}, 'outputs': [], 'source': s}
                    for i, s in enumerate(cells)],
          'metadata': {'kernelspec': {'display_name': 'Python 3', 'language': 'python', 'name': 'python3'}},
          'nbformat': 4, 'nbformat_minor': 5}
    path.write_text(json.dumps(nb))

@contextlib.contextmanager
def jupyter_lab(root:Path):
    "JupyterLab serving `root`; yields (url, token)."
    port, token = free_port(), 'pllm-browser-test'
    # no "get notified about Jupyter news?" toast over the screenshot
    (root / '.cfg' / 'labconfig').mkdir(parents=True, exist_ok=True)
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
        yield url, token
    finally:
        proc.terminate()
        try: proc.wait(10)
        except subprocess.TimeoutExpired: proc.kill()
        log.close()

def run_all(page, url:str, token:str, name:str):
    "Open notebook `name` in JupyterLab, wait for its kernel, and Run All through JupyterLab's own command."
    page.goto(f'{url}/lab/tree/{name}?token={token}', timeout=60_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell && window.jupyterapp.shell.currentWidget", timeout=60_000)
    page.wait_for_selector('.jp-Notebook .jp-Cell', timeout=60_000)
    page.wait_for_function("() => { const w = window.jupyterapp.shell.currentWidget;"
                           " return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel"
                           " && w.sessionContext.session.kernel.status === 'idle'; }", timeout=60_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

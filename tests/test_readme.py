"""The README's snippets run as written, each in a fresh Jupyter kernel, offline; a bash test for `scripts/venv.sh`.

Every ```python block of README.md becomes a one-cell notebook run by scripts/execute_notebooks.py (nbclient, a real
kernel, `HF_HUB_OFFLINE=1`) in an empty folder. A block preceded by `<!-- readme-test: slow -->` (a long run: its
text says how long) runs only in the full run. Each output stays short: a bare value at the end of a cell is what a
reader sees.
"""
import json, os, re, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r'(<!-- readme-test: (?P<mark>\w+) -->\n)?```python\n(?P<code>.*?)```', re.S)


def blocks() -> list:
    "(line, code, slow) of each python block of the README."
    text = (ROOT / 'README.md').read_text()
    return [(text[:m.start()].count('\n') + 1, m['code'], m['mark'] == 'slow') for m in BLOCK.finditer(text)]


def run_blocks(tmp_path, chosen):
    paths = []
    for line, code, _ in chosen:
        nb = {'cells': [{'cell_type': 'code', 'metadata': {}, 'outputs': [], 'execution_count': None, 'source': code}],
              'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
        (tmp_path / f'readme_line_{line}').mkdir()
        paths.append(tmp_path / f'readme_line_{line}' / 'snippet.ipynb')
        paths[-1].write_text(json.dumps(nb))
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    env.pop('HF_HUB_OFFLINE', None)   # the runner sets it for the kernel
    r = subprocess.run([sys.executable, str(ROOT / 'scripts' / 'execute_notebooks.py'), '--save', '--workers', '2',
                        *map(str, paths)], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr[-20000:]
    for (line, _, _), p in zip(chosen, paths):
        for o in json.loads(p.read_text())['cells'][0]['outputs']:
            shown = ''.join(o.get('text', '')) + ''.join(o.get('data', {}).get('text/plain', ''))
            assert len(shown) < 5000, f"README line {line}: an output of {len(shown)} characters: {shown[:300]}..."


def test_readme_has_its_snippets():
    found = blocks()
    assert len(found) >= 3 and any(slow for *_, slow in found), found
    assert all('my_policy =' in code for _, code, _ in found if 'policies=my_policy' in code)


def test_readme_snippets_run(tmp_path):
    run_blocks(tmp_path, [b for b in blocks() if not b[2]])


@pytest.mark.slow
def test_readme_long_snippets_run(tmp_path):
    run_blocks(tmp_path, [b for b in blocks() if b[2]])


VENV_PROBE = r'''
{setup}
before="$(set +o; shopt -p)"
source scripts/venv.sh dev; rc=$?
after="$(set +o; shopt -p)"
[ "$before" = "$after" ] && echo "options kept" || diff <(echo "$before") <(echo "$after")
echo "rc=$rc shell still open"
'''


@pytest.mark.parametrize('setup', ['set +euo pipefail', 'set -e', 'set -u -o pipefail'])
def test_venv_helper_keeps_the_callers_shell_options(tmp_path, setup):
    "Sourcing the venv helper (nothing to install: its stamp is current) leaves `set -e/-u/-o pipefail` as they were."
    venv = tmp_path / 'venv'
    (venv / 'bin').mkdir(parents=True)
    (venv / 'bin' / 'python').symlink_to(sys.executable)
    want = subprocess.run(['bash', '-c', 'cat pyproject.toml | sha256sum | cut -c1-16'], cwd=ROOT, text=True,
                          capture_output=True, check=True).stdout.strip()
    (venv / '.pettingllms-nb-stamp').write_text(f"{want} dev torch==2.13.0\n")
    r = subprocess.run(['bash', '-c', VENV_PROBE.format(setup=setup)], cwd=ROOT, text=True, capture_output=True,
                       env={**os.environ, 'VENV': str(venv)})
    assert 'options kept' in r.stdout and 'rc=0 shell still open' in r.stdout, r.stdout + r.stderr


def test_venv_helper_failure_returns_instead_of_closing_the_shell(tmp_path):
    "A failed build returns its status to the caller's shell (which stays open), options unchanged."
    r = subprocess.run(['bash', '-c', VENV_PROBE.format(setup='set +e')], cwd=ROOT, text=True, capture_output=True,
                       env={**os.environ, 'VENV': str(tmp_path / 'nothing'), 'PYTHON': '/bin/false'})
    assert 'options kept' in r.stdout and 'shell still open' in r.stdout and 'rc=0' not in r.stdout, r.stdout + r.stderr

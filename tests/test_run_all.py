"""Every tutorial survives Jupyter's "Run All" in a real kernel (nbclient), on this CPU machine, with no network.

scripts/execute_notebooks.py runs each notebook top to bottom in a fresh kernel with `HF_HUB_OFFLINE=1`: every cell
runs, `#| gpu` ones included (they guard themselves with `pettingllms_nb.models.hub.gpu_ready`). The smoke run leaves
out the cells flagged `#| slow`; the full run (marked slow) runs every cell. scripts/test.sh runs the tutorials only
here (not also through nbdev-test), so each runs once per test run.
"""
import json, os, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / 'scripts' / 'execute_notebooks.py'
TUTORIALS = sorted(p for p in (ROOT / 'tutorials').glob('*.ipynb') if not p.name.startswith('_'))


def run_all(paths, *skip, strict=True, timeout=600):
    "Run `paths` through the runner (two at a time; our own deprecation warnings are errors); returns (status, report)."
    cmd = [sys.executable, str(RUNNER), '--workers', os.environ.get('NB_WORKERS', '2'), '--timeout', str(timeout)]
    cmd += ['--strict'] * strict
    cmd += [x for f in skip for x in ('--skip', f)] + [str(p) for p in paths]
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')]))}
    env.pop('HF_HUB_OFFLINE', None)   # the runner sets it for the kernels, as a reader's machine without network
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    return r.returncode, r.stdout + r.stderr


def test_tutorials_run_all_smoke(request):
    "Each tutorial runs top to bottom in a real kernel, `#| slow` cells left out (`#| gpu` cells run and guard)."
    if any(i.name == 'test_tutorials_run_all' for i in request.session.items):
        pytest.skip('the full run (test_tutorials_run_all, every cell) is selected too and covers this one')
    rc, out = run_all(TUTORIALS, 'slow')
    assert rc == 0, out[-20000:]
    assert f"{len(TUTORIALS)} of {len(TUTORIALS)} notebooks ran" in out, out[-4000:]


@pytest.mark.slow
def test_tutorials_run_all():
    "Each tutorial runs top to bottom in a real kernel, every cell."
    # The `#| slow` training cells take 5-11 minutes each when two run beside pytest on a two-core CI machine
    # (11_search_env's 40-step fit took 626 s there), so a cell here may take 30 minutes before it counts as hung.
    rc, out = run_all(TUTORIALS, timeout=1800)
    assert rc == 0, out[-20000:]
    assert f"{len(TUTORIALS)} of {len(TUTORIALS)} notebooks ran" in out, out[-4000:]


def test_strict_runs_fail_on_our_own_deprecation_warnings(tmp_path):
    "With `--strict` (what the tutorial runs use), a cell calling one of our deprecated names fails; others' do not."
    def nb(src): return {'cells': [{'cell_type': 'code', 'metadata': {}, 'outputs': [], 'execution_count': None,
                                    'source': src}], 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
    old = tmp_path / 'old.ipynb'
    old.write_text(json.dumps(nb("from pettingllms_nb.engine.rollout import rollout\n"
                                  "from pettingllms_nb.envs.toy import oracle_policy\n"
                                  "rollout('toy_relay', oracle_policy, n=2, seeds=[0])")))
    other = tmp_path / 'other.ipynb'
    other.write_text(json.dumps(nb("import warnings\nwarnings.warn('this API is deprecated and will be removed', DeprecationWarning)")))
    rc, out = run_all([old])
    assert rc == 1 and 'rollout(n=...) is deprecated; use sample_num=2' in out, out[-3000:]
    assert run_all([old], strict=False)[0] == 0 and run_all([other])[0] == 0


def test_gpu_cells_guard_themselves(tmp_path):
    "A `#| gpu` cell on a machine without a GPU or the weights prints what it would do, and Run All goes on."
    nb = {'cells': [{'cell_type': 'code', 'metadata': {}, 'outputs': [], 'execution_count': None, 'source':
                     '#| gpu\nfrom pettingllms_nb.models.hub import gpu_ready\n'
                     'if gpu_ready("Qwen/Qwen3-1.7B", does="loads Qwen3-1.7B on CUDA"):\n'
                     '    raise SystemExit("ran the GPU body")'},
                    {'cell_type': 'code', 'metadata': {}, 'outputs': [], 'execution_count': None,
                     'source': 'print("after the gpu cell")'}],
          'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
    p = tmp_path / 'gpu.ipynb'
    p.write_text(json.dumps(nb))
    env = {**os.environ, 'HF_HUB_CACHE': str(tmp_path / 'cache')}
    r = subprocess.run([sys.executable, str(RUNNER), '--save', str(p)], capture_output=True, text=True, cwd=ROOT,
                       env={**env, 'PYTHONPATH': str(ROOT)})
    assert r.returncode == 0, r.stdout + r.stderr
    cells = json.loads(p.read_text())['cells']
    said = ''.join(''.join(o.get('text', '')) for o in cells[0]['outputs'])
    assert 'Skipped: this cell loads Qwen3-1.7B on CUDA' in said and 'base_models.policy_0.path=' in said, said
    assert 'after the gpu cell' in ''.join(''.join(o.get('text', '')) for o in cells[1]['outputs'])


# -- committed outputs (scripts/check_outputs.py) -------------------------------------------------------------------
sys.path.insert(0, str(ROOT / 'scripts'))
import check_outputs   # noqa: E402


def _nb(tmp_path, *cells):
    nb = {'cells': [{'cell_type': 'code', 'metadata': {}, 'execution_count': None, 'source': s, 'outputs': o}
                    for s, o in cells], 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
    p = tmp_path / f'nb{len(list(tmp_path.iterdir()))}.ipynb'
    p.write_text(json.dumps(nb))
    return p


def test_check_outputs_finds_what_is_missing(tmp_path):
    shown = [{'output_type': 'execute_result', 'data': {'text/plain': '3'}, 'metadata': {}, 'execution_count': None}]
    good = _nb(tmp_path, ('x = 3\nx', shown), ('print("hi")', []), ('test_eq(x, 3)', []), ('#| gpu\nx', []), ('x;', []))
    half = _nb(tmp_path, ('x = 3\nx', shown), ('y = 4\ny', []), ('t[0], t[-1]', []))
    bare = _nb(tmp_path, ('x = 3\nx', []))
    assert check_outputs.missing_outputs(good) == []
    assert [m.split(' ends')[0] for m in check_outputs.missing_outputs(half)] == ['cell 1', 'cell 2']
    assert check_outputs.missing_outputs(bare) == ['no cell has an output']
    assert check_outputs.main([str(good)]) == 0 and check_outputs.main([str(tmp_path)]) == 1


def test_tutorials_are_committed_with_their_outputs():
    "Once the tutorials carry outputs, every one must (a tutorial committed without them fails here)."
    have = [p for p in TUTORIALS if check_outputs.missing_outputs(p) != ['no cell has an output']]
    if not have:
        pytest.skip('no tutorial carries outputs yet: they are executed and committed with '
                    '`python scripts/execute_notebooks.py --save tutorials` (then scripts/check_outputs.py)')
    missing = {p.name: m for p in TUTORIALS if (m := check_outputs.missing_outputs(p))}
    assert not missing, missing

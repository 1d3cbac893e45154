"Plots show in a real Jupyter kernel and save to files in scripts, and never switch the user's matplotlib backend."
import json, os, subprocess, sys, textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / 'tutorials' / '08_training.ipynb'
SKIPPED = ('#| slow', '#| gpu', '#| eval: false')


def _cells_through_first_plot(nb) -> list:
    "The code cells of the tutorial up to and including its first (smoke) `plot_metrics` cell, as the test runner runs them."
    out = []
    for c in nb.cells:
        if c.cell_type != 'code' or c.source.lstrip().startswith(SKIPPED): continue
        out.append(c)
        if c.source.lstrip().startswith('plot_metrics('): return out
    raise AssertionError(f"{TUTORIAL.name} has no plot_metrics cell outside #| slow / #| gpu cells")


def _images(cell) -> int:
    return sum('image/png' in o.get('data', {}) for o in cell.outputs)


def test_training_tutorial_plot_renders_inline_and_later_plots_still_do(tmp_path):
    nbformat = pytest.importorskip('nbformat')
    nbclient = pytest.importorskip('nbclient')
    pytest.importorskip('ipykernel')
    pytest.importorskip('torch')
    src = nbformat.read(TUTORIAL, as_version=4)
    nb = nbformat.v4.new_notebook(metadata=src.metadata)
    nb.cells = [nbformat.v4.new_code_cell(c.source) for c in _cells_through_first_plot(src)]
    plot = nb.cells[-1]
    later = [nbformat.v4.new_code_cell(s) for s in (
        "import matplotlib\nmatplotlib.get_backend()",
        "import matplotlib.pyplot as plt\nplt.plot([0, 1, 4]); plt.title('a later plot'); plt.show()",
        "plot_metrics(history)")]
    nb.cells += later
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'OMP_NUM_THREADS': '1'}
    env.pop('MPLBACKEND', None)    # the kernel picks its backend (inline), as in a user's Jupyter
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': str(tmp_path)}})
    client.execute(env=env)
    assert _images(plot) == 1, [o.get('data', {}).keys() for o in plot.outputs]     # the payoff plot, once
    backend = later[0].outputs[0]['data']['text/plain']
    assert 'inline' in backend and 'agg' not in backend.lower(), backend           # the user's backend is still inline
    assert _images(later[1]) == 1                                                   # pyplot still draws after it
    assert _images(later[2]) == 1                                                   # and plot_metrics again


def test_plot_metrics_in_a_script_writes_a_png_without_pyplot(tmp_path):
    pytest.importorskip('matplotlib')
    hist = [{'step': 0, 'val/success_rate': 0.1}, {'step': 1, 'train/success_rate': 0.2, 'train/a/reward': 0.5,
            'shared/pg_loss': 0.3}, {'step': 2, 'train/success_rate': 0.4, 'train/a/reward': 0.7, 'shared/pg_loss': 0.1,
            'val/success_rate': 0.5}]
    (tmp_path / 'metrics.jsonl').write_text(''.join(json.dumps(h) + '\n' for h in hist))
    script = textwrap.dedent(f'''
        import sys, matplotlib
        matplotlib.use("svg")                       # a user's own choice, which plot_metrics must keep
        from pettingllms_nb.training.trainer import plot_metrics
        fig = plot_metrics({str(tmp_path / 'metrics.jsonl')!r}, {str(tmp_path / 'curves.png')!r}, title="t")
        print(matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules, len(fig.axes), fig.axes[0].get_title())
    ''')
    r = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ['svg', 'False', '3', 'success', 'rate']
    assert (tmp_path / 'curves.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'

"""Run notebooks as Jupyter's "Run All" does: each in a fresh kernel (nbclient), every cell, top to bottom.

    python scripts/execute_notebooks.py [--skip slow] [--workers N] PATH [PATH ...]   # run and report; writes nothing
    python scripts/execute_notebooks.py --save PATH [PATH ...]                        # run and keep the outputs

Folders are searched recursively (names starting with `_` and checkpoints are left out).

What runs, honestly: every code cell, in a kernel of this Python (a private kernelspec, whatever other `python3`
kernels are installed), with the notebook's folder as working directory, as a reader's "Run All" would. `#| gpu`
cells run too: they check for a GPU and their model themselves (`pettingllms_nb.models.hub.gpu_ready`) and say what
they would do. The one thing that may be left out is what `--skip FLAG` names: cells flagged `#| FLAG` (nbdev's cell
flags, e.g. `--skip slow` for the smoke run, as `nbdev-test` leaves out its `tst_flags`); those cells keep their
committed outputs, and their notebooks say in the text above them how long they take. Nothing is skipped by default.

No network: `HF_HUB_OFFLINE=1` is set for the kernels unless the caller set it, so nothing waits on the Hub.

`--save` writes the outputs into the notebook, made to be committed: sampling is seeded by the notebooks themselves,
`PYTHONHASHSEED=0`, `TQDM_DISABLE=1` and `HF_HUB_DISABLE_PROGRESS_BARS=1` (progress bars carry timings; the last
also silences transformers' own "Loading weights" bars, which ignore tqdm's variable) are set for the kernel, the live widget views
(`application/vnd.jupyter.widget-view+json`, whose ids change every run) and the notebook's widget state are dropped,
keeping each widget's static `text/html` fallback and `text/plain`, and `nbdev-clean` then normalises ids and metadata.
A notebook whose outputs exceed `--max-kb` is reported (outputs are the docs: keep them small).
"""
from __future__ import annotations
import argparse, copy, json, os, re, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json'
KERNEL = 'pettingllms-nb-run'
_flag_re = re.compile(r'^#\|\s*([\w-]+)\s*$')


def notebooks(paths) -> list[Path]:
    "The notebooks named by `paths` (files, or folders searched recursively)."
    out = []
    for p in map(Path, paths):
        if not p.exists(): raise SystemExit(f"execute_notebooks: no such file or folder: {p}")
        found = [p] if p.suffix == '.ipynb' else sorted(p.rglob('*.ipynb'))
        out += [nb for nb in found if '.ipynb_checkpoints' not in nb.parts and not nb.name.startswith('_')]
    return out


def cell_flags(cell) -> set[str]:
    "The nbdev flags of a code cell: its leading `#| word` lines (`#| slow`, `#| gpu`, ...)."
    src = cell['source'] if isinstance(cell['source'], str) else ''.join(cell['source'])
    flags = set()
    for line in src.splitlines():
        if not line.startswith('#|'): break
        if m := _flag_re.match(line): flags.add(m.group(1))
    return flags


def kernel_env(save:bool) -> dict:
    "The environment the kernels inherit: no Hub access, and (saving) seeded hashing and no progress bars."
    env = {'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    if save: env.update(PYTHONHASHSEED='0', TQDM_DISABLE='1', HF_HUB_DISABLE_PROGRESS_BARS='1')
    return {**env, **{k: os.environ[k] for k in env if k in os.environ}}


def private_kernelspec(folder:Path) -> Path:
    "Write a kernelspec that starts this Python's ipykernel, so no other installed `python3` kernel is picked."
    d = folder / 'kernels' / KERNEL
    d.mkdir(parents=True, exist_ok=True)
    spec = {'argv': [sys.executable, '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
            'display_name': f'Python ({sys.prefix})', 'language': 'python'}
    (d / 'kernel.json').write_text(json.dumps(spec))
    return folder


def strip_widget_views(nb) -> int:
    "Drop live widget views and the notebook's widget state (ids change every run); returns how many views went."
    n = 0
    for c in nb['cells']:
        if c['cell_type'] != 'code': continue   # only code cells have outputs (a markdown one must not get the key)
        for o in c['outputs']:
            if WIDGET_VIEW in o.get('data', {}):
                # a widget without a static `text/html` copy (a tqdm bar in a notebook: it ignores TQDM_DISABLE) would
                # keep only the `text/plain` of its first moment, `0/30 0%` forever on a static page: it goes entirely
                if 'text/html' not in o['data']: o['data'] = {}
                else: del o['data'][WIDGET_VIEW]
                n += 1
        c['outputs'] = [o for o in c['outputs'] if o.get('output_type') not in ('execute_result', 'display_data')
                        or o.get('data')]
    nb['metadata'].pop('widgets', None)
    return n


# `--strict`: a first cell (run, never saved) that makes the project's own deprecation warnings errors. Every one of
# them says "<old> is deprecated; use <new>" (core.names, core.config), so a notebook that still calls an old name
# fails where it calls it; other libraries' warnings are left alone.
STRICT_CELL = ("import warnings\n"
               "warnings.filterwarnings('error', message=r'.* is deprecated[:;] ', category=DeprecationWarning)")


def execute(path:Path, skip:set[str]=frozenset(), save:bool=False, timeout:int=600, strict:bool=False) -> dict:
    "Run notebook `path` in a fresh kernel; with `save`, write its outputs back. Returns a report dict."
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    run = copy.deepcopy(nb)
    skipped = []
    for i, c in enumerate(run.cells):
        if c.cell_type == 'code' and cell_flags(c) & skip:
            c.metadata.setdefault('tags', []).append('skip-execution')
            skipped.append(i)
    if strict: run.cells.insert(0, nbformat.v4.new_code_cell(STRICT_CELL))
    client = NotebookClient(run, timeout=timeout, kernel_name=KERNEL, allow_errors=False, record_timing=False,
                            resources={'metadata': {'path': str(path.parent)}}, skip_cells_with_tag='skip-execution')
    t0, error = time.perf_counter(), None
    try: client.execute()
    except (CellExecutionError, CellTimeoutError) as e: error = str(e)
    except Exception as e: error = f"{type(e).__name__}: {e}"
    if strict: run.cells.pop(0)
    report = {'path': str(path), 'seconds': round(time.perf_counter() - t0, 1), 'skipped': skipped, 'error': error}
    if save and error is None:
        for i, c in enumerate(run.cells):
            if c.cell_type != 'code': continue
            nb.cells[i].outputs = c.outputs if i not in skipped else nb.cells[i].outputs
        report['widget_views_dropped'] = strip_widget_views(nb)
        nbformat.write(nb, path)
        subprocess.run(['nbdev-clean', '--fname', str(path)], check=True, cwd=ROOT, capture_output=True)
        report['output_kb'] = round(output_bytes(nbformat.read(path, as_version=4)) / 1024, 1)
    return report


def output_bytes(nb) -> int:
    "How many bytes the notebook's outputs take (as JSON)."
    return sum(len(json.dumps(o)) for c in nb['cells'] for o in c.get('outputs', []))


def _single(a) -> int:
    "Child mode: run one notebook, print its report as JSON (one fresh process per notebook)."
    os.environ.update(kernel_env(a.save))
    with tempfile.TemporaryDirectory(prefix='pllm-kernels-') as tmp:
        os.environ['JUPYTER_PATH'] = os.pathsep.join(filter(None, [str(private_kernelspec(Path(tmp))),
                                                                    os.environ.get('JUPYTER_PATH')]))
        r = execute(Path(a.paths[0]), set(a.skip), a.save, a.timeout, a.strict)
    print(json.dumps(r))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('paths', nargs='+')
    ap.add_argument('--skip', action='append', default=[], help='leave out cells flagged `#| FLAG` (repeatable)')
    ap.add_argument('--save', action='store_true', help='write the outputs into the notebooks (then nbdev-clean)')
    ap.add_argument('--workers', type=int, default=2)
    ap.add_argument('--timeout', type=int, default=600, help='seconds a cell may take')
    ap.add_argument('--max-kb', type=float, default=300, help='report notebooks whose outputs exceed this size')
    ap.add_argument('--strict', action='store_true', help="the project's own deprecation warnings are errors")
    ap.add_argument('--single', action='store_true', help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.skip = [f for s in a.skip for f in s.replace(',', ' ').split()]
    if a.single: return _single(a)
    nbs = notebooks(a.paths)
    cmd = [sys.executable, __file__, '--single', '--timeout', str(a.timeout)] + ['--save'] * a.save + ['--strict'] * a.strict
    cmd += [x for f in a.skip for x in ('--skip', f)]

    def one(nb):
        r = subprocess.run(cmd + [str(nb)], capture_output=True, text=True)
        try: return json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {'path': str(nb), 'seconds': 0, 'skipped': [], 'error': (r.stdout + r.stderr).strip()[-4000:]}

    failed, big = [], []
    with ThreadPoolExecutor(max(1, a.workers)) as ex:
        for nb, r in zip(nbs, ex.map(one, nbs)):
            note = f" ({len(r['skipped'])} cells flagged {'/'.join(a.skip)} left out)" if r['skipped'] else ''
            if 'output_kb' in r:
                note += f" saved, outputs {r['output_kb']} KB"
                if r['output_kb'] > a.max_kb: big.append(nb)
            print(f"[run-all] {'ok  ' if r['error'] is None else 'FAIL'} {r['seconds']:6.1f}s {nb}{note}",
                  file=sys.stderr, flush=True)
            if r['error'] is not None:
                failed.append(nb)
                print(r['error'], file=sys.stderr, flush=True)
    print(f"[run-all] {len(nbs) - len(failed)} of {len(nbs)} notebooks ran top to bottom in a fresh kernel",
          file=sys.stderr)
    for nb in failed: print(f"[run-all] failed: {nb}", file=sys.stderr)
    for nb in big: print(f"[run-all] outputs over {a.max_kb} KB (keep them small): {nb}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == '__main__': sys.exit(main())

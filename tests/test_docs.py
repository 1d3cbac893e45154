"""The documentation site (mkdocs.yml, scripts/mkdocs_hooks.py): the modules' `Docs:` links point at its pages.

The whole site takes minutes to build (scripts/docs.sh); here one page is built, and every link is checked against
the page paths the site gives the notebooks.
"""
import os, re, subprocess, sys, tomllib
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'scripts'))


def site_pages() -> set:
    "The `.html.md` path of every notebook page, as the docs hook lays them out."
    pytest.importorskip('mkdocs', reason="the [docs] extra is not installed (pip install -e '.[docs]')")
    from mkdocs_hooks import SOURCES, page_path
    return {page_path(prefix, nb.relative_to(folder))[:-len('.ipynb')] + '.html.md'
            for prefix, folder in SOURCES.items() for nb in folder.rglob('*.ipynb') if not nb.name.startswith('_')}


def test_every_docs_link_points_at_a_page_of_the_site():
    base = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['urls']['Documentation'].rstrip('/') + '/'
    site_url = re.search(r'^site_url:\s*(\S+)', (ROOT / 'mkdocs.yml').read_text(), re.M).group(1).rstrip('/') + '/'
    assert base == site_url, (base, site_url)
    links = {p: m.group(1) for p in (ROOT / 'pettingllms_nb').rglob('*.py')
             if (m := re.search(r'^Docs: (\S+?)(?:""")?$', p.read_text(), re.M))}
    assert len(links) > 50, len(links)
    pages = site_pages()
    wrong = {str(p.relative_to(ROOT)): u for p, u in links.items() if not u.startswith(base) or u[len(base):] not in pages}
    assert not wrong, wrong


def build_only(notebook:str, site:Path):
    "Build the home page and `notebook`'s page into `site` with mkdocs (the hooks read PLLM_DOCS_ONLY); fail on an error."
    env = {**os.environ, 'PLLM_DOCS_ONLY': notebook, 'NO_MKDOCS_2_WARNING': '1'}
    r = subprocess.run([sys.executable, '-m', 'mkdocs', 'build', '-q', '-d', str(site)], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_one_page_builds(tmp_path):
    "mkdocs renders a notebook at its nbdev path, beside its markdown copy, without executing it."
    pytest.importorskip('mkdocs_jupyter', reason="the [docs] extra is not installed (pip install -e '.[docs]')")
    build_only('nbs/models/065_hub.ipynb', tmp_path / 'site')
    page = (tmp_path / 'site' / 'models' / 'hub.html').read_text()
    assert 'GPU cells that guard themselves' in page and 'gpu_ready' in page
    md = (tmp_path / 'site' / 'models' / 'hub.html.md').read_text()
    assert md.startswith('# GPU cells that guard themselves') and '```python\n#| export' in md
    assert (tmp_path / 'site' / 'index.html').exists() and not (tmp_path / 'site' / 'models' / 'tiny.html').exists()


class _Refs(__import__('html.parser').parser.HTMLParser):
    "Every image source and link of a page."
    def __init__(self):
        super().__init__(); self.imgs, self.links = [], []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'img' and a.get('src'): self.imgs.append(a['src'])
        if tag == 'a' and a.get('href'): self.links.append(a['href'])


def _missing(site:Path, page:Path, refs, root:str='/') -> list:
    "The references of `page` that are files of this site and are not there (`root`: the site's path on its server)."
    out = []
    for ref in refs:
        if re.match(r'^(data:|[a-z]+://|#|mailto:)', ref): continue
        path = ref.split('#')[0].split('?')[0]
        if path.startswith('/'): path = str(site / path.removeprefix(root).lstrip('/'))
        target = (page.parent / path).resolve()
        if ref.split('#')[0] and not target.exists(): out.append(ref)
    return out


def test_home_page_and_a_tutorial_have_no_broken_image_or_link(tmp_path):
    "The README's images (docs/images/, as GitHub reads them) are found on the home page; a tutorial's links resolve."
    pytest.importorskip('mkdocs_jupyter', reason="the [docs] extra is not installed (pip install -e '.[docs]')")
    build_only('tutorials/13_web_env.ipynb', tmp_path / 'site')
    site = tmp_path / 'site'
    for page in (site / 'index.html', site / 'tutorials' / 'web_env.html'):
        refs = _Refs(); refs.feed(page.read_text())
        if page.name == 'index.html':   # every K = 3 plot the README shows reaches the home page
            want = (Path(__file__).resolve().parents[1] / 'README.md').read_text().count('](docs/images/demo_k3_')
            assert want >= 4 and sum('demo_k3_' in s for s in refs.imgs) == want, refs.imgs
        assert not _missing(site, page, refs.imgs), (page.name, _missing(site, page, refs.imgs))
        assert not _missing(site, page, [l for l in refs.links if not l.endswith('.ipynb')]), (page.name, _missing(site, page, refs.links))


def test_the_content_column_is_wide():
    "The notebooks' cards need more than Material's 61rem grid (about 530 px of content between the sidebars)."
    css = (ROOT / 'docs' / 'extra.css').read_text()
    m = re.search(r'\.md-grid\s*\{\s*max-width:\s*(\d+)rem', css)
    assert m and int(m.group(1)) >= 80


def test_no_widget_hides_inside_a_block():
    "A widget written as the last line of an `if` (or `for`, `with`) block is never displayed: show it at the cell's end."
    import ast, json
    widgets = {'StepThrough', 'TreeView', 'GroupInspector', 'TrainingDashboard'}
    hidden = []
    for nb in sorted((ROOT / 'tutorials').glob('*.ipynb')):
        for i, c in enumerate(json.loads(nb.read_text())['cells']):
            if c['cell_type'] != 'code': continue
            src = '\n'.join(l for l in ''.join(c['source']).splitlines() if not l.lstrip().startswith(('%', '!')))
            try: tree = ast.parse(src)
            except SyntaxError: continue
            for stmt in tree.body:
                if isinstance(stmt, ast.Expr): continue
                for node in ast.walk(stmt):
                    if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                            and getattr(node.value.func, 'id', None) in widgets):
                        hidden.append(f"{nb.name} cell {i}: {ast.unparse(node)[:60]}")
    assert not hidden, hidden


def test_no_stale_progress_bar_in_saved_outputs():
    "A saved tqdm bar shows its first state (`0/30 0%`) forever on a static page: no saved output of a page holds one."
    import json
    bars = []
    for nb in sorted([*(ROOT / 'tutorials').glob('*.ipynb'), *(ROOT / 'nbs').rglob('*.ipynb')]):
        for i, c in enumerate(json.loads(nb.read_text())['cells']):
            for o in c.get('outputs', []):
                text = ''.join(o.get('data', {}).get('text/plain', '')) + ''.join(o.get('text', ''))
                if re.search(r'\d+%\|.*\| *\d+/\d+ \[', text): bars.append(f"{nb.relative_to(ROOT)} cell {i}")
    assert not bars, bars


def test_saving_outputs_drops_widgets_without_a_static_copy():
    "A tqdm bar (a widget with only `text/plain`) goes; a widget with its static `text/html` copy keeps that copy."
    from execute_notebooks import WIDGET_VIEW, strip_widget_views
    bar = {'output_type': 'display_data', 'metadata': {},
           'data': {WIDGET_VIEW: {'model_id': 'a'}, 'text/plain': ['train:   0%|          | 0/30 [00:00<?, ?step/s]']}}
    card = {'output_type': 'display_data', 'metadata': {}, 'data': {WIDGET_VIEW: {'model_id': 'b'}, 'text/html': ['<div>card</div>']}}
    nb = {'metadata': {'widgets': {}}, 'cells': [{'cell_type': 'code', 'outputs': [bar, card]}]}
    assert strip_widget_views(nb) == 2
    assert nb['cells'][0]['outputs'] == [{'output_type': 'display_data', 'metadata': {}, 'data': {'text/html': ['<div>card</div>']}}]


@pytest.mark.slow
def test_the_whole_site_has_no_broken_image_or_link(tmp_path):
    "Every page of the built site (about 145, 1.5 minutes): each image and link to a file of the site is there."
    pytest.importorskip('mkdocs_jupyter', reason="the [docs] extra is not installed (pip install -e '.[docs]')")
    site = tmp_path / 'site'
    r = subprocess.run([sys.executable, '-m', 'mkdocs', 'build', '-q', '-d', str(site)], cwd=ROOT,
                       env={**os.environ, 'NO_MKDOCS_2_WARNING': '1'}, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    root = '/' + re.search(r'^site_url:\s*[a-z]+://[^/]+/(\S*)', (ROOT / 'mkdocs.yml').read_text(), re.M).group(1)
    pages = sorted(site.rglob('*.html'))
    assert len(pages) > len(list((ROOT / 'tutorials').glob('*.ipynb'))) + 100, len(pages)
    broken = {}
    for page in pages:
        refs = _Refs(); refs.feed(page.read_text(errors='replace'))
        if m := _missing(site, page, refs.imgs + [l for l in refs.links if not l.endswith('.ipynb')], root):
            broken[str(page.relative_to(site))] = m[:5]
    assert not broken, broken

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


def test_one_page_builds(tmp_path):
    "mkdocs renders a notebook at its nbdev path, beside its markdown copy, without executing it."
    pytest.importorskip('mkdocs_jupyter', reason="the [docs] extra is not installed (pip install -e '.[docs]')")
    env = {**os.environ, 'PLLM_DOCS_ONLY': 'nbs/models/065_hub.ipynb', 'NO_MKDOCS_2_WARNING': '1'}
    r = subprocess.run([sys.executable, '-m', 'mkdocs', 'build', '-q', '-d', str(tmp_path / 'site')], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    page = (tmp_path / 'site' / 'models' / 'hub.html').read_text()
    assert 'GPU cells that guard themselves' in page and 'gpu_ready' in page
    md = (tmp_path / 'site' / 'models' / 'hub.html.md').read_text()
    assert md.startswith('# GPU cells that guard themselves') and '```python\n#| export' in md
    assert (tmp_path / 'site' / 'index.html').exists() and not (tmp_path / 'site' / 'models' / 'tiny.html').exists()

"""MkDocs hooks: the notebooks of nbs/ and tutorials/ as pages at nbdev's doc paths, the README as home, a nav in order.

nbdev writes `Docs: {Documentation url}/{notebook path under nbs/, numeric prefix dropped}.html.md` into each module's
docstring (models/061_hf_policy.ipynb -> models/hf_policy.html.md); here every notebook becomes the page at that path
(`use_directory_urls: false`) and, after the build, that `.html.md` file: the notebook as markdown (text, code, and its
text outputs), for readers and tools that want plain text. Tutorials go under tutorials/ the same way.
`PLLM_DOCS_ONLY=nbs/models/065_hub.ipynb,...` (paths from the repository root) builds only those notebooks' pages.
"""
from __future__ import annotations
import json, os, re, shutil, tempfile
from pathlib import Path
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {'': ROOT / 'nbs', 'tutorials/': ROOT / 'tutorials'}
_pages: dict[str, Path] = {}   # site path of the notebook (…/x.ipynb) -> the notebook
_stage = Path(tempfile.mkdtemp(prefix='pllm-docs-'))   # links named by site path (mkdocs-jupyter needs real files)


def _file(config, uri:str, src:Path) -> File:
    "A page at `uri` whose source is `src` (through a link in the staging folder)."
    link = _stage / uri
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists(): link.unlink()
    link.symlink_to(src)
    return File(uri, str(_stage), config['site_dir'], config['use_directory_urls'])


def page_path(prefix:str, rel:Path) -> str:
    "nbdev's doc path of a notebook: its path (under nbs/ or tutorials/) with the file's numeric prefix dropped."
    return prefix + rel.with_name(re.sub(r'^\d+[a-zA-Z0-9]*_', '', rel.name.lower())).as_posix()


def _title(nb:Path) -> str:
    for c in json.loads(nb.read_text())['cells']:
        src = ''.join(c['source']) if c['cell_type'] == 'markdown' else ''
        if m := re.match(r'#\s+(.+)', src.strip()): return m.group(1).strip()
    return nb.stem


@event_priority(100)   # before mkdocs-jupyter turns the .ipynb files into pages
def on_files(files, config):
    _pages.clear()
    files.append(_file(config, 'index.md', ROOT / 'README.md'))
    nav = {'Home': 'index.md'}
    only = {(ROOT / p).resolve() for p in os.environ.get('PLLM_DOCS_ONLY', '').split(',') if p}
    for prefix, folder in SOURCES.items():
        for nb in sorted(folder.rglob('*.ipynb')):
            rel = nb.relative_to(folder)
            if '.ipynb_checkpoints' in rel.parts or nb.name.startswith('_') or (only and nb.resolve() not in only): continue
            uri = page_path(prefix, rel)
            if uri == 'index.ipynb': uri = 'library.ipynb'   # nbs/index.ipynb: the README is the home page (index.html)
            _pages[uri] = nb
            files.append(_file(config, uri, nb))
            section = 'Tutorials' if prefix else (rel.parts[0] if len(rel.parts) > 1 else 'Library')
            nav.setdefault(section, []).append({_title(nb): uri})
    config['nav'] = [{k: v} for k, v in nav.items()]
    return files


def on_page_markdown(markdown, page, config, files):
    "The README is the home page: its links into docs/ (written for GitHub, from the repository root) point into the site."
    if page.file.src_uri != 'index.md': return markdown
    return re.sub(r"""(\]\(|src=["'])docs/""", r'\1', markdown)   # docs/ is the site's root: docs/images/x.png is images/x.png


def as_markdown(nb:Path) -> str:
    "The notebook as markdown: its text, its code in fences, and its text outputs."
    out = []
    for c in json.loads(nb.read_text())['cells']:
        src = ''.join(c['source'])
        if c['cell_type'] == 'markdown': out.append(src)
        elif c['cell_type'] == 'code':
            out.append(f"```python\n{src}\n```")
            for o in c.get('outputs', []):
                text = ''.join(o.get('text', '')) or ''.join(o.get('data', {}).get('text/plain', ''))
                if text: out.append(f"```\n{text.rstrip()}\n```")
    return '\n\n'.join(out) + '\n'


def on_post_build(config):
    site = Path(config['site_dir'])
    for uri, nb in _pages.items():
        dest = site / (uri[:-len('.ipynb')] + '.html.md')
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(as_markdown(nb))
    shutil.rmtree(_stage, ignore_errors=True)

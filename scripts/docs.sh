#!/usr/bin/env bash
# Build the documentation site into site/: every notebook of nbs/ and tutorials/ with its committed outputs (never
# executed here; `python scripts/execute_notebooks.py --save ...` puts outputs in), the README as the home page.
# Installs the [docs] extra (mkdocs, mkdocs-material, mkdocs-jupyter) into .venv on first use. Extra arguments go to
# `mkdocs build` (e.g. --strict). Serve it locally with `python -m http.server -d site`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/venv.sh "${EXTRAS:-dev,docs}"
export NO_MKDOCS_2_WARNING=1   # mkdocs-material's banner about MkDocs 2
t0=$SECONDS
mkdocs build --clean "$@"
echo "[docs] built site/ in $((SECONDS - t0)) s: $(find site -name '*.html' | wc -l) pages, $(du -sh site | cut -f1)" >&2

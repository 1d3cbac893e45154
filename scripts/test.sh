#!/usr/bin/env bash
# Run every test: the notebooks (nbs/ and tutorials/, through nbdev-test) and then pytest (tests/).
# Creates .venv on first use. SMOKE=1 skips cells and tests marked slow; the default runs the full set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/venv.sh "${EXTRAS:-dev,train,openai}"
flags=""
[ "${SMOKE:-0}" = "1" ] || flags="slow"
echo "[test] notebooks: nbs/" >&2
nbdev-test --n-workers "${NB_WORKERS:-2}" --flags "$flags" nbs
if compgen -G "tutorials/*.ipynb" >/dev/null; then
  echo "[test] notebooks: tutorials/" >&2
  nbdev-test --n-workers "${NB_WORKERS:-2}" --flags "$flags" tutorials
fi
echo "[test] pytest: tests/" >&2
pytest_args=(-q -p no:cacheprovider)
[ "${SMOKE:-0}" = "1" ] && pytest_args+=(-m "not slow")
exec pytest "${pytest_args[@]}" tests

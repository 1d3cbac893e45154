#!/usr/bin/env bash
# Run every test: the notebooks (nbs/ and tutorials/, through nbdev-test) and then pytest (tests/).
# Creates .venv on first use. SMOKE=1 skips cells and tests marked slow; the default runs the full set.
# Before the main pytest run, tests/vllm runs in .venv-vllm (built by scripts/vllm-venv.sh); SKIP_VLLM=1 skips it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/venv.sh "${EXTRAS:-dev,train,openai,math,data,search,alfworld,web}"
flags=""
[ "${SMOKE:-0}" = "1" ] || flags="slow"
# Each notebook runs in a fresh process of its own, as in a real kernel (see scripts/nbtest.py for why).
echo "[test] notebooks: nbs/ and tutorials/" >&2
python scripts/nbtest.py --workers "${NB_WORKERS:-2}" --flags "$flags" nbs tutorials
if [ "${SKIP_VLLM:-0}" != "1" ]; then
  # VLLMPolicy for real on vLLM's CPU build, in its own venv (it pins torch 2.13.0+cpu and transformers < 5.20).
  echo "[test] vLLM: tests/vllm in .venv-vllm (SKIP_VLLM=1 skips)" >&2
  bash scripts/vllm-venv.sh
  # Importing vLLM compiles ~90 MB of byte-code (20 s a run when it is not kept): keep it inside .venv-vllm.
  PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$PWD/.venv-vllm/pycache" .venv-vllm/bin/python -m pytest -q -p no:cacheprovider tests/vllm
fi
echo "[test] pytest: tests/" >&2
pytest_args=(-q -p no:cacheprovider)
[ "${SMOKE:-0}" = "1" ] && pytest_args+=(-m "not slow")
exec pytest "${pytest_args[@]}" tests

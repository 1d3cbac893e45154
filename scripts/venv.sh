#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv.
# Usage: source scripts/venv.sh [extras]   e.g. `source scripts/venv.sh dev`
# The environment is rebuilt only when pyproject.toml or the extras change (a stamp file records both).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extras="${1:-dev}"
venv="${VENV:-$root/.venv}"
py="${PYTHON:-python3}"
# Pin CPU torch in the same pip call as the rest: a bare `torch` requirement resolves to a multi-GB CUDA build.
torch_pin="${TORCH_PIN:-torch==2.13.0}"
stamp="$venv/.pettingllms-nb-stamp"
want="$(cat "$root/pyproject.toml" | sha256sum | cut -c1-16) $extras $torch_pin"
if [ ! -x "$venv/bin/python" ]; then
  echo "[venv] creating $venv" >&2
  "$py" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[venv] installing pettingllms-nb[$extras] into $venv" >&2
  pins=()
  case ",$extras," in *,train,*|*,all,*) pins+=("$torch_pin") ;; esac
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
  links=()
  case ",$extras," in *,alfworld,*|*,all,*)
    # fast-downward-textworld (TextWorld's planner) is an sdist that compiles C++ (about a minute on two cores, several
    # under load): build its wheel once into .whl/ and install from there (pip's wheel cache also keeps it per machine).
    # Its build runs `python`, which must be this venv's.
    fd="fast-downward-textworld==20.6.4"
    if ! compgen -G "$root/.whl/fast_downward_textworld-20.6.4-*.whl" >/dev/null; then
      echo "[venv] building $fd once into .whl/ (compiles C++)" >&2
      PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps "$fd" -w "$root/.whl" >&2 \
        || { echo "[venv] building $fd failed (needs cmake and g++)" >&2; exit 1; }
    fi
    links=(--find-links "$root/.whl") ;;
  esac
  set +e
  PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip install -q --disable-pip-version-check "${links[@]}" "${pins[@]}" -e "$root[$extras]" 2>&1 \
    | grep -v -e "is ignored: it is neither a file nor a directory" -e "^  !!$" >&2
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -eq 0 ] || { echo "[venv] pip install failed ($rc)" >&2; exit "$rc"; }
  "$venv/bin/python" -c "import pettingllms_nb" || { echo "[venv] install failed" >&2; exit 1; }
  echo "$want" > "$stamp"
fi
export PATH="$venv/bin:$PATH"

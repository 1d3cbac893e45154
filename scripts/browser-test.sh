#!/usr/bin/env bash
# Real-browser test of the widgets: JupyterLab on loopback + Debian's chromium driven by Playwright.
# Installs what it needs (apt chromium; jupyterlab and playwright into .venv), then runs tests/browser.
# The screenshot goes to $PLLM_SCREENSHOT (default: outputs/browser/stepthrough.png).
# `npx playwright install` is not used (downloading a browser is impossible here): Playwright drives /usr/bin/chromium.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${VENV:-$root/.venv}"
if ! command -v chromium >/dev/null 2>&1; then
  echo "[browser-test] installing chromium (apt)" >&2
  sudo_="" ; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get install -y -q chromium >/dev/null 2>&1 || { $sudo_ apt-get update -q >/dev/null && $sudo_ apt-get install -y -q chromium >/dev/null; }
fi
[ -x "$venv/bin/python" ] || { echo "[browser-test] no venv at $venv: run 'source scripts/venv.sh dev' first" >&2; exit 1; }
"$venv/bin/python" -c "import playwright, jupyterlab, ipywidgets" 2>/dev/null || {
  echo "[browser-test] installing jupyterlab, playwright into $venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check jupyterlab playwright ipywidgets 2>&1 \
    | grep -v -e "is ignored: it is neither a file nor a directory" >&2 || true
}
export PLLM_SCREENSHOT="${PLLM_SCREENSHOT:-$root/outputs/browser/stepthrough.png}"
export CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
exec "$venv/bin/python" -m pytest -q -s tests/browser "$@"

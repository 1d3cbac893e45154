#!/usr/bin/env bash
# The main job: a CPU demo. Creates .venv on first use, then runs `pettingllms-nb demo`, which writes
# outputs/demo/summary.json and outputs/demo/table.md (and prints the table). Extra arguments go to the demo,
# e.g. `bash scripts/demo.sh --quick` for a smoke-sized run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/venv.sh "${EXTRAS:-dev,train,openai,math,data}"
exec pettingllms-nb demo "$@"

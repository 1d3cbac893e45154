#!/usr/bin/env bash
# The GPU check for a lent device: vLLM with two LoRA adapters on one base (tokens/s, ratio), an HF+PEFT training
# step per adapter, the adapter parity check and a short Trainer run, on a Qwen3-0.6B-sized model built locally
# (no hub), then one training step of every environment's tiny preset on CUDA, in under ten minutes; figures go to a JSON file (--out, default gpu-check.json). Refuses without a GPU.
# Usage: bash scripts/gpu-check.sh [--out FILE] [--sections build,train_step,vllm,parity,trainer] [--max-seconds N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
py="${PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
exec "$py" scripts/gpu_check.py "$@"

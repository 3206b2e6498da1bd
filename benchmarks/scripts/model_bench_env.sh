# Sourced by the attention-in-the-model device scripts: environment, output folders, a log line
# helper and the bench command (bf16 compiled train steps, SDPA and Triton in one process).
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton-cache
OUT=${OUT:-out}; R=/tmp/lmperf-model; rm -rf $R; mkdir -p "$OUT" $R
log() { echo "== $(date -u +%T) $*"; }
BENCH="python3 -m lmperf.cli bench --modes train-step --precisions bf16 --compile compile --attention sdpa,triton --device cuda --warmup 3 --steps 10"
env_lines() {
  log env; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; echo "commit ${LMPERF_COMMIT:-unset}"
}

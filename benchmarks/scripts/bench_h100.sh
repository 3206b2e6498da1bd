#!/usr/bin/env bash
# The committed bench-h100 measurements, in one device call (or two: pass a results dir to resume).
# usage: bash benchmarks/scripts/bench_h100.sh [SWEEP_RUN_DIR_TO_RESUME] ; writes $OUT/bench.tgz
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/lmperf-out}
RUNS=$OUT/runs
mkdir -p "$RUNS"
START=$(date +%s)
lmperf() { python3 -m lmperf.cli "$@"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"

if [ -z "${1:-}" ]; then
  lmperf bench --runs "$RUNS/default"                       # the embedded default on a GPU
  for w in 0 1 2 5; do                                      # warm-up study, each in a fresh process
    lmperf bench -p small -t 512 --warmup $w --steps 10 --runs "$RUNS/warmup$w"
  done
  python3 benchmarks/scripts/bench_agreement.py "$OUT/agreement.json"
  SWEEP_ARGS=(--runs "$RUNS/sweep")
else
  SWEEP_ARGS=(--resume "$1")
fi
ELAPSED=$(( $(date +%s) - START ))
BUDGET=$(( ${SWEEP_SECONDS:-540} - ELAPSED ))
echo "sweep budget ${BUDGET}s"
timeout --signal=INT $BUDGET python3 -m lmperf.cli bench -p small,medium,large,xl,2.7B -t 128,256,512,1024 \
  --precisions fp32,bf16 --compile eager,compile --warmup 2 --steps 5 "${SWEEP_ARGS[@]}" > "$OUT/sweep.log" 2>&1
echo "sweep exit $?"; tail -5 "$OUT/sweep.log"
tar czf "$OUT/bench.tgz" -C "$OUT" runs && rm -rf "$RUNS"

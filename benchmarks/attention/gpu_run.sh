#!/usr/bin/env bash
# Stages of one device call for lmperf.attention: gpu_run.sh STAGE [ARGS...], run in the repo root.
#   info | tests [SECONDS] | target | sweep LMPERF-ATTENTION-ARGS... | model | pack
# Logs go to $OUT; run directories to /tmp/runs, packed with the Triton cache by `pack` (the
# cache comes back as .triton-cache.tgz so a later call can skip compiling the same kernels).
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton-cache TRITON_PRINT_AUTOTUNING=1
OUT=${OUT:-/tmp/out}; RUNS=/tmp/runs; mkdir -p "$OUT" "$RUNS" "$TRITON_CACHE_DIR"
if [ -f .triton-cache.tgz ] && [ -z "$(ls -A $TRITON_CACHE_DIR)" ]; then tar -xzf .triton-cache.tgz -C "$TRITON_CACHE_DIR"; fi
stage=$1; shift
case $stage in
  info)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" ;;
  tests)  # tests [SECONDS [PYTEST-ARGS...]]
    seconds=${1:-240}; shift || true
    timeout "$seconds" python3 -m pytest -q -rf -m gpu -p no:cacheprovider "${@:-tests/attention}" > "$OUT/tests.log" 2>&1
    tail -n 25 "$OUT/tests.log" ;;
  target)
    timeout "${TARGET_TIMEOUT:-240}" python3 -c "from lmperf.attention_bench.benchmark import time_compiled_triton as t; print('target (16,16384,64) causal compiled fwd+sum().backward(): %.3f ms' % t())" > "$OUT/target.log" 2>&1
    tail -n 5 "$OUT/target.log" ;;
  sweep)
    timeout "${SWEEP_TIMEOUT:-400}" python3 -m lmperf.cli attention --runs "$RUNS" "$@" > "$OUT/sweep.log" 2>&1
    grep -E "^(sdpa|triton|naive|torch)" "$OUT/sweep.log" | tail -n 30 ;;
  model)
    timeout "${MODEL_TIMEOUT:-300}" python3 -m lmperf.cli bench -p small,2.7B -t 1024,4096 --modes train-step --precisions bf16 --attention naive,sdpa,triton --device cuda --warmup 2 --steps 5 --runs "$RUNS" > "$OUT/model.log" 2>&1
    tail -n 30 "$OUT/model.log" ;;
  kernels)  # per-kernel GPU time of one FlashAttention2Triton fwd+bwd, (1, 32, 16384, 64) causal
    timeout 90 python3 - > "$OUT/kernels.log" 2>&1 <<'PY'
import torch
from torch.profiler import ProfilerActivity, profile
from lmperf.attention.flash_triton import FlashAttention2Triton
q, k, v = (torch.randn(1, 32, 16384, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
for _ in range(3):
    FlashAttention2Triton.apply(q, k, v, True).backward(torch.ones_like(q))
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        FlashAttention2Triton.apply(q, k, v, True).backward(torch.ones_like(q))
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8))
PY
    grep -v "^Autotuning" "$OUT/kernels.log" | tail -n 14 ;;
  pack)
    tar -czf "$OUT/runs.tgz" -C "$RUNS" .
    tar -czf "$OUT/triton-cache.tgz" -C "$TRITON_CACHE_DIR" . ;;
esac

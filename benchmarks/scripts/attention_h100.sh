#!/usr/bin/env bash
# The rows of benchmarks/attention-h100.md, on one H100 (each part fits a 10-minute device call:
# PARTS picks them, all by default). Run directories land under $OUT/runs; then, per run,
#   python benchmarks/rows.py add attention-h100 SET $OUT/runs/<part>/<stamp>-attention/results.jsonl
# (bench parts: .../<stamp>-bench/results.jsonl), point the page's tables at the new sets
# (benchmarks/pages.py) and run python benchmarks/check_figures.py --write.
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1 LMPERF_COMMIT=${LMPERF_COMMIT:-$(git rev-parse --short HEAD)}
OUT=${OUT:-out}; RUNS=$OUT/runs; mkdir -p "$RUNS"
lmperf() { python3 -m lmperf.cli "$@"; }
STEP="--modes train-step --precisions bf16 --compile compile --warmup 3 --steps 10"
for part in ${PARTS:-cudnn-1 cudnn-2 backends flex step-1024 step-4096}; do
  echo "== $(date -u +%T) $part"
  case $part in
    cudnn-*)  # beside cuDNN: four rounds a run, two runs
      lmperf attention --impls triton,sdpa-cudnn --contexts 1024,2048,4096,16384 --head-dims 64,128 \
        --dtypes bf16 --causal both --rounds 4 --runs "$RUNS/$part" ;;
    backends)  # beside FlashAttention-2, head_dim 80 too, one round
      lmperf attention --impls triton,sdpa-cudnn,sdpa-flash --contexts 1024,4096,16384 --head-dims 64,80,128 \
        --dtypes bf16 --causal both --rep-ms 50 --runs "$RUNS/$part" ;;
    flex)  # FlexAttention beside the split backward at one point
      lmperf attention --impls flex-compiled,triton-split --contexts 4096 --head-dims 64 --dtypes bf16 \
        --causal causal --runs "$RUNS/$part" ;;
    step-1024|step-4096)  # the 2.7B step, rounds alternating which attention runs first
      ctx=${part#step-}; batch=$([ "$ctx" = 1024 ] && echo 4 || echo 1); rounds=$([ "$ctx" = 1024 ] && echo 4 || echo 2)
      for round in $(seq 1 $rounds); do
        order=$([ $((round % 2)) = 0 ] && echo triton,sdpa || echo sdpa,triton)
        lmperf bench -p 2.7B -t "$ctx" --batch "$batch" $STEP --attention $order --runs "$RUNS/$part-r$round"
      done ;;
  esac
done

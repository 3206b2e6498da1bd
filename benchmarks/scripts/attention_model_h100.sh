#!/usr/bin/env bash
# Issue 11 in one device call (H100): the (16, 16384, 64) causal compiled target with the current
# autotune tables, then lmperf's Triton attention against SDPA inside the model (bf16, compiled
# train steps): 2.7B at context 1024 (batch 4) and 4096 (batch 1: batch 4 runs out of memory with
# every attention), and the 8B block shape (d 4096, 32/8 heads, head_dim 128) at 32k context with
# two layers; then the third part of the GPU attention tests.
#   LMPERF_COMMIT=<commit> [PARTS="target b4096 tests-k"] bash benchmarks/scripts/attention_model_h100.sh
# (logs and rows under $OUT; PARTS picks and orders the parts, all five by default)
source "$(dirname "$0")/model_bench_env.sh"
{
env_lines
for part in ${PARTS:-target b1024 d128 b4096 tests-c}; do
  case $part in
    target) log target; OUT=$OUT STAGES=target TARGET_S=${TARGET_S:-80} bash benchmarks/attention/gpu_run.sh ;;
    b1024) log 2.7B ctx 1024 batch 4
           timeout ${B1_S:-150} $BENCH -p 2.7B -t 1024 --batch 4 --runs $R/b1024 ;;
    d128) log 8B block shape, 2 layers, ctx 32768 batch 1
          timeout ${B2_S:-110} $BENCH --d-model 4096 --d-ff 14336 --layers 2 --heads 32 --kv-heads 8 --vocab 128256 \
            --max-context 32768 -t 32768 --batch 1 --loss fused --runs $R/d128 ;;
    b4096) log 2.7B ctx 4096 batch 1
           timeout ${B3_S:-110} $BENCH -p 2.7B -t 4096 --batch 1 --runs $R/b4096 ;;
    tests-*) log $part; OUT=$OUT STAGES=$part bash benchmarks/attention/gpu_run.sh ;;
  esac
done
for d in $R/*/*/; do cp "$d/results.jsonl" "$OUT/bench-$(basename "$(dirname "$d")").jsonl" 2>/dev/null; done
log done
} 2>&1 | tee "$OUT/log.txt"

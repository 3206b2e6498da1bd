#!/usr/bin/env bash
# Issue 11, one device call (H100): head_dim 80 tiled as 64 + 16 columns against padded to 128.
#   1. kernels: variants.py on the d80 grid (32 heads x 80, 16k tokens, seq 1k/4k/16k, causal and
#      not): "main" (tiled) and "padded-head-dim", beside SDPA cuDNN and SDPA's default choice;
#   2. the model: 2.7B (head_dim 80) bf16 compiled train step, SDPA and Triton in one process, at
#      context 1024 (batch 4) and 4096 (batch 1);
#   3. the GPU attention tests touching the change (float64 references with split and padded head
#      dims, autotuned d=80, backward modes and bitwise repeatability at d=80, fp32 GQA SDPA).
#   LMPERF_COMMIT=<commit> bash benchmarks/scripts/attention_headdim_h100.sh   (logs and rows in $OUT)
source "$(dirname "$0")/model_bench_env.sh"
{
env_lines
log kernels d80
OUT=$OUT STAGES="info variants" VARIANTS_GRID=d80 VARIANTS="main padded-head-dim" VARIANTS_S=${VARIANTS_S:-170} \
  VARIANTS_TIMEOUT_S=${VARIANTS_TIMEOUT_S:-200} bash benchmarks/attention/gpu_run.sh
log 2.7B ctx 1024 batch 4
timeout ${B1_S:-150} $BENCH -p 2.7B -t 1024 --batch 4 --runs $R/b1024
log 2.7B ctx 4096 batch 1
timeout ${B3_S:-110} $BENCH -p 2.7B -t 4096 --batch 1 --runs $R/b4096
for d in $R/*/*/; do cp "$d/results.jsonl" "$OUT/bench-$(basename "$(dirname "$d")").jsonl" 2>/dev/null; done
log tests
timeout ${TESTS_S:-170} python3 -m pytest -q -rf -m gpu -p no:cacheprovider tests/attention/test_attention_gpu.py \
  -k "float64 or (autotuned and 80) or (modes and 80) or (repeatable and 80) or sdpa_fp32" 2>&1 | tail -n 30 | tee "$OUT/tests.log"
log done
} 2>&1 | tee "$OUT/log.txt"

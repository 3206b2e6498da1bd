#!/usr/bin/env bash
# One H100 call: the fused loss's Triton kernel (GPU tests, timing against its PyTorch path and the
# eager logits, in the 8-layer 8B step), the bf16 memory model's saved tensors on CUDA, and the GPU
# tests outside attention (with ALL_GPU_TESTS=1). Run from the repository root with PYTHONPATH=src; results under $OUT.
set -u
mkdir -p "$OUT"
{ nvidia-smi; python -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > "$OUT/env.txt" 2>&1
# SIGINT at the limit: pytest still prints its summary.
timeout -s INT 240 python -m pytest -q -m gpu -p no:cacheprovider tests/ops tests/profile/test_memory_model.py 2>&1 | tail -30 | tee "$OUT/gpu-tests-ops.log"
for precision in bf16 fp32; do
  python benchmarks/scripts/memory_saved_tensors.py cuda "$precision" > "$OUT/memory-saved-$precision-cuda.txt" 2>&1
  tail -1 "$OUT/memory-saved-$precision-cuda.txt"
done
timeout 200 python benchmarks/scripts/fused_loss_gpu.py "$OUT/fused-loss.jsonl" 16384 32768 2>&1 | tail -12
timeout -s INT 150 python -m lmperf.cli bench -p cs336-8b --layers 8 -t 32768 --batch 1 --modes train-step --precisions bf16 \
  --param-dtype bf16 --attention sdpa --loss eager,fused --checkpoint selective --compile compile --warmup 2 --steps 3 \
  --runs "$OUT/runs" > "$OUT/one-gpu-8-layers.log" 2>&1; tail -15 "$OUT/one-gpu-8-layers.log"
if [ "${ALL_GPU_TESTS:-0}" = 1 ]; then
  timeout -s INT 240 python -m pytest -q -m gpu -p no:cacheprovider tests --ignore=tests/attention --ignore=tests/ops 2>&1 | tail -30 > "$OUT/gpu-tests-rest.log"
  tail -5 "$OUT/gpu-tests-rest.log"
fi
(cd "$OUT" && tar czf runs.tgz runs && rm -rf runs)

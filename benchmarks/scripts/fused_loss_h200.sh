#!/usr/bin/env bash
# The rows of benchmarks/fused-loss-h200.md in one H200 call: the fused loss against eager logits,
# and its row kernel alone, at the 8B head's shapes, and the 8B step with 8 layers
# on one H200 with each option switched (loss eager/fused x compile off/on), plus the GPU tests of
# the loss and of the memory model. Run from the repository root with PYTHONPATH=src; results under $OUT.
set -u
mkdir -p "$OUT"
{ nvidia-smi; python -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > "$OUT/env.txt" 2>&1
# SIGINT at the limit: pytest still prints its summary.
timeout -s INT 90 python -m pytest -q -m gpu -p no:cacheprovider tests/ops tests/profile/test_memory_model.py 2>&1 | tail -4 | tee "$OUT/gpu-tests.log"
timeout 100 python benchmarks/scripts/fused_loss_gpu.py "$OUT/fused-loss.jsonl" 32768 2>&1 | tail -8
timeout -s INT 200 python -m lmperf.cli bench -p cs336-8b --layers 8 -t 32768 --batch 1 --modes train-step --precisions bf16 \
  --param-dtype bf16 --attention sdpa --loss eager,fused --checkpoint selective --compile compile --warmup 2 --steps 3 \
  --runs "$OUT/runs" > "$OUT/one-gpu-8-layers.log" 2>&1; tail -12 "$OUT/one-gpu-8-layers.log"
# the fused loss without torch.compile, a separate process (the page's third step row)
timeout -s INT 150 python -m lmperf.cli bench -p cs336-8b --layers 8 -t 32768 --batch 1 --modes train-step --precisions bf16 \
  --param-dtype bf16 --attention sdpa --loss fused --checkpoint selective --compile eager --warmup 2 --steps 3 \
  --runs "$OUT/runs-eager" > "$OUT/one-gpu-8-layers-eager.log" 2>&1; tail -12 "$OUT/one-gpu-8-layers-eager.log"
(cd "$OUT" && tar czf runs.tgz runs runs-eager && rm -rf runs runs-eager)

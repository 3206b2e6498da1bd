#!/usr/bin/env bash
# The CS336 leaderboard step on 2 H200s (device kind nvidia-h200-x2), one call of at most ~9 min:
#   A. the GPU tests of the fused loss and the step options;
#   B. cs336-8b, 34 layers, 32,768 tokens, one sequence per GPU, FSDP2 (bf16 parameters and AdamW
#      state), selective checkpointing, fused linear cross-entropy, compiled blocks, SDPA: the
#      usual row plus leaderboard_ms (do_bench of the whole step); if it yields no ok row, the same
#      eager with full checkpointing;
#   C. the same step on ONE H200 with 8 layers (for single-GPU comparisons between sessions);
#   D. if time is left, B with fp32 master weights (bf16 autocast).
# Each stage has its own limit inside a global deadline; rows are written as they finish.
# Run from the repository root: `LMPERF_COMMIT=<sha> bash benchmarks/scripts/leaderboard_h200x2.sh`.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
OUT=${OUT:-out}; DEADLINE=$((SECONDS + ${BUDGET_S:-540}))
RUNS="$OUT/runs"; mkdir -p "$RUNS"
LMPERF=(python3 -m lmperf.cli)
STEP=(-p cs336-8b -t 32768 --batch 1 --modes train-step --precisions bf16 --attention sdpa --loss fused
      --warmup 1 --steps 3 --leaderboard-warmup-ms 2000 --leaderboard-rep-ms 8000)
source benchmarks/scripts/stages.sh
ok_rows() { cat "$RUNS"/$1/*/results.jsonl 2>/dev/null | grep -c '"status": "ok"'; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'GPUs', torch.cuda.device_count())"
  echo "commit ${LMPERF_COMMIT:-?}"
} > "$OUT/env.txt" 2>&1; cat "$OUT/env.txt"
stage gpu-tests 70 python3 -m pytest -q -m gpu tests/ops tests/test_step_options.py
stage fsdp2-bf16params 330 "${LMPERF[@]}" bench --nproc 2 --strategy fsdp "${STEP[@]}" --compile compile \
  --param-dtype bf16 --checkpoint selective --runs "$RUNS/main"
if [ "$(ok_rows main)" = 0 ]; then
  stage fsdp2-bf16params-eager-full 240 "${LMPERF[@]}" bench --nproc 2 --strategy fsdp "${STEP[@]}" --compile eager \
    --param-dtype bf16 --checkpoint full --runs "$RUNS/fallback"
fi
stage one-gpu-8-layers 110 "${LMPERF[@]}" bench "${STEP[@]}" --layers 8 --compile compile --param-dtype bf16 \
  --checkpoint selective --runs "$RUNS/one-gpu"
stage fsdp2-fp32params 200 "${LMPERF[@]}" bench --nproc 2 --strategy fsdp "${STEP[@]}" --compile compile \
  --param-dtype fp32 --checkpoint selective --runs "$RUNS/fp32params"
cat "$RUNS"/*/*/results.jsonl > "$OUT/rows.jsonl" 2>/dev/null
tar -czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$RUNS"
python3 - "$OUT/rows.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r.get("nproc"), r.get("strategy"), r.get("param_dtype"), r.get("checkpoint"), r.get("compile"), r["status"],
          "mean_ms", r.get("mean_ms"), "leaderboard_ms", r.get("leaderboard_ms"), "peak_GB", r.get("peak_memory_gb"),
          "cold_ms", r.get("cold_ms"), "mfu", r.get("mfu"), (r.get("error") or "")[:200])
PY

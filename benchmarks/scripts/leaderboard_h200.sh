#!/usr/bin/env bash
# One H200: cs336-8b cut to 8 layers at 32k context (the leaderboard step's shape, one sequence),
# fused loss, compiled blocks, SDPA; checkpoint policies and parameter precision side by side.
# Also the GPU tests of the fused loss. Everything lands under $OUT; stages have their own limits.
set -u
export PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT/runs"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } 2>&1 | tee "$OUT/env.txt"
timeout 70 python3 -m pytest -q -m gpu tests/ops 2>&1 | tee "$OUT/pytest-gpu.log"
COMMON=(-p cs336-8b -t 32768 --layers 8 --batch 1 --modes train-step --precisions bf16 --compile compile
        --attention sdpa --loss fused --warmup 1 --steps 2 --leaderboard-warmup-ms 1000 --leaderboard-rep-ms 4000
        --runs "$OUT/runs")
timeout 230 python3 -m lmperf.cli bench "${COMMON[@]}" --param-dtype bf16 --checkpoint selective,none,full 2>&1 | tee "$OUT/bench-bf16-params.log"
timeout 90 python3 -m lmperf.cli bench "${COMMON[@]}" --param-dtype fp32 --checkpoint selective 2>&1 | tee "$OUT/bench-fp32-params.log"
cat "$OUT"/runs/*/results.jsonl > "$OUT/rows.jsonl"
tar -czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$OUT/runs"
python3 - "$OUT/rows.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["param_dtype"], r["checkpoint"], r["status"], "mean_ms", r.get("mean_ms"), "do_bench_ms", r.get("leaderboard_ms"),
          "peak_GB", r.get("peak_memory_gb"), "cold_ms", r.get("cold_ms"), r.get("error", "")[:150])
PY

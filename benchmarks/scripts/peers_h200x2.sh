#!/usr/bin/env bash
# Peers of lmperf on 2 H200s (device kind nvidia-h200-x2), in one call of ~4-5 min:
#   A. Liger-Kernel's fused linear cross-entropy beside lmperf's, on GPU 0, at the 8B head's
#      shapes (benchmarks/scripts/fused_loss_peers.py): correctness vs fp64, then time and memory;
#   B. torchtitan's Llama 3 at cs336-8b widths, 32,768 tokens, one sequence per GPU, 2 GPUs,
#      bf16, FSDP2, selective per-op checkpointing, compiled blocks and loss
#      (benchmarks/scripts/torchtitan_step.py), with the leaderboard's do_bench figure;
#   C. the same with full checkpointing, if B gave no row or the deadline still allows it.
# The wheels the image lacks travel in .device-wheels/ (carry it). Each stage has its own limit
# inside a global deadline (BUDGET_S, default 300 s). Two files come back: the rows in
# $OUT/peers.jsonl and the logs in $OUT/peers-logs.tgz (names that other scripts' files in the
# same $OUT do not use).
# Run from the repository root: `OUT=$OUT bash benchmarks/scripts/peers_h200x2.sh`; with
# PEERS=titan-op only B runs, with PEERS=liger-titan-op A and B (beside lmperf's headline in
# leaderboard_h200x2.sh's phases 4 and 5).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTORCH_ALLOC_CONF=expandable_segments:True  # as torchtitan's run_train.sh
export HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1  # torchtitan imports `datasets`; nothing is downloaded
ROOT=${OUT:-out}; OUT="$ROOT/peers-logs"; DEADLINE=$((SECONDS + ${BUDGET_S:-300}))
ROWS="$ROOT/peers.jsonl"; mkdir -p "$OUT"
WHEELS=(torchtitan liger_kernel tyro docstring_parser typeguard torchdata datasets dill multiprocess)
SITE=/tmp/peers-site
source benchmarks/scripts/stages.sh
titan_ok_rows() { cat "$ROWS" 2>/dev/null | grep -c '"what": "torchtitan train step", "status": "ok"'; }

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
  $(for w in "${WHEELS[@]}"; do echo .device-wheels/"$w"-*.whl; done) > "$OUT/install.log" 2>&1 \
  || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH="src:$SITE"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, triton, torchtitan, liger_kernel, datasets; print('torch', torch.__version__, 'triton', \
triton.__version__, 'torchtitan', torchtitan.__version__, 'GPUs', torch.cuda.device_count())"
} > "$OUT/env.txt" 2>&1; cat "$OUT/env.txt"

VISIBLE=${CUDA_VISIBLE_DEVICES:-0,1}  # the GPUs given to this script: Liger takes the first
[ "${PEERS:-all}" = titan-op ] || stage liger 120 env CUDA_VISIBLE_DEVICES="${VISIBLE%%,*}" python3 benchmarks/scripts/fused_loss_peers.py "$ROWS"
TITAN=(python3 -m torch.distributed.run --standalone --nproc-per-node 2 benchmarks/scripts/torchtitan_step.py "$ROWS"
       --warmup 1 --steps 3)
stage torchtitan-op 240 "${TITAN[@]}" --ac op --leaderboard-warmup-ms "${TITAN_WARMUP_MS:-2000}" \
  --leaderboard-rep-ms "${TITAN_REP_MS:-8000}"
if [ "${PEERS:-all}" = all ] && { [ "$(titan_ok_rows)" = 0 ] || [ "$(left)" -ge 120 ]; }; then
  stage torchtitan-full 200 "${TITAN[@]}" --ac full
fi

[ -f "$ROWS" ] && python3 - "$ROWS" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["what"].startswith("torchtitan") and r["status"] != "ok":
        print("torchtitan", r["activation_checkpoint"], r["status"], "rank", r["rank"], r["error"][:200])
    elif r["what"].startswith("torchtitan"):
        print("torchtitan", r["activation_checkpoint"], "mean_ms", round(r["mean_ms"]), "leaderboard_ms",
              r.get("leaderboard_ms") and round(r["leaderboard_ms"]), "peak_GB", [round(g, 1) for g in r["peak_memory_gb_ranks"]],
              "cold_ms", round(r["cold_ms"]), "mfu", r["mfu"] and round(r["mfu"], 3))
    elif "median over rounds" in r["what"] or "correctness" in r["what"]:
        print({k: v for k, v in r.items() if k not in ("env", "what")})
PY
(cd "$ROOT" && tar -czf peers-logs.tgz peers-logs && rm -rf peers-logs)

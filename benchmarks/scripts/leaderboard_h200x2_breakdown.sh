#!/usr/bin/env bash
# Second call on 2 H200s: where the cs336-8b 32k step's time goes, and what each option buys.
#   P. the best configuration of leaderboard_h200x2.sh (FSDP2, bf16 parameters, fused loss,
#      selective checkpointing, compiled blocks, SDPA) with one profiled step: kernel time by
#      category, NCCL time and the part of it not overlapped with compute;
#   G. the options one at a time: eager loss / fused loss × full / selective checkpointing.
# Run from the repository root: `LMPERF_COMMIT=<sha> bash benchmarks/scripts/leaderboard_h200x2_breakdown.sh`.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
OUT=${OUT:-out}; DEADLINE=$((SECONDS + ${BUDGET_S:-380}))
RUNS="$OUT/runs"; mkdir -p "$RUNS"
STEP=(--nproc 2 --strategy fsdp -p cs336-8b -t 32768 --batch 1 --modes train-step --precisions bf16
      --attention sdpa --compile compile --param-dtype bf16 --warmup 1 --steps 2)
left() { echo $((DEADLINE - SECONDS)); }
stage() {  # stage NAME LIMIT_S ARGS...
  local name=$1 limit=$2; shift 2
  [ "$(left)" -lt 45 ] && { echo "== $name skipped: $(left) s left"; return 1; }
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  echo "== $name (limit ${limit} s)"; local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "== $name rc=$rc wall $((SECONDS - t0)) s"; grep -v "W1123\|^\[rank" "$OUT/$name.log" | tail -n 12; return $rc
}
stage profile 170 python3 -m lmperf.cli bench-dist "${STEP[@]}" --loss fused --checkpoint selective --profile-steps 1 --runs "$RUNS/profile"
stage options 400 python3 -m lmperf.cli bench-dist "${STEP[@]}" --loss fused,eager --checkpoint full --runs "$RUNS/options"
cat "$RUNS"/*/*/results.jsonl > "$OUT/rows.jsonl" 2>/dev/null
cp "$(ls "$RUNS"/profile/*/timeline-*.png 2>/dev/null | head -1)" "$OUT/timeline.png" 2>/dev/null
find "$RUNS" -name '*.json' -size +5M -delete  # raw traces stay behind; the rows hold their sums
tar -czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$RUNS"
python3 - "$OUT/rows.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r.get("loss"), r.get("checkpoint"), r["status"], "mean_ms", r.get("mean_ms"), "peak_GB", r.get("peak_memory_gb"),
          "comm_ms", r.get("comm_ms"), "exposed_ms", r.get("exposed_ms"), "by_cat", r.get("kernel_ms_by_category"), (r.get("error") or "")[:200])
PY

#!/usr/bin/env bash
# The CS336 leaderboard step's rows (benchmarks/leaderboard-h200x2.md) on one 4 x H200 machine
# (device kind nvidia-h200-x4), one call per phase (each under ~6 min); lmperf's step on GPUs 0,1
# while GPUs 2,3 run the phase's other work at the same time:
#   1. GPUs 0,1: SDPA with selective checkpointing; then lmperf's attention with selective,
#      selective:8 and selective:14 in one pair of processes. GPUs 2,3: peers_h200x2.sh (Liger's
#      fused loss on GPU 2, then torchtitan's step on both).
#   2. GPUs 0,1: selective:18 with the leaderboard's do_bench (10 s warm-up, 30 s repetitions),
#      then fp32 master weights with selective:8. (When the page's rows were taken, GPUs 2,3 ran
#      the distributed page's collectives and steps meanwhile.)
#   3. GPUs 0,1: selective-mm with the leaderboard's do_bench. GPUs 2,3: selective:20, then one
#      profiled step of selective-mm (kernel time by category, communication overlap).
#   4. GPUs 0,1: selective-mm with the leaderboard's do_bench, then the same with NCCL held to 4
#      channels (4 SMs) instead of its default. GPUs 2,3: one profiled step of selective-mm with
#      the per-kernel table (each GEMM beside the same GEMM alone), then torchtitan's per-op
#      checkpointed step (peers_h200x2.sh, PEERS=titan-op).
#   5. GPUs 0,1: selective-mm with the leaderboard's do_bench, then the same with inductor's
#      coordinate-descent tuning of its generated kernels. GPUs 2,3: the profiled step with the
#      per-kernel table, then Liger's loss and torchtitan's per-op step with the leaderboard's
#      10 s / 30 s do_bench (peers_h200x2.sh, PEERS=liger-titan-op).
#   6. GPUs 0,1: selective-mm-out (the output projection's output kept too), then selective-mm,
#      each with the leaderboard's do_bench, one pair of processes after the other. GPUs 2,3:
#      Liger's loss and torchtitan's per-op step with the 10 s / 30 s do_bench, then the profiled
#      step of selective-mm-out with the per-kernel table. nvidia-smi logs every GPU's SM clock,
#      power and throttle reasons each half second ($OUT/smi.csv).
#   7. How many blocks can keep the output projection's output before the memory cliff: GPUs 0,1
#      selective-mm, then 12 blocks of selective-mm-out; GPUs 2,3 8 blocks, then 20; each with the
#      leaderboard's do_bench, the rows with the allocator's retries, clocks logged as in phase 6.
#   8. On a 2 x H200 machine (device kind nvidia-h200-x2, GPUs 0,1 only): AdamW alone over one
#      rank's shards (benchmarks/scripts/adamw_alone.py: PyTorch's fused and foreach, lmperf's);
#      then selective-mm with PyTorch's fused AdamW and with lmperf's (--optimizer torch,lmperf:
#      one pair of processes, the leaderboard's do_bench for each). Clocks logged as in phase 6.
#   9. The same machine, the next call: 12 and 20 blocks of selective-mm-out with lmperf's AdamW
#      in one pair of processes, the leaderboard's do_bench for each, clocks logged.
#  10. On a 2 x H200 machine: the headline configuration (12 blocks of selective-mm-out, lmperf's
#      AdamW) with the leaderboard's do_bench; then Liger's loss and torchtitan's per-op step with
#      the 10 s / 30 s do_bench (peers_h200x2.sh, PEERS=liger-titan-op) on the same two GPUs; then
#      the GPU tests (`pytest -m gpu`, $OUT/gpu-tests.log). Clocks logged.
# Every step: cs336-8b, 32,768 tokens, one sequence per GPU, bf16 parameters and AdamW state,
# FSDP2, fused loss, compiled blocks, one warm-up step and four timed ones. Rows: $OUT/runs/NAME/
# <stamp>-bench-dist/results.jsonl (and $OUT/peers.jsonl); logs beside them; each run directory
# and its log packed in $OUT/run-NAME.tgz as soon as the run ends.
# Run from the repository root: `OUT=$OUT bash benchmarks/scripts/leaderboard_h200x2.sh PHASE`.
set -u
PHASE=${1:?usage: leaderboard_h200x2.sh 1|2|3|4|5|6|7|8|9|10}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True PYTHONPATH=src
OUT=${OUT:-out}; RUNS="$OUT/runs"; mkdir -p "$RUNS"
STEP=(python3 -m lmperf.cli bench-dist -p cs336-8b -t 32768 --batch 1 --modes train-step --precisions bf16
      --loss fused --compile compile --warmup 1 --steps 4 --nproc 2 --strategy fsdp --timeout-s 240)
LEADERBOARD=(--leaderboard-warmup-ms 10000 --leaderboard-rep-ms 30000)
on() {  # on GPUS NAME ARGS...: the step on those GPUs, its run directory $RUNS/NAME, its log beside it
  local gpus=$1 name=$2; shift 2
  CUDA_VISIBLE_DEVICES=$gpus "${STEP[@]}" "$@" --runs "$RUNS/$name" > "$RUNS/$name.log" 2>&1
  echo "== $name rc=$? $(date -u +%H:%M:%S)"; grep -E "^\| " "$RUNS/$name.log" | tail -n 4
  # Packed as soon as it ends: a run directory lies too deep to come back from the device by
  # itself, and a call that runs out of time never reaches a packing step at its end.
  tar -czf "$OUT/run-$name.tgz" -C "$OUT" "runs/$name" "runs/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
case $PHASE in
  1)
    CUDA_VISIBLE_DEVICES=2,3 BUDGET_S=300 OUT="$OUT" bash benchmarks/scripts/peers_h200x2.sh > "$OUT/peers.log" 2>&1 &
    on 0,1 sdpa --param-dtype bf16 --attention sdpa --checkpoint selective
    on 0,1 triton --param-dtype bf16 --attention triton --checkpoint selective,selective:8,selective:14
    wait; tail -n 12 "$OUT/peers.log" ;;
  2)
    on 0,1 k18 --param-dtype bf16 --attention triton --checkpoint selective:18 "${LEADERBOARD[@]}"
    on 0,1 fp32-master --param-dtype fp32 --attention triton --checkpoint selective:8 ;;
  3)
    on 0,1 mm --param-dtype bf16 --attention triton --checkpoint selective-mm "${LEADERBOARD[@]}" &
    { on 2,3 k20 --param-dtype bf16 --attention triton --checkpoint selective:20
      on 2,3 mm-profile --param-dtype bf16 --attention triton --checkpoint selective-mm --steps 2 --profile-steps 1; }
    wait ;;
  4)
    { on 2,3 mm-profile --param-dtype bf16 --attention triton --checkpoint selective-mm --steps 2 --profile-steps 1
      CUDA_VISIBLE_DEVICES=2,3 PEERS=titan-op BUDGET_S=260 OUT="$OUT" bash benchmarks/scripts/peers_h200x2.sh \
        > "$OUT/peers.log" 2>&1; tail -n 4 "$OUT/peers.log"; } &
    on 0,1 mm --param-dtype bf16 --attention triton --checkpoint selective-mm "${LEADERBOARD[@]}"
    NCCL_MAX_NCHANNELS=4 NCCL_MAX_CTAS=4 on 0,1 mm-nccl4 --param-dtype bf16 --attention triton \
      --checkpoint selective-mm "${LEADERBOARD[@]}"
    wait ;;
  5)
    { on 2,3 mm-profile --param-dtype bf16 --attention triton --checkpoint selective-mm --steps 2 --profile-steps 1
      CUDA_VISIBLE_DEVICES=2,3 PEERS=liger-titan-op BUDGET_S=330 TITAN_WARMUP_MS=10000 TITAN_REP_MS=30000 \
        OUT="$OUT" bash benchmarks/scripts/peers_h200x2.sh > "$OUT/peers.log" 2>&1; tail -n 6 "$OUT/peers.log"; } &
    on 0,1 mm --param-dtype bf16 --attention triton --checkpoint selective-mm "${LEADERBOARD[@]}"
    TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1 on 0,1 mm-cdt --param-dtype bf16 --attention triton \
      --checkpoint selective-mm
    wait
    grep -h '"leaderboard_ms"' "$RUNS"/*/*/results.jsonl | python3 -c "import json,sys; [print(r['checkpoint'], r.get('leaderboard_ms'), r['mean_ms']) for r in map(json.loads, sys.stdin)]"
    rm -rf "$RUNS" ;;  # each run is packed in $OUT/run-NAME.tgz
  6)
    nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
      --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
    SMI=$!
    { CUDA_VISIBLE_DEVICES=2,3 PEERS=liger-titan-op BUDGET_S=330 TITAN_WARMUP_MS=10000 TITAN_REP_MS=30000 \
        OUT="$OUT" bash benchmarks/scripts/peers_h200x2.sh > "$OUT/peers.log" 2>&1; tail -n 6 "$OUT/peers.log"
      on 2,3 out-profile --param-dtype bf16 --attention triton --checkpoint selective-mm-out --steps 2 --profile-steps 1; } &
    on 0,1 out --param-dtype bf16 --attention triton --checkpoint selective-mm-out "${LEADERBOARD[@]}"
    on 0,1 mm --param-dtype bf16 --attention triton --checkpoint selective-mm "${LEADERBOARD[@]}"
    wait; kill $SMI
    grep -h '"leaderboard_ms"' "$RUNS"/*/*/results.jsonl | python3 -c "import json,sys; [print(r['checkpoint'], r.get('leaderboard_ms'), r['mean_ms'], r['peak_memory_gb'], r.get('peak_reserved_gb'), r.get('alloc_retries')) for r in map(json.loads, sys.stdin)]"
    rm -rf "$RUNS" ;;  # each run is packed in $OUT/run-NAME.tgz
  7)
    nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
      --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
    SMI=$!
    { on 2,3 out8 --param-dtype bf16 --attention triton --checkpoint "selective-mm-out*8+selective-mm*26" "${LEADERBOARD[@]}"
      on 2,3 out20 --param-dtype bf16 --attention triton --checkpoint "selective-mm-out*20+selective-mm*14" \
        "${LEADERBOARD[@]}"; } &
    on 0,1 mm --param-dtype bf16 --attention triton --checkpoint selective-mm "${LEADERBOARD[@]}"
    on 0,1 out12 --param-dtype bf16 --attention triton --checkpoint "selective-mm-out*12+selective-mm*22" "${LEADERBOARD[@]}"
    wait; kill $SMI
    rm -rf "$RUNS" ;;  # each run is packed in $OUT/run-NAME.tgz
  8)
    nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
      --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
    SMI=$!
    CUDA_VISIBLE_DEVICES=0 python3 benchmarks/scripts/adamw_alone.py "$OUT/adamw.jsonl" --rounds 4 2>&1 | tail -n 12
    on 0,1 mm-adamw --param-dtype bf16 --attention triton --checkpoint selective-mm --optimizer torch,lmperf \
      "${LEADERBOARD[@]}"
    kill $SMI
    rm -rf "$RUNS" ;;  # each run is packed in $OUT/run-NAME.tgz
  9)
    nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
      --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
    SMI=$!
    on 0,1 out-adamw --param-dtype bf16 --attention triton --optimizer lmperf \
      --checkpoint "selective-mm-out*12+selective-mm*22,selective-mm-out*20+selective-mm*14" "${LEADERBOARD[@]}"
    kill $SMI
    rm -rf "$RUNS" ;;  # each run is packed in $OUT/run-NAME.tgz
  10)
    nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
      --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
    SMI=$!
    on 0,1 head --param-dtype bf16 --attention triton --optimizer lmperf \
      --checkpoint "selective-mm-out*12+selective-mm*22" "${LEADERBOARD[@]}"
    PEERS=liger-titan-op BUDGET_S=300 TITAN_WARMUP_MS=10000 TITAN_REP_MS=30000 OUT="$OUT" \
      bash benchmarks/scripts/peers_h200x2.sh > "$OUT/peers.log" 2>&1; tail -n 6 "$OUT/peers.log"
    kill $SMI
    LIMIT_S=240 OUT="$OUT" bash benchmarks/scripts/gpu_tests.sh
    rm -rf "$RUNS" ;;  # each run is packed in $OUT/run-NAME.tgz
  *) echo "PHASE is 1 to 10" >&2; exit 2 ;;
esac

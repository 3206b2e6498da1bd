#!/usr/bin/env bash
# Data-parallel benchmarks on 2 H200s of one host (device kind nvidia-h200-x2), about 5 minutes:
#   1. collectives: all-reduce / all-gather / reduce-scatter, 1 MiB .. 1 GiB, NCCL, 2 processes;
#   2. one-GPU baselines (a plain process) for scaling efficiency;
#   3. xl and 2.7B train steps, bf16, contexts 512 and 1024, DDP and FSDP2, 2 processes;
#   4. communication share / exposed time per DDP bucket size (1, 25, 100 MB) and for FSDP2
#      with and without reshard-after-forward, xl at context 512, from profiled steps;
#   memory per rank (measured, beside the analytic model) comes with every step row. Attention is
#   the repo's default (naive), the one lmperf.analysis.memory models.
# Run from the repository root: `LMPERF_COMMIT=<sha> bash benchmarks/scripts/distributed_h200x2.sh`
# (every row's environment names that commit where the copy has no .git). Everything lands in $OUT
# (4 files: log.txt, distributed-h200x2.md, busbw.png, runs.tar.gz, plus one DDP timeline PNG).
set -uo pipefail
# NVLink multicast stays off on this host (it can take the shared GPUs out of service).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-out}
RUNS=$(mktemp -d)
LOG="$OUT/log.txt"
mkdir -p "$OUT"
LMPERF=(python3 -m lmperf.cli)  # no console script in a PYTHONPATH=src copy; timeout needs a program
STEP_ARGS=(--modes train-step --precisions bf16 --attention naive --batch 4 --warmup 3 --steps 6 --timeout-s 180)

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch; print("torch", torch.__version__, "GPUs", torch.cuda.device_count(), "NCCL", torch.cuda.nccl.version())'

  timeout 75 "${LMPERF[@]}" comm --nproc 2 --device cuda --iters 20 --runs "$RUNS/comm"
  timeout 100 "${LMPERF[@]}" bench-dist --nproc 1 --strategy none --presets xl,2.7B --contexts 512,1024 \
    "${STEP_ARGS[@]}" --runs "$RUNS/baseline"
  timeout 150 "${LMPERF[@]}" bench-dist --nproc 2 --strategy ddp,fsdp --presets xl,2.7B --contexts 512,1024 \
    "${STEP_ARGS[@]}" --runs "$RUNS/steps"
  timeout 120 "${LMPERF[@]}" bench-dist --nproc 2 --strategy ddp,fsdp --bucket-mb 1,25,100 --reshard true,false \
    --presets xl --contexts 512 --profile-steps 3 "${STEP_ARGS[@]}" --runs "$RUNS/overlap"

  "${LMPERF[@]}" dist-report "$RUNS"/*/* --out "$OUT/distributed-h200x2.md" \
    --title "Data-parallel training on 2 H200s (DDP and FSDP2 over NCCL)"
} 2>&1 | tee "$LOG"

cp "$RUNS"/comm/*/busbw.png "$OUT/" 2>/dev/null
cp "$(ls "$RUNS"/overlap/*/timeline-*ddp-25*.png 2>/dev/null | head -1)" "$OUT/timeline-ddp-25.png" 2>/dev/null
tar -czf "$OUT/runs.tar.gz" -C "$RUNS" .
ls -la "$OUT"

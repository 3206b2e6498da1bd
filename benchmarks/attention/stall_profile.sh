#!/usr/bin/env bash
# Nsight Compute stall profile of the attention kernels (stall_profile.py's cases), one device call.
# Leaves in $OUT: stall_profile.log (the cases in order, then ncu's console) and stall-profile.tgz
# (the .ncu-rep report; details.csv, the sections' tables; raw.csv, every metric per kernel;
# source-sass.csv, per-instruction warp-stall samples of each kernel).
# Usage, in the repo root: LMPERF_COMMIT=<sha> bash benchmarks/attention/stall_profile.sh
# STALL_WORKLOAD: another workload (script and arguments) whose launches sit in `prof` ranges.
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton-cache
OUT=${OUT:-/tmp/out}; WORK=/tmp/stall-profile; mkdir -p "$OUT" "$WORK" "$TRITON_CACHE_DIR"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; ncu --version | tail -n 1; } > "$OUT/info.log" 2>&1
SECTIONS="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy
  --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SourceCounters"
timeout "${PROFILE_S:-420}" ncu --nvtx --nvtx-include "prof/" --clock-control none $SECTIONS --import-source no \
  -f -o "$WORK/stalls" python3 ${STALL_WORKLOAD:-benchmarks/attention/stall_profile.py} 2>&1 | tee "$OUT/stall_profile.log"
ncu -i "$WORK/stalls.ncu-rep" --page details --csv > "$WORK/details.csv" 2>&1
ncu -i "$WORK/stalls.ncu-rep" --page raw --csv --print-units base > "$WORK/raw.csv" 2>&1
ncu -i "$WORK/stalls.ncu-rep" --page source --csv --print-source sass > "$WORK/source-sass.csv" 2>&1
ls -la "$WORK" | tee -a "$OUT/stall_profile.log"
# the CSV exports only: the .ncu-rep (25 MB for six cases) would pass the 16 MB a returned file may have
tar -czf "$OUT/stall-profile.tgz" -C "$WORK" details.csv raw.csv source-sass.csv

#!/usr/bin/env bash
# `lmperf memory` on the user's own model shapes, in one call of the device tool (H100):
#   LMPERF_COMMIT=<commit> bash benchmarks/scripts/memory_hf_h100.sh   (run dirs as tarballs, log under $OUT)
# A Llama-3.2-1B-shaped config (GQA 32/8, tied, vocabulary 128,256) with SDPA, and explicit
# shapes over a preset (medium with 4 K/V heads, tied, vocabulary 32,000) with naive attention.
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"; R=/tmp/lmperf-mem; rm -rf $R; mkdir -p $R
log() { echo "== $(date +%T) $*"; }
pack() { # pack NAME DIR: tar a run dir, leaving out files over 14 MB (large snapshots)
  find "$2" -type f -size -14M ! -name .lock -print0 | tar -czf "$OUT/$1.tgz" --null -T -
}
{
log env; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; echo "commit ${LMPERF_COMMIT:-unset}"
log gpu tests; timeout 100 python3 -m pytest -q -m gpu tests/profile -p no:cacheprovider 2>&1 | tail -6
log llama-1b-gqa sdpa
timeout 75 python3 -m lmperf.cli memory --hf-config benchmarks/configs/llama-1b-gqa.json -t 512,2048 \
  --precisions bf16,fp32 --attention sdpa --snapshot-context 512 --runs $R/llama
pack memory-llama-1b-gqa $R/llama/*
log medium explicit shapes naive
timeout 50 python3 -m lmperf.cli memory -p medium --kv-heads 4 --tie-embeddings --vocab 32000 -t 256,1024 \
  --precisions bf16,fp32 --attention naive --snapshot-context 256 --runs $R/medium
pack memory-medium-gqa-tied $R/medium/*
log done
} 2>&1 | tee "$OUT/log.txt"

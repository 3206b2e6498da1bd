#!/usr/bin/env bash
# The GPU measurements behind benchmarks/profile-h100.md (the profiles and the 2.7B memory
# rows), in one call of the device tool:
#   LMPERF_COMMIT=<commit> bash benchmarks/scripts/profile_h100.sh   (tarballs, kernel names, log under $OUT)
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"; R=/tmp/lmperf-runs; mkdir -p $R
log() { echo "== $(date +%T) $*"; }
lm() { python3 -m lmperf.cli "$@"; }
pack() { # pack NAME DIR...: tar the run dirs, leaving out files over 14 MB (big traces)
  local name=$1; shift
  find "$@" -type f -size -14M -print0 | tar -czf "$OUT/$name.tgz" --null -T -
}
{
log env; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; which nsys || echo "no nsys"
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
git rev-parse --short HEAD 2>/dev/null || echo "no git here"
log gpu tests; python3 -m pytest -q -m gpu tests/profile -p no:cacheprovider 2>&1 | tail -5
for prec in bf16 fp32; do
  log small $prec; lm profile -p small -t 512 --precision $prec --warmup 2 --steps 3 --runs $R/small-$prec --top 5 >/dev/null
  pack profile-small-$prec $R/small-$prec
done
log small bf16 sdpa; lm profile -p small -t 512 --precision bf16 --attention sdpa --warmup 1 --steps 1 --runs $R/small-sdpa --top 5 >/dev/null
pack profile-small-sdpa $R/small-sdpa
log memory 2.7B; timeout 75 python3 -m lmperf.cli memory -p 2.7B -t 128,256,512 --precisions bf16,fp32 --runs $R/mem
pack memory-2.7B $R/mem
for prec in bf16 fp32; do
  log 2.7B $prec; timeout $([ $prec = fp32 ] && echo 100 || echo 80) python3 -m lmperf.cli profile -p 2.7B -t 512 --precision $prec --warmup 1 --steps 2 --runs $R/big-$prec --top 5 >/dev/null
  pack profile-2.7B-$prec $R/big-$prec
done
log kernel names
python3 - <<'PY' > "$OUT/kernel_names.txt"
import glob, json
names = set()
for path in glob.glob("/tmp/lmperf-runs/*/*/results.jsonl"):
    for line in open(path):
        row = json.loads(line)
        names.update(k["name"] for k in row.get("kernels", []))
print("\n".join(sorted(names)))
PY
log done
} 2>&1 | tee "$OUT/log.txt"

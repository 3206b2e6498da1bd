#!/usr/bin/env bash
# One device call for lmperf attention (~300 s), timed stages: sweep points, the issue's compiled
# target shape, 32k context at d=128, FlexAttention, then the GPU tests (in the time left).
# The second call (commit 71ef77f of this file) also ran benchmarks/attention/variants.py.
# Usage, in the repo root: LMPERF_COMMIT=<sha> bash benchmarks/attention/gpu_run.sh
# Logs and run directories go to $OUT (runs packed as runs.tgz); the last lines are a short table.
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton-cache
OUT=${OUT:-/tmp/out}; RUNS=/tmp/runs; mkdir -p "$OUT" "$RUNS" "$TRITON_CACHE_DIR"
SWEEP="python3 -m lmperf.cli attention --runs $RUNS --dtypes bf16 --rep-ms 50"

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > "$OUT/info.log" 2>&1

# Third call: the points the second one ran out of time for (d=128 causal), the compiled target
# shape with each backward beside cuDNN, cuDNN at 32k, FlexAttention at 16k.
timeout "${SWEEP_S:-55}" $SWEEP --impls triton-atomic,triton-split,sdpa-cudnn,sdpa-flash --contexts 1024,4096,16384 \
  --head-dims 128 --causal causal > "$OUT/sweep.log" 2>&1

timeout "${TARGET_S:-55}" python3 - > "$OUT/target.log" 2>&1 <<'PY'
from lmperf.attention_bench.benchmark import time_compiled_fwd_sum_bwd as t
for impl in ("triton-split", "triton-atomic", "sdpa-cudnn"):
    try:
        print(f"target (16,16384,64) causal compiled fwd+sum().backward() {impl}: {t(impl):.3f} ms")
    except Exception as error:  # one failing peer must not cost the others
        print(f"target {impl}: failed: {str(error).splitlines()[0][:160]}")
PY

timeout "${LONG_S:-25}" $SWEEP --impls sdpa-cudnn,triton-atomic --contexts 32768 --head-dims 128 \
  --causal causal > "$OUT/sweep32k.log" 2>&1
timeout "${FLEX_S:-30}" $SWEEP --impls flex-compiled --contexts 16384 --head-dims 64,128 --causal causal > "$OUT/flex.log" 2>&1
tar -czf "$OUT/runs.tgz" -C "$RUNS" .

# The new paths' tests first (backward modes, GQA, repeatability, model layout, compile), then the rest.
NEW="modes or repeatable or layout or compile"
timeout "${TESTS_S:-60}" python3 -m pytest -q -rf -m gpu -p no:cacheprovider tests/attention -k "$NEW" > "$OUT/tests.log" 2>&1
timeout "${MORE_TESTS_S:-50}" python3 -m pytest -q -rf -m gpu -p no:cacheprovider tests/attention -k "not ($NEW)" >> "$OUT/tests.log" 2>&1

grep -E "passed|failed|FAILED|rror" "$OUT/tests.log"; cat "$OUT/target.log"
python3 - "$RUNS" <<'PY'
import json, sys, pathlib
rows = [json.loads(l) for f in sorted(pathlib.Path(sys.argv[1]).glob("*/results.jsonl")) for l in open(f)]
by = {(r["impl"], r["head_dim"], r["causal"], r["seq"]): r for r in rows}
impls = sorted({r["impl"] for r in rows})
print("fwd+bwd TFLOP/s  d causal seq | " + " | ".join(impls))
for d, c, s in sorted({k[1:] for k in by}):
    cells = [by.get((i, d, c, s), {}) for i in impls]
    print(f"{d} {c} {s} | " + " | ".join(f"{r['fwd_bwd_tflops']:.0f}" if r.get("fwd_bwd_tflops") else r.get("status", "-") for r in cells))
PY

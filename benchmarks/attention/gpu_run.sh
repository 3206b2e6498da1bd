#!/usr/bin/env bash
# One device call for lmperf attention: the stages named in STAGES, each under its own timeout so
# the call ends inside the device limit and every stage leaves its log in $OUT.
#   info      GPU, driver, torch/triton versions
#   variants  benchmarks/attention/variants.py (VARIANTS names which; all by default)
#   sweep     lmperf attention with the default kernels beside SDPA cuDNN (SWEEP_IMPLS, SWEEP_CONTEXTS,
#             SWEEP_HEAD_DIMS choose others)
#   rounds    the final sweep: lmperf attention --rounds ${ROUNDS:-4} beside SDPA cuDNN at 1k/2k/4k/16k keys,
#             d64 and d128, causal and not, once per name in SWEEPS (default "1 2"), one after the
#             other; each sweep's rows go to $OUT/results-NAME.jsonl, its log and table to $OUT/rounds-NAME.*
#   target    the issue's (16, 16384, 64) causal compiled fwd + .sum().backward() shape (TARGET_CONSUMERS:
#             the Gluon forward's consumer warp groups per program to compare)
#   tests-a, tests-b, tests-c   pytest -m gpu tests/attention in three parts (-x -q, summaries kept)
#   tests-k   the tests pytest -k "$TESTS_K" selects
#   tests-rest  pytest -m gpu outside tests/attention (profiler, counters, fused loss, model, bench, distributed)
#   model     lmperf bench, compiled bf16 train step, --attention sdpa,triton: 2.7B at context 1024
#             (batch 4) and 4096 (batch 1), and the 8B block shape (2 layers) at 32768; MODEL_ROUNDS=2
#             runs them again with the attentions in reverse order; MODEL_SHAPES picks (b1024 b4096 d128)
#   tests-par tests-a, tests-b and tests-c at once (correctness only: no test times anything)
#   ab        gluon_backward_ab.py with AB_PATCH (a patch of flash_gluon_backward against the committed one)
# Usage, in the repo root: STAGES="info variants tests-a" LMPERF_COMMIT=<sha> bash benchmarks/attention/gpu_run.sh
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton-cache
OUT=${OUT:-/tmp/out}; RUNS=/tmp/runs; mkdir -p "$OUT" "$RUNS" "$TRITON_CACHE_DIR"
PYTEST="python3 -m pytest -x -q -rf -m gpu -p no:cacheprovider tests/attention/test_attention_gpu.py"

for stage in ${STAGES:-info variants tests-a}; do
  echo "=== $stage $(date -u +%H:%M:%S)"
  case $stage in
    info) { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.limit,serial --format=csv
            python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } 2>&1 | tee "$OUT/info.log" ;;
    variants) timeout "${VARIANTS_TIMEOUT_S:-330}" python3 benchmarks/attention/variants.py "$OUT/variants.jsonl" \
                ${VARIANTS:-} 2>&1 | tee "$OUT/variants.log" ;;
    sweep) timeout "${SWEEP_S:-150}" python3 -m lmperf.cli attention --runs "$RUNS" --dtypes bf16 --rep-ms 50 \
             --impls "${SWEEP_IMPLS:-triton,sdpa-cudnn}" --contexts "${SWEEP_CONTEXTS:-4096,16384}" \
             --head-dims "${SWEEP_HEAD_DIMS:-64,128}" 2>&1 | tail -n 80 | tee "$OUT/sweep.log"
           tar -czf "$OUT/runs.tgz" -C "$RUNS" . ;;
    rounds) for name in ${SWEEPS:-1 2}; do
              timeout "${ROUNDS_S:-170}" python3 -m lmperf.cli attention --runs "$RUNS/rounds-$name" --impls triton,sdpa-cudnn \
                --contexts 1024,2048,4096,16384 --head-dims 64,128 --dtypes bf16 --causal both --rounds "${ROUNDS:-4}" \
                > "$OUT/rounds-$name.log" 2>&1; echo "sweep $name rc $?"
              cp "$RUNS/rounds-$name"/*/results.jsonl "$OUT/results-$name.jsonl"; cp "$RUNS/rounds-$name"/*/results.md "$OUT/rounds-$name.md"
            done ;;
    target) timeout "${TARGET_S:-80}" python3 - 2>&1 <<'PY' | tee "$OUT/target.log"
import os
from lmperf.attention import flash_gluon
from lmperf.attention_bench.benchmark import time_compiled_fwd_sum_bwd as t
# TARGET_CONSUMERS="2 3": triton with each count of the Gluon forward's consumer warp groups
# beside cuDNN, two rounds (the second in reverse order) instead of the four peers below.
consumers = [int(c) for c in os.environ.get("TARGET_CONSUMERS", "").split()]
peers = [(impl, None) for impl in ("triton", "triton-no-gluon", "triton-split", "sdpa-cudnn")]
if consumers:
    peers = [("triton", c) for c in consumers] + [("sdpa-cudnn", None)]
default = dict(flash_gluon.CONSUMERS)
for round_peers in ([peers, peers[::-1]] if consumers else [peers]):
    for impl, count in round_peers:  # triton: the default backward for the shape
        flash_gluon.CONSUMERS = {**default, 64: count, 128: count} if count else default
        label = impl if count is None else f"{impl} {count} consumers"
        try:
            print(f"target (16,16384,64) causal compiled fwd+sum().backward() {label}: {t(impl):.3f} ms", flush=True)
        except Exception as error:  # one failing peer must not cost the others
            print(f"target {label}: failed: {str(error).splitlines()[0][:160]}")
PY
    ;;
    tests-a) timeout "${TESTS_A_S:-150}" $PYTEST -k "float64 or autotuned" 2>&1 | tee "$OUT/tests-a.log" ;;
    tests-b) timeout "${TESTS_B_S:-150}" $PYTEST -k "modes or repeatable or layout" 2>&1 | tee "$OUT/tests-b.log" ;;
    tests-c) timeout "${TESTS_C_S:-150}" $PYTEST -k "not (float64 or autotuned or modes or repeatable or layout)" 2>&1 | tee "$OUT/tests-c.log" ;;
    tests-par) for part in a b c; do GPU_RUN_CHILD=1 STAGES=tests-$part bash "$0" > "$OUT/tests-par-$part.out" 2>&1 & done; wait
               cat "$OUT"/tests-par-*.out ;;
    model) # MODEL_ROUNDS=2 (or more): even rounds run the two attentions in reverse order (clocks drift)
           for round in $(seq 1 "${MODEL_ROUNDS:-1}"); do
           order=$([ $((round % 2)) = 0 ] && echo triton,sdpa || echo sdpa,triton)
           COMMON="--modes train-step --precisions bf16 --compile compile --attention $order --warmup 3 --steps 10"
           for shape in "b1024|-p 2.7B -t 1024 --batch 4" "b4096|-p 2.7B -t 4096 --batch 1" \
             "d128|-p small --d-model 4096 --heads 32 --kv-heads 8 --d-ff 14336 --layers 2 --vocab 128256 --untie-embeddings --max-context 32768 --loss fused -t 32768 --batch 1"; do
             name=${shape%%|*}
             case " ${MODEL_SHAPES:-b1024 b4096 d128} " in *" $name "*) ;; *) continue ;; esac
             echo "== round $round $name $order $(date -u +%H:%M:%S)" | tee -a "$OUT/model.log"
             timeout "${MODEL_S:-150}" python3 -m lmperf.cli bench ${shape#*|} $COMMON --runs "$RUNS/model-$name-r$round" 2>&1 | grep -E "│ (2.7B|small)" | tee -a "$OUT/model.log"
             cp "$RUNS/model-$name-r$round"/*/results.jsonl "$OUT/bench-$name-r$round.jsonl" 2>/dev/null
           done; done ;;
    tests-k) timeout "${TESTS_K_S:-240}" $PYTEST -k "$TESTS_K" 2>&1 | tee "$OUT/tests-k.log" ;;
    tests-rest) timeout "${TESTS_REST_S:-240}" python3 -m pytest -q -rf -m gpu -p no:cacheprovider tests --ignore=tests/attention 2>&1 | tee "$OUT/tests-rest.log" ;;
    ab) timeout "${AB_S:-240}" python3 benchmarks/attention/gluon_backward_ab.py "$AB_PATCH" "$OUT/ab.jsonl" 2>&1 | tee "$OUT/ab.log"
        python3 benchmarks/attention/trials/gluon_backward_summary.py "$OUT/ab.jsonl" | tee "$OUT/ab-summary.log" ;;
  esac
done
echo "=== done $(date -u +%H:%M:%S)"
grep -hE "passed|failed|error" "$OUT"/tests-*.log 2>/dev/null
# The device returns at most 8 files: past that, the console logs go into one archive, so rows
# (*.jsonl) are never the ones left behind (2026-11-25: a call's variants.jsonl was). An archive
# an earlier run left is merged, not overwritten (its logs first, the newer ones kept over them:
# 2026-11-26, a second run's archive replaced the first's and its logs were lost). A caller that
# greps a log after this must look inside logs.tgz, or give each run its own OUT.
if [ "$(find "$OUT" -maxdepth 1 -type f | wc -l)" -gt 8 ] && [ -z "${GPU_RUN_CHILD:-}" ]; then
  (cd "$OUT" && { [ ! -f logs.tgz ] || tar -xzf logs.tgz --skip-old-files; } \
     && tar -czf logs.tgz --remove-files $(ls *.log *.out 2>/dev/null | grep -v '^info.log$'))
fi

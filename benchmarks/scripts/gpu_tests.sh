#!/usr/bin/env bash
# The GPU tests on a device call (`pytest -m gpu`), written so that a cut-off run still names its
# failures: each test's outcome is logged as it ends (-v), and the time limit sends SIGINT, on
# which pytest prints the failures and errors of the tests that ran (-rfE) before it exits.
# Usage, from the repository root with PYTHONPATH=src:
#   OUT=DIR [LIMIT_S=300] [JOBS=8] bash benchmarks/scripts/gpu_tests.sh [PYTEST ARGS, default tests]
# Log: $OUT/gpu-tests.log; its last lines are printed.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
ARGS=("$@"); [ ${#ARGS[@]} -eq 0 ] && ARGS=(tests)
JOBS=${JOBS:-8}
PARALLEL=(); [ "$JOBS" -gt 1 ] && python3 -c "import xdist" 2>/dev/null && PARALLEL=(-n "$JOBS")
T0=$SECONDS
timeout -s INT -k 20 "${LIMIT_S:-300}" python3 -m pytest -m gpu -v -rfE --durations=10 -p no:cacheprovider \
  "${PARALLEL[@]}" "${ARGS[@]}" > "$OUT/gpu-tests.log" 2>&1
RC=$?
echo "gpu tests rc=$RC wall=$((SECONDS - T0)) s (124 or 130: stopped at the limit)"
grep -E "^(FAILED|ERROR) |^=+ .* in [0-9.]+s" "$OUT/gpu-tests.log" | tail -n 25
exit $RC

#!/usr/bin/env bash
# One device call (one H100 or H200) for issue 48: the served-kinds captures of lmperf.pmc.corpus
# whose names start with PREFIX (r: the development set; a blind batch's letter, as
# benchmarks/pages.py's SERVED_BLIND lists them, each batch written down before capture; m: the
# limits of lmperf.pmc.limits), 4 at a time (SWEEP_JOBS) through pmc_sweep_h100.sh,
# with Liger-Kernel installed from a wheel folder (the GPU machines have no internet). Commit the
# captures untouched before scoring a blind batch (the limits' captures go to tests/pmc/fixtures/limits,
# where tests/pmc/test_limits.py holds them to their claims; a blind batch's to .../served):
#   python -m lmperf.pmc.accuracy tests/pmc/fixtures/served score-N-served-blindK-COMMIT.md
# Run from the project root with PYTHONPATH=src, LMPERF_COMMIT set and WHEELS naming the folder.
set -u
export PYTHONUNBUFFERED=1
if [ $# -ne 1 ]; then echo "usage: pmc_served_batch.sh PREFIX (r, a blind batch letter, or m)" >&2; exit 2; fi
PREFIX=$1
python -m pip install --no-deps --no-index "${WHEELS:-.device-wheels}"/liger_kernel-*.whl > "$OUT/pip.log" 2>&1 \
  || echo "Liger-Kernel not installed: its captures will fail (see pip.log)"
NAMES=$(python -c "from lmperf.pmc.corpus import corpus; print(','.join(n for n, *_ in corpus() if n.startswith('${PREFIX}_')))")
if [ -z "$NAMES" ]; then echo "pmc_served_batch.sh: no corpus entry starts with ${PREFIX}_" >&2; exit 2; fi
SWEEP_ONLY="$NAMES" SWEEP_JOBS="${SWEEP_JOBS:-4}" SWEEP_BUDGET_S="${SWEEP_BUDGET_S:-480}" CAPTURE_TIMEOUT_S="${CAPTURE_TIMEOUT_S:-420}" \
  bash benchmarks/scripts/pmc_sweep_h100.sh

#!/usr/bin/env bash
# One device call (H100) for issue 12: the fourth blind batch (lmperf.pmc.corpus _BLIND, names d_*,
# written down before any capture), training steps last, 4 captures at a time, through
# pmc_sweep_h100.sh. Commit the captures before scoring them, then score once:
#   python -m lmperf.pmc.accuracy tests/pmc/fixtures/sweep benchmarks/data/pmc/score-N-sweep-blind4-COMMIT.md
# Run from the project root with PYTHONPATH=src and LMPERF_COMMIT set; output in $OUT.
set -u
export PYTHONUNBUFFERED=1
D=$(python3 -c "from lmperf.pmc.corpus import _BLIND; print(','.join(n for n, *_ in _BLIND if n.startswith('d_')))")
SWEEP_ONLY="$D" SWEEP_JOBS=4 SWEEP_BUDGET_S="${SWEEP_BUDGET_S:-520}" CAPTURE_TIMEOUT_S=480 \
  bash benchmarks/scripts/pmc_sweep_h100.sh

#!/usr/bin/env bash
# One device call (H100) for issue 12: the fifth blind batch (lmperf.pmc.corpus _BLIND, names e_*,
# written down before any capture), as pmc_blind4_h100.sh did the fourth. Commit the captures
# before scoring them, then score once:
#   python -m lmperf.pmc.accuracy tests/pmc/fixtures/sweep benchmarks/data/pmc/score-N-sweep-blind5-COMMIT.md
# Run from the project root with PYTHONPATH=src and LMPERF_COMMIT set; output in $OUT.
set -u
export PYTHONUNBUFFERED=1
E=$(python3 -c "from lmperf.pmc.corpus import _BLIND; print(','.join(n for n, *_ in _BLIND if n.startswith('e_')))")
SWEEP_ONLY="$E" SWEEP_JOBS=4 SWEEP_BUDGET_S="${SWEEP_BUDGET_S:-520}" CAPTURE_TIMEOUT_S=480 \
  bash benchmarks/scripts/pmc_sweep_h100.sh

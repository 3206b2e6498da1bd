#!/usr/bin/env bash
# One device call (H100) for issue 12: a blind batch of lmperf.pmc.corpus _BLIND (names PREFIX_*,
# written down before any capture), 4 captures at a time, through pmc_sweep_h100.sh. The fourth
# batch ran as `... pmc_blind_batch_h100.sh d`, the fifth as `... e`. Commit the captures before
# scoring them, then score once and add the score as rows (benchmarks/pmc-accuracy.md says how):
#   python -m lmperf.pmc.accuracy tests/pmc/fixtures/sweep score-N-sweep-blindK-COMMIT.md
# Run from the project root with PYTHONPATH=src and LMPERF_COMMIT set; output in $OUT.
set -u
export PYTHONUNBUFFERED=1
if [ $# -ne 1 ]; then echo "usage: pmc_blind_batch_h100.sh PREFIX (the batch letter, e.g. e)" >&2; exit 2; fi
PREFIX=$1
NAMES=$(python3 -c "from lmperf.pmc.corpus import _BLIND; print(','.join(n for n, *_ in _BLIND if n.startswith('${PREFIX}_')))")
if [ -z "$NAMES" ]; then echo "pmc_blind_batch_h100.sh: no _BLIND entry starts with ${PREFIX}_" >&2; exit 2; fi
SWEEP_ONLY="$NAMES" SWEEP_JOBS=4 SWEEP_BUDGET_S="${SWEEP_BUDGET_S:-520}" CAPTURE_TIMEOUT_S=480 \
  bash benchmarks/scripts/pmc_sweep_h100.sh

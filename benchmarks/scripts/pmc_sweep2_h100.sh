#!/usr/bin/env bash
# Issue 12's second capture call: the vocabulary-counter probe (pmc_vocab_counters.py, under
# ncu beside the captures) and the sweep entries not captured yet (SWEEP_ONLY, most wanted first),
# through pmc_sweep_h100.sh (each capture under its own ncu timeout, tarred at the end).
# Run from the project root with PYTHONPATH=src and LMPERF_COMMIT set.
set -u
P=benchmarks/scripts/pmc_vocab_counters.py
M=$(python -c "import sys; sys.path.insert(0, 'benchmarks/scripts'); import pmc_vocab_counters as p; print(','.join(p.COUNTERS))")
( timeout 150 ncu --clock-control none --nvtx --nvtx-include "regex:N.*/" --metrics "$M" --csv \
    --page raw --print-units base python "$P" > "$OUT/vocab_counters.csv" 2> "$OUT/vocab_counters.err";
  python "$P" --summary "$OUT/vocab_counters.csv" > "$OUT/vocab_counters.txt" 2>&1 ) &
PROBE=$!
bash benchmarks/scripts/pmc_sweep_h100.sh
wait $PROBE
echo "--- vocabulary counters (counter x scale / N·V·bytes)"
cat "$OUT/vocab_counters.txt"; tail -3 "$OUT/vocab_counters.err"

#!/usr/bin/env bash
# One device call (H100): first issue 14's check of the fp32 GQA fix (`lmperf memory` on the
# 1B Llama-shaped config in fp32, where SDPA's math fallback had saved every score), then issue
# 12's second blind batch (lmperf.pmc.corpus _BLIND, every entry held out) beside the Llama GQA
# eager generate capture, through pmc_sweep_h100.sh (3 captures at a time, each under its own
# ncu limit). Run from the project root with PYTHONPATH=src and LMPERF_COMMIT set; output in $OUT.
set -u
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/mem"
echo "== $(date -u +%T) memory llama-1b-gqa fp32"
timeout "${MEMORY_S:-80}" python3 -m lmperf.cli memory --hf-config benchmarks/configs/llama-1b-gqa.json \
  -t 512,2048 --precisions fp32 --attention sdpa --snapshot-context 512 --runs /tmp/mem-fp32 2>&1 | tail -25
for d in /tmp/mem-fp32/*/; do cp "$d"/{results.jsonl,memory.md,manifest.json} "$OUT/mem/" 2>/dev/null; done
echo "== $(date -u +%T) pmc blind batch 2"
BLIND=$(python3 -c "from lmperf.pmc.corpus import _BLIND; print(','.join(n for n, *_ in _BLIND))")
SWEEP_ONLY="g_llama_h14_kv2_p64,$BLIND" SWEEP_JOBS=3 SWEEP_BUDGET_S="${SWEEP_BUDGET_S:-470}" \
  CAPTURE_TIMEOUT_S=440 bash benchmarks/scripts/pmc_sweep_h100.sh
echo "== $(date -u +%T) done"

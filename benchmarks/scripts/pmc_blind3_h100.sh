#!/usr/bin/env bash
# One device call (H100) for issue 12: the Qwen2 and Mistral generate captures, the third blind
# batch (lmperf.pmc.corpus _BLIND, names c_*), then the sweep's training steps, 4 captures at a
# time (generate first: they take longest), through pmc_sweep_h100.sh.
# Run from the project root with PYTHONPATH=src and LMPERF_COMMIT set; output in $OUT.
set -u
export PYTHONUNBUFFERED=1
C=$(python3 -c "from lmperf.pmc.corpus import _BLIND; print(','.join(n for n, *_ in _BLIND if n.startswith('c_')))")
SWEEP_ONLY="g_qwen2_h14_kv2_p50,g_mistral_h8_kv2_p100,$C,s_gpt2_h12_t200_train,s_llama_h14_kv2_t77_flash_train" \
  SWEEP_JOBS=4 SWEEP_BUDGET_S="${SWEEP_BUDGET_S:-500}" CAPTURE_TIMEOUT_S=480 bash benchmarks/scripts/pmc_sweep_h100.sh

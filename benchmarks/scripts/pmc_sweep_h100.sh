#!/usr/bin/env bash
# Issue 12's capture call: the generalisation sweep and the generate captures of
# lmperf.pmc.corpus (--sweep), each under its own ncu timeout, one JSON line per capture as it
# finishes, everything tarred into $OUT/pmc_sweep.tar at the end (and after a time limit too).
# Run from the project root with PYTHONPATH=src and LMPERF_COMMIT set.
set -u
CAPS=/tmp/pmc_sweep
mkdir -p "$CAPS"
pack() { tar -cf "$OUT/pmc_sweep.tar" -C "$CAPS" --exclude='*.kernels.csv' . ; cp "$CAPS/collect_log.jsonl" "$OUT/" 2>/dev/null; }
trap pack EXIT
python - <<'PY' > "$CAPS/environment.json"
import json, os, subprocess, datetime, torch, triton
smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip().splitlines()[0].split(", ")  # GPU 0's
try:
    import transformers; tf = transformers.__version__
except ImportError:
    tf = None
print(json.dumps({"device": smi[0], "driver": smi[1], "cuda": torch.version.cuda,
                  "torch": torch.__version__, "triton": triton.__version__, "transformers": tf,
                  "commit": os.environ.get("LMPERF_COMMIT", "unknown"),
                  "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), "host": "vm"}))
PY
cat "$CAPS/environment.json"
ncu --version | tail -1
timeout "${SWEEP_BUDGET_S:-370}" python -m lmperf.pmc.corpus "$CAPS" --sweep --only "${SWEEP_ONLY:-}" \
    --budget-s "$(( ${SWEEP_BUDGET_S:-370} - 10 ))" --jobs "${SWEEP_JOBS:-3}" \
    --capture-timeout-s "${CAPTURE_TIMEOUT_S:-240}"
echo "--- summary"
grep -c '"ok' "$CAPS/collect_log.jsonl"; grep -v '"ok' "$CAPS/collect_log.jsonl" | cut -c1-300

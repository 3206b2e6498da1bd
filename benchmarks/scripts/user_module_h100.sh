#!/usr/bin/env bash
# The user's own nn.Module on an H100 (issue 47), one device call, about 4 minutes:
#   1. bench of the from-scratch Transformer of the tests (tests/user_models/scratch_lm.py: own
#      Linear, Embedding, RMSNorm, rotary, einsum attention, SwiGLU) at ~0.94B parameters
#      (d_model 2048, 16 layers, 16 heads, d_ff 5504, vocabulary 32000), context 1024, batch 4,
#      bf16, forward / forward-backward / train step, eager and compiled;
#   2. bench of a Hugging Face Llama instance with random weights built from a config
#      (tests/user_models/hf_llama.py: TinyLlama's widths at 16 layers, ~0.85B), the same grid
#      (compiled: the train step only);
#   3. an independent timer for the scratch model's eager bf16 train step: a plain CUDA-event loop
#      over the same module, AdamW and loss, none of lmperf's timing, printed beside lmperf's row;
#   4. the scratch model through profile (train step), memory (its parts at the train step's
#      peak, checkpointing off and on, with the memory_viz snapshots) and precision, and the GPU
#      tests of tests/user_module.
# Run from the repository root on the GPU machine:
#   PYTHONPATH=src bash benchmarks/scripts/user_module_h100.sh        (rows and logs in $OUT)
# USER_MODULE_TINY=1 runs the same stages at tiny widths on a CPU (a check of the script).
set -euo pipefail
OUT=${OUT:-/tmp/user_module_out}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src}
SCRATCH=tests/user_models/scratch_lm.py:build
HF=tests/user_models/hf_llama.py:build
if [ "${USER_MODULE_TINY:-0}" = 1 ]; then
  SCRATCH_ARGS='{"vocab_size": 500, "context_length": 64, "d_model": 64, "num_layers": 2, "num_heads": 4, "d_ff": 128}'
  HF_ARGS='{"vocab_size": 500, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}'
  DEVICE=cpu PREC=fp32 CTX=64 BATCH=2 WARMUP=1 STEPS=2
else
  SCRATCH_ARGS='{"vocab_size": 32000, "context_length": 1024, "d_model": 2048, "num_layers": 16, "num_heads": 16, "d_ff": 5504}'
  HF_ARGS='{}'  # the factory's defaults: ~0.85B
  DEVICE=cuda PREC=bf16 CTX=1024 BATCH=4 WARMUP=5 STEPS=10
fi
LMPERF="python3 -m lmperf.cli"
BENCH="$LMPERF bench --device $DEVICE --precisions $PREC -t $CTX --batch $BATCH --warmup $WARMUP --steps $STEPS --runs $OUT/runs"
log() { echo "== $(date -u +%H:%M:%S) $*"; }

{
log environment
python3 -c "import torch, platform; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else platform.processor())"
python3 -c "import transformers; print('transformers', transformers.__version__)"
git log -1 --format='commit %h %s' 2>/dev/null || echo "commit ${LMPERF_COMMIT:-unknown}"

log scratch model, eager and compiled
$BENCH --module "$SCRATCH" --module-args "$SCRATCH_ARGS" --compile eager,compile
log Hugging Face Llama, eager
$BENCH --module "$HF" --module-args "$HF_ARGS" --compile eager
log Hugging Face Llama, compiled train step
$BENCH --module "$HF" --module-args "$HF_ARGS" --compile compile --modes train-step

log independent timer: the scratch model, eager train step, a plain event loop
SCRATCH_ARGS="$SCRATCH_ARGS" DEVICE=$DEVICE PREC=$PREC CTX=$CTX BATCH=$BATCH OUT="$OUT" python3 - <<'EOF'
import glob, json, os, statistics, time

import torch
import torch.nn.functional as F

from tests.user_models.scratch_lm import build

args = json.loads(os.environ["SCRATCH_ARGS"])
batch, context = int(os.environ["BATCH"]), int(os.environ["CTX"])
cuda = os.environ["DEVICE"] == "cuda"
device = torch.device(os.environ["DEVICE"])
dtype = torch.bfloat16 if os.environ["PREC"] == "bf16" else None
with device:
    model = build(**args)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda)
data = torch.randint(0, args["vocab_size"], (batch, context + 1), device=device)
inputs, targets = data[:, :-1], data[:, 1:]


def train_step():
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
        logits = model(inputs)
    F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten()).backward()
    optimizer.step()


for _ in range(5):
    train_step()
times = []
for _ in range(20):
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); train_step(); end.record(); torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    else:
        begin = time.perf_counter(); train_step(); times.append((time.perf_counter() - begin) * 1e3)
rows = [json.loads(line) for path in glob.glob(f"{os.environ['OUT']}/runs/*/results.jsonl") for line in open(path)]
lmperf = [r for r in rows if r["preset"] == "scratch_lm:build" and r["mode"] == "train-step" and r["compile"] == "eager"]
clock = "CUDA events" if cuda else "host clock"
print(f"independent loop ({clock}): train step mean {statistics.fmean(times):.2f} ms, "
      f"median {statistics.median(times):.2f} ms over {len(times)} steps after 5 warm-up")
for r in lmperf:
    print(f"lmperf bench row: train step mean {r['mean_ms']:.2f} ms, median {r['median_ms']:.2f} ms over {r['steps']} steps")
EOF

log profile, memory and precision of the scratch model
$LMPERF profile --module "$SCRATCH" --module-args "$SCRATCH_ARGS" --modes train-step --device $DEVICE --precision $PREC \
  --context $CTX --batch $BATCH --warmup 2 --steps 2 --top 5 --runs "$OUT/profile"
$LMPERF memory --module "$SCRATCH" --module-args "$SCRATCH_ARGS" --checkpoint none,full --precisions $PREC -t $CTX \
  --batch $BATCH --runs "$OUT/memory"
$LMPERF precision --module "$SCRATCH" --module-args "$SCRATCH_ARGS" --device $DEVICE
python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/user_module 2>&1 | tail -n 15

log summary
OUT="$OUT" python3 - <<'EOF'
import glob, json, os

rows = [json.loads(line) for path in sorted(glob.glob(f"{os.environ['OUT']}/runs/*/results.jsonl")) for line in open(path)]
with open(f"{os.environ['OUT']}/user_module_rows.jsonl", "w") as out:
    for r in rows:
        out.write(json.dumps(r, sort_keys=True) + "\n")
print("| model | params | mode | compile | status | mean ms | TFLOP/s | MFU | FLOPs / (6N + attn) | peak GB | counted |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    cells = [r["preset"], f"{r['params'] / 1e9:.3f}B", r["mode"], r["compile"], r["status"],
             f"{r['mean_ms']:.2f}" if r["mean_ms"] else "-", f"{r['tflops']:.1f}" if r["tflops"] else "-",
             f"{r['mfu']:.1%}" if r["mfu"] else "-",
             f"{r['flops_over_transformer']:.4f}" if r["flops_over_transformer"] else "-",
             f"{r['peak_memory_gb']:.1f}" if r["peak_memory_gb"] else "-", r["flop_count"]]
    print("| " + " | ".join(str(c) for c in cells) + " |")
print("errors:", [r["error"] for r in rows if r["status"] != "ok"])
EOF
log done
} 2>&1 | tee "$OUT/log.txt"

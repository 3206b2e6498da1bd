#!/bin/bash
# lmperf bench on the user's own model (issue 14), one H100 call of at most 300 s:
# the GPU tests of the model shapes and of bench, then two Hugging Face configs, bf16 autocast,
# compiled blocks, SDPA and lmperf's Triton attention, the AdamW training step:
#   Llama-3.2-1B-style (GQA 32:8, tied embeddings, vocabulary 128,256) at context 2048;
#   GPT-2 small (GELU MLP, tied embeddings) at its own longest context, 1024.
# Run from the repository root with PYTHONPATH=src; rows and logs land under $OUT.
set -u
out=${OUT:-/tmp/lmperf-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
timeout 75 python -m pytest -q -m gpu tests/test_model_shapes.py tests/test_bench_gpu.py 2>&1 | tail -8 | tee "$out/gpu-tests.txt"
common=(--precisions bf16 --compile compile --attention sdpa,triton --modes train-step --warmup 2 --steps 8 --runs "$out/runs")
timeout 120 python -m lmperf.cli bench --hf-config benchmarks/configs/llama-1b-gqa.json -t 2048 "${common[@]}" 2>&1 | tail -12
timeout 80 python -m lmperf.cli bench --hf-config benchmarks/configs/gpt2.json -t 1024 "${common[@]}" 2>&1 | tail -12
tar -czf "$out/runs.tgz" -C "$out" runs && rm -rf "$out/runs"

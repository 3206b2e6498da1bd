"""The fused linear cross-entropy on one GPU against eager logits.

Usage: python benchmarks/scripts/fused_loss_gpu.py OUT.jsonl [N ...]   (N: tokens; default 16384 32768)

Shapes of the CS336 8B step's head (d 4096, vocabulary 151,936), bf16 hidden and weight. Both
variants run in this one process on the same inputs, through public functions only: forward +
backward of the loss (`torch.autograd.grad` of hidden and weight), `triton.testing.do_bench`
median and spread, and the peak memory above the inputs. Also the row kernel alone
(`cross_entropy_rows_`) on one chunk, with the bytes it moves. lmperf.ops has no switch to its
chunked PyTorch path on CUDA, so that path is not timed here.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F
import triton

from lmperf.ops.cross_entropy_rows_triton import cross_entropy_rows_
from lmperf.ops.fused_linear_cross_entropy import default_chunk_size, fused_linear_cross_entropy
from lmperf.report.environment import environment

D_MODEL, VOCAB = 4096, 151_936


def _eager(hidden, weight, targets):
    return F.cross_entropy((hidden @ weight.T).float(), targets)


VARIANTS = {"eager": _eager, "fused-triton": fused_linear_cross_entropy}


def _time_and_peak(loss_fn, hidden, weight, targets) -> dict:
    step = lambda: torch.autograd.grad(loss_fn(hidden, weight, targets), (hidden, weight))
    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    step()
    torch.cuda.synchronize()
    peak_gb = (torch.cuda.max_memory_allocated() - base) / 1e9
    median, low, high = triton.testing.do_bench(step, warmup=200, rep=2000, quantiles=[0.5, 0.2, 0.8])
    return {
        "ms_median": round(median, 3),
        "ms_p20": round(low, 3),
        "ms_p80": round(high, 3),
        "peak_gb_above_inputs": round(peak_gb, 2),
    }


def _row_kernel_alone(n_rows: int) -> dict:
    logits = torch.randn(n_rows, VOCAB, device="cuda", dtype=torch.bfloat16)
    targets = torch.randint(0, VOCAB, (n_rows,), device="cuda")
    triton_ms = triton.testing.do_bench(lambda: cross_entropy_rows_(logits, targets, 1e-4, -100), rep=500)
    moved = 3 * logits.numel() * logits.element_size()  # two reads, one write
    return {"rows": n_rows, "triton_ms": round(triton_ms, 3), "triton_gb_per_s": round(moved / triton_ms / 1e6, 1)}


def main(out_path: str, token_counts: list[int]) -> None:
    env = environment("cuda")
    with open(out_path, "a") as out:
        chunk = default_chunk_size(VOCAB)
        row = {"what": "row kernel alone, one chunk", **_row_kernel_alone(chunk), "env": env}
        print(json.dumps(row), flush=True)
        out.write(json.dumps(row) + "\n")
        for n_tokens in token_counts:
            generator = torch.Generator(device="cuda").manual_seed(0)
            hidden = torch.randn(n_tokens, D_MODEL, device="cuda", generator=generator).bfloat16().requires_grad_()
            weight = (
                (torch.randn(VOCAB, D_MODEL, device="cuda", generator=generator) / D_MODEL**0.5)
                .bfloat16()
                .requires_grad_()
            )
            targets = torch.randint(0, VOCAB, (n_tokens,), device="cuda", generator=generator)
            for name, loss_fn in VARIANTS.items():
                try:
                    figures = _time_and_peak(loss_fn, hidden, weight, targets)
                except torch.OutOfMemoryError:
                    figures = {"status": "oom"}
                    torch.cuda.empty_cache()
                row = {
                    "what": "loss forward+backward",
                    "variant": name,
                    "tokens": n_tokens,
                    "d_model": D_MODEL,
                    "vocab": VOCAB,
                    "dtype": "bf16",
                    **figures,
                    "env": env,
                }
                print(json.dumps({k: v for k, v in row.items() if k != "env"}), flush=True)
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], [int(n) for n in sys.argv[2:]] or [16384, 32768])

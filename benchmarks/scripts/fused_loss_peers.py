"""Liger-Kernel's fused linear cross-entropy beside lmperf's, on one GPU, in one process.

Usage: python benchmarks/scripts/fused_loss_peers.py OUT.jsonl [--tokens 32768] [--rounds 3]
(from the repository root, PYTHONPATH=src, liger-kernel installed)

Variants, each `loss(hidden, weight, targets)` with mean reduction and ignore_index -100:
  lmperf        lmperf.ops.fused_linear_cross_entropy (dweight summed over chunks in fp32)
  liger         LigerFusedLinearCrossEntropyLoss() as shipped (dweight summed in the weight's dtype)
  liger-fp32acc LigerFusedLinearCrossEntropyLoss(accum_dtype=torch.float32), lmperf's accumulation

1. Correctness, on a smaller shape with bf16 inputs and some ignored targets: each variant's
   loss, dhidden and dweight against float64 autograd of F.cross_entropy over the same bf16
   values upcast (relative Frobenius error of each gradient, absolute error of the loss).
2. Speed and memory at the 8B head's shapes (tokens x d 4096, vocabulary 151,936, bf16 hidden
   and weight, the same inputs for all): forward + backward (`torch.autograd.grad` of hidden and
   weight), triton.testing.do_bench median, p20 and p80, and the peak memory above the inputs;
   `--rounds` rounds, the order reversed every other round, then the median over rounds.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import statistics
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

from fused_loss_gpu import D_MODEL, VOCAB, _time_and_peak  # same directory: run as a script
from lmperf.ops.fused_linear_cross_entropy import IGNORE_INDEX, fused_linear_cross_entropy
from lmperf.report.environment import environment

CHECK_SHAPE = (2048, 1024, 32_000)  # tokens, d, vocabulary for the correctness check
IGNORED_FRACTION = 0.1


def _liger(accum_dtype: torch.dtype | None):
    loss = LigerFusedLinearCrossEntropyLoss(ignore_index=IGNORE_INDEX, reduction="mean", accum_dtype=accum_dtype)
    return lambda hidden, weight, targets: loss(weight, hidden, targets)


VARIANTS = {
    "lmperf": fused_linear_cross_entropy,
    "liger": _liger(None),
    "liger-fp32acc": _liger(torch.float32),
}


def inputs(n_tokens: int, d_model: int, vocab: int, ignored: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator(device="cuda").manual_seed(0)
    hidden = torch.randn(n_tokens, d_model, device="cuda", generator=generator).bfloat16().requires_grad_()
    weight = (
        (torch.randn(vocab, d_model, device="cuda", generator=generator) / d_model**0.5).bfloat16().requires_grad_()
    )
    targets = torch.randint(0, vocab, (n_tokens,), device="cuda", generator=generator)
    drop = torch.rand(n_tokens, device="cuda", generator=generator) < ignored
    return hidden, weight, targets.masked_fill(drop, IGNORE_INDEX)


def _relative_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    return float((value.double() - reference).norm() / reference.norm())


def correctness(env: dict) -> Iterator[dict]:
    hidden, weight, targets = inputs(*CHECK_SHAPE, IGNORED_FRACTION)
    h64, w64 = hidden.detach().double().requires_grad_(), weight.detach().double().requires_grad_()
    ref_loss = F.cross_entropy(h64 @ w64.T, targets, ignore_index=IGNORE_INDEX)
    ref_dh, ref_dw = torch.autograd.grad(ref_loss, (h64, w64))
    for name, loss_fn in VARIANTS.items():
        loss = loss_fn(hidden, weight, targets)
        dh, dw = torch.autograd.grad(loss, (hidden, weight))
        yield {
            "what": "fused loss correctness vs fp64",
            "variant": name,
            "tokens": CHECK_SHAPE[0],
            "d_model": CHECK_SHAPE[1],
            "vocab": CHECK_SHAPE[2],
            "ignored_fraction": IGNORED_FRACTION,
            "loss": loss.item(),
            "loss_ref": ref_loss.item(),
            "loss_abs_err": abs(loss.item() - ref_loss.item()),
            "dhidden_rel_err": _relative_error(dh, ref_dh),
            "dweight_rel_err": _relative_error(dw, ref_dw),
            "dhidden_dtype": str(dh.dtype),
            "dweight_dtype": str(dw.dtype),
            "env": env,
        }


def speed(n_tokens: int, rounds: int, env: dict) -> Iterator[dict]:
    hidden, weight, targets = inputs(n_tokens, D_MODEL, VOCAB, 0.0)
    by_variant = {name: [] for name in VARIANTS}
    for round_ in range(rounds):
        order = list(VARIANTS) if round_ % 2 == 0 else list(reversed(VARIANTS))
        for name in order:
            try:
                figures = _time_and_peak(VARIANTS[name], hidden, weight, targets)
            except torch.OutOfMemoryError:
                figures = {"status": "oom"}
            torch.cuda.empty_cache()
            by_variant[name].append(figures)
            yield {
                "what": "fused loss forward+backward",
                "variant": name,
                "round": round_,
                "tokens": n_tokens,
                "d_model": D_MODEL,
                "vocab": VOCAB,
                "dtype": "bf16",
                **figures,
                "env": env,
            }
    for name, runs in by_variant.items():
        timed = [r for r in runs if "ms_median" in r]
        yield {
            "what": "fused loss forward+backward, median over rounds",
            "variant": name,
            "tokens": n_tokens,
            "d_model": D_MODEL,
            "vocab": VOCAB,
            "dtype": "bf16",
            "rounds": len(timed),
            "ms_median": statistics.median(r["ms_median"] for r in timed) if timed else None,
            "ms_median_rounds": [r["ms_median"] for r in timed],
            "peak_gb_above_inputs": max((r["peak_gb_above_inputs"] for r in timed), default=None),
            "env": env,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--tokens", type=int, default=32_768)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env = {**environment("cuda"), "liger_kernel": importlib.metadata.version("liger-kernel")}
    with open(args.out, "a") as out:
        for row in itertools.chain(correctness(env), speed(args.tokens, args.rounds, env)):
            out.write(json.dumps(row) + "\n")
            print(json.dumps({k: v for k, v in row.items() if k != "env"}), flush=True)


if __name__ == "__main__":
    main()

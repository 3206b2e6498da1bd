"""lmperf's attention at the 8B step's shape, on contiguous tensors and on the views the step hands
it (issue 46: the kernels run 6-12% slower inside the step than alone, and the step's layout is
one difference not yet timed). One GPU, one process, rounds in alternating order:

- contiguous: q, k, v and dO contiguous (B, H, T, hd), as `lmperf attention` times them;
- step: q and k contiguous, as the rotary embedding writes them anew; v a view of one fused QKV
  output (B, T, 3·H·hd) viewed (B, H, T, hd), so that a row of one head is 3·H·hd values from
  the next; dO the transpose of a contiguous (B, T, H, hd) gradient, as the output projection's
  backward hands it. This is what lmperf's model hands the kernels;
- step views: q and k views of the fused output too, bounding the step's case from the strided
  side. Usage (a GPU machine, from the
repository root): `PYTHONPATH=src python benchmarks/scripts/attention_step_views.py OUT.jsonl
[--heads 32 --seq 32768 --rounds 4]`; one JSON row per layout and round (forward and backward
ms, do_bench medians) with the environment.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch


def contiguous_inputs(batch: int, heads: int, seq: int, head_dim: int) -> tuple[torch.Tensor, ...]:
    shape = (batch, heads, seq, head_dim)
    q, k, v, grad = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    return q, k, v, grad


def step_views(batch: int, heads: int, seq: int, head_dim: int) -> tuple[torch.Tensor, ...]:
    """q, k, v as views of one fused QKV output, and dO as the transpose of a (B, T, H, hd) tensor."""
    qkv = torch.randn(batch, seq, 3 * heads * head_dim, device="cuda", dtype=torch.bfloat16)
    views = qkv.view(batch, seq, 3 * heads, head_dim).transpose(1, 2)
    q, k, v = views.split((heads, heads, heads), dim=1)
    grad = torch.randn(batch, seq, heads, head_dim, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    return q, k, v, grad


def step_inputs(batch: int, heads: int, seq: int, head_dim: int) -> tuple[torch.Tensor, ...]:
    """q, k contiguous (the rotary embedding's outputs), v and dO the step's views."""
    q, k, v, grad = step_views(batch, heads, seq, head_dim)
    return q.contiguous(), k.contiguous(), v, grad


def time_layout(inputs: tuple[torch.Tensor, ...], rep_ms: int) -> dict:
    import triton.testing

    from lmperf.attention.flash_triton import flash_attention

    q, k, v = (x.detach().requires_grad_() for x in inputs[:3])  # detach keeps the strides
    grad = inputs[3]

    def forward() -> torch.Tensor:
        return flash_attention(q, k, v, is_causal=True)

    out = forward()

    def backward() -> None:
        torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)

    return {
        "fwd_ms": triton.testing.do_bench(forward, rep=rep_ms, return_mode="median"),
        "bwd_ms": triton.testing.do_bench(backward, rep=rep_ms, return_mode="median"),
        "strides": {name: list(x.stride()) for name, x in zip(("q", "k", "v", "do"), inputs)},
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSONL file the rows are appended to")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--seq", type=int, default=32768)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--rep-ms", type=int, default=200)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("attention_step_views.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    from lmperf.report.environment import environment

    shape = (args.batch, args.heads, args.seq, args.head_dim)
    layouts = {"contiguous": contiguous_inputs(*shape), "step": step_inputs(*shape), "step views": step_views(*shape)}
    env = environment("cuda")
    with open(args.out, "a", encoding="utf-8") as out:
        for round_ in range(args.rounds):
            order = list(layouts) if round_ % 2 == 0 else list(reversed(layouts))
            for name in order:
                row = {"what": "attention layout", "layout": name, "round": round_, "batch": args.batch}
                row.update(heads=args.heads, seq=args.seq, head_dim=args.head_dim, causal=True, dtype="bf16")
                row.update(time_layout(layouts[name], args.rep_ms), env=env)
                out.write(json.dumps(row) + "\n")
                print(name, round_, f"fwd {row['fwd_ms']:.2f} ms, bwd {row['bwd_ms']:.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

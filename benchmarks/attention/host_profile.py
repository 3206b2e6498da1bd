"""Where a short attention call's host time goes: cProfile of the calls host_overhead.py times.

    PYTHONPATH=src python3 benchmarks/attention/host_profile.py OUT.txt

host_overhead.py (HOST_FWD_BWD=1) found the CPU spending 0.86-1.24 ms per forward + backward
of FlashAttention2Triton at head_dim 128 and 1-2k keys, about as long as the GPU's 0.78-1.96 ms,
against 0.19-0.32 ms for cuDNN's (benchmarks/attention/host-fwd-bwd-h100-57ee77c): short fwd+bwd
rows are then partly the host's time. Per peer (the Gluon forward and backward called directly,
FlashAttention2Triton's forward alone and forward + backward by autograd.grad, its backward's body
without autograd; d=128, 1024 keys, causal, bf16, 16k tokens; cuDNN's forward + backward beside,
and a Python autograd Function launching nothing and `clone`, through autograd.grad: the engine's
own cost): CPU microseconds per call over 200 calls issued back to back, then a cProfile of 200
more, the 25 functions with the most time of their own; last, torch.profiler's CPU table of 20
forward + backward calls of each (what the autograd engine and the ops cost, which cProfile sees
only as run_backward). Writes OUT.txt. HOST_TOKENS: tokens per batch (default 16384).
"""

import cProfile
import io
import os
import pstats
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity
from torch.profiler import profile as torch_profile

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent / "trials")]
from gluon_backward import _cudnn as cudnn  # noqa: E402  SDPA pinned to cuDNN
from host_overhead import host_us  # noqa: E402  CPU microseconds per call, calls back to back

from lmperf.attention import flash_gluon, flash_gluon_backward  # noqa: E402
from lmperf.attention.flash_triton import FlashAttention2Triton, row_delta, triton_backward  # noqa: E402


class Identity(torch.autograd.Function):
    """A Python autograd Function that launches nothing: what the engine and a Python backward
    cost on their own."""

    @staticmethod
    def forward(ctx, x):
        return torch.empty_like(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


def profile(fn, calls: int = 200) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
    return text.getvalue()


def main(out_path: str, seq: int = 1024, d: int = 128, causal: bool = True, tokens: int = 16384) -> None:
    q, k, v = (torch.randn(tokens // seq, 2048 // d, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    grad = torch.randn_like(q)
    with torch.no_grad():
        o, lse = flash_gluon.forward(q, k, v, causal)
        delta = row_delta(o, grad)
    peers = {
        "gluon-forward": lambda: flash_gluon.forward(q.detach(), k.detach(), v.detach(), causal),
        "gluon-backward": lambda: flash_gluon_backward.backward(q.detach(), k.detach(), v.detach(), grad, lse, delta,
                                                                causal),
        "row-delta": lambda: row_delta(o, grad),
        "triton-apply": lambda: FlashAttention2Triton.apply(q, k, v, causal),
        "triton-fwd-bwd": lambda: torch.autograd.grad(FlashAttention2Triton.apply(q, k, v, causal), (q, k, v), grad),
        "sdpa-cudnn-fwd-bwd": lambda: torch.autograd.grad(cudnn(q, k, v, causal), (q, k, v), grad),
        # the backward's body without autograd, and autograd without a kernel
        "triton-backward": lambda: triton_backward(q.detach(), k.detach(), v.detach(), o, lse, grad, causal, "atomic",
                                                   True),
        "identity-function-fwd-bwd": lambda: torch.autograd.grad(Identity.apply(q), (q,), grad),
        "clone-fwd-bwd": lambda: torch.autograd.grad(q.clone(), (q,), grad),
    }
    with open(out_path, "w") as out:
        for name, fn in peers.items():
            line = f"{name}: {host_us(fn):.0f} us per call on the host (d={d}, {seq} keys, causal={causal})"
            print(line, flush=True)
            out.write(f"=== {line}\n{profile(fn)}\n")
        for name in ("triton-fwd-bwd", "sdpa-cudnn-fwd-bwd"):
            for _ in range(5):  # the profiler's first calls carry its own start-up
                peers[name]()
            with torch_profile(activities=[ProfilerActivity.CPU]) as trace:
                for _ in range(20):
                    peers[name]()
            torch.cuda.synchronize()
            out.write(f"=== torch.profiler, {name}, 20 calls\n"
                      f"{trace.key_averages().table(sort_by='self_cpu_time_total', row_limit=25)}\n")


if __name__ == "__main__":
    main(sys.argv[1], tokens=int(os.environ.get("HOST_TOKENS", "16384")))  # as host_overhead.py reads it

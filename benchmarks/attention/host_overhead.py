"""Is a short attention call bound by the host? Forward time with and without the CPU's work.

    PYTHONPATH=src python3 benchmarks/attention/host_overhead.py OUT.jsonl

At 1024 keys (16k tokens, heads x head_dim = 2048, 25 heads at 80) a forward takes 0.2-0.4 ms on
an H100, and the variants' rows there scattered (the Gluon forward at head_dim 80 ran 400 TFLOP/s
in one process and 250 in another). Per point (head_dim 64, 80, 128, causal and not) and peer
(flash_gluon.forward called directly; FlashAttention2Triton.apply, the autograd path the
benchmarks time; SDPA cuDNN), two rounds, interleaved:
  - `eager_ms`: do_bench median, launches issued from Python as the benchmarks issue them;
  - `graph_ms`: do_bench_cudagraph median, the same launches replayed from a CUDA graph (no
    Python, no launcher): the GPU's own time;
  - `host_us`: CPU time per call, 200 calls issued back to back (no synchronisation between).
eager_ms well above graph_ms, and host_us near eager_ms, mean the GPU waited for the CPU.
HOST_HEAD_DIMS and HOST_SEQS (comma-separated) choose other points; HOST_FWD_BWD=1 adds the
forward + backward of FlashAttention2Triton and of cuDNN (`torch.autograd.grad`, no .grad
accumulation, so a CUDA graph can hold it): does the host bound a short fwd+bwd? HOST_TOKENS
(default 16384) sets the tokens per batch: with few, the GPU's part is short and host_us is the
CPU's own time (200 calls of a 1 ms fwd+bwd can fill the launch queue, and the CPU then waits).
"""

import itertools
import json
import os
import sys
import time
from pathlib import Path

import torch
from triton.testing import do_bench, do_bench_cudagraph

sys.path.insert(0, str(Path(__file__).resolve().parent / "trials"))
from gluon_backward import _cudnn as cudnn  # noqa: E402  SDPA pinned to cuDNN, as the A/B scripts time it

from lmperf.attention import flash_gluon  # noqa: E402
from lmperf.attention.flash_triton import FlashAttention2Triton  # noqa: E402
from lmperf.report.environment import environment  # noqa: E402


def host_us(fn, calls: int = 200) -> float:
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def _graph_ms(fn) -> float:
    """do_bench_cudagraph's median, or NaN where the call cannot be captured (one peer must not
    cost the others)."""
    try:
        return do_bench_cudagraph(fn, rep=100, return_mode="median")
    except Exception as error:
        print(f"graph capture failed: {str(error).splitlines()[0][:160]}", flush=True)
        return float("nan")


def _numbers(name: str, default: str) -> list[int]:
    return [int(n) for n in os.environ.get(name, default).split(",")]


def main(out_path: str) -> None:
    env = environment("cuda")
    tokens = int(os.environ.get("HOST_TOKENS", "16384"))
    with open(out_path, "w") as out:
        for d, seq in itertools.product(_numbers("HOST_HEAD_DIMS", "64,80,128"), _numbers("HOST_SEQS", "1024")):
            heads = (2560 if d == 80 else 2048) // d
            for causal in (False, True):
                q, k, v = (torch.randn(tokens // seq, heads, seq, d, device="cuda", dtype=torch.bfloat16,
                                       requires_grad=True) for _ in range(3))
                grad = torch.randn_like(q)
                peers = {
                    "gluon-forward": lambda: flash_gluon.forward(q.detach(), k.detach(), v.detach(), causal),
                    "triton-apply": lambda: FlashAttention2Triton.apply(q, k, v, causal),
                    "sdpa-cudnn": lambda: cudnn(q, k, v, causal),
                }
                if os.environ.get("HOST_FWD_BWD") == "1":
                    peers["triton-fwd-bwd"] = lambda: torch.autograd.grad(FlashAttention2Triton.apply(q, k, v, causal),
                                                                           (q, k, v), grad)
                    peers["sdpa-cudnn-fwd-bwd"] = lambda: torch.autograd.grad(cudnn(q, k, v, causal), (q, k, v), grad)
                for round_ in (0, 1):
                    for name in list(peers) if round_ == 0 else list(peers)[::-1]:
                        fn = peers[name]
                        row = dict(peer=name, head_dim=d, causal=causal, seq=seq, heads=heads, tokens=tokens, round=round_,
                                   eager_ms=do_bench(fn, warmup=25, rep=100, return_mode="median"),
                                   graph_ms=_graph_ms(fn), host_us=host_us(fn), env=env)
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                        print(f"r{round_} d={d} causal={causal} {name:14s} eager {row['eager_ms']:.3f} ms  graph "
                              f"{row['graph_ms']:.3f} ms  host {row['host_us']:.0f} us", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

"""Where flash_gluon_backward should take over flash_triton's backward at head_dim 64: backward
time at 1k-16k keys, causal and not, of the Gluon backward (forced on), flash_triton's atomic
backward (Gluon off) and its split backward, on the same saved tensors, two interleaved rounds
(the second in reverse order), do_bench medians. bf16, 16k tokens per batch, heads x d = 2048;
a backward counts 2.5x the forward's FLOPs (4 B H S^2 d, halved when causal).

    PYTHONPATH=src python3 benchmarks/attention/gluon_backward_lengths.py OUT.jsonl   (on an H100)
"""

import json
import sys

import torch
from triton.testing import do_bench

from lmperf.attention import flash_gluon_backward, flash_triton
from lmperf.report.environment import environment

LENGTHS = (1024, 2048, 4096, 8192, 16384)


def _atomic(q, k, v, o, lse, do, causal, gluon: bool):
    real = flash_gluon_backward.faster_here
    flash_gluon_backward.faster_here = lambda head_dim, seq_k: gluon
    try:
        return flash_triton.triton_backward(q, k, v, o, lse, do, causal, "atomic")
    finally:
        flash_gluon_backward.faster_here = real


def main(out_path: str, tokens: int = 16384, head_dim: int = 64) -> None:
    env = environment("cuda")
    with open(out_path, "w") as out:
        for causal in (False, True):
            for seq in LENGTHS:
                heads = 2048 // head_dim
                q, k, v = (torch.randn(tokens // seq, heads, seq, head_dim, device="cuda").bfloat16() for _ in range(3))
                do = torch.randn_like(q)
                o, lse = flash_triton.triton_forward(q, k, v, causal)
                peers = {
                    "gluon-bwd": lambda: _atomic(q, k, v, o, lse, do, causal, True),
                    "triton-atomic-bwd": lambda: _atomic(q, k, v, o, lse, do, causal, False),
                    "triton-split-bwd": lambda: flash_triton.triton_backward(q, k, v, o, lse, do, causal, "split"),
                }
                flops = 2.5 * 4 * q.shape[0] * heads * seq * seq * head_dim / (2 if causal else 1)
                for round_ in (0, 1):
                    for name in list(peers) if round_ == 0 else list(peers)[::-1]:
                        ms = do_bench(peers[name], warmup=25, rep=100)
                        row = dict(kind="time", peer=name, head_dim=head_dim, causal=causal, seq=seq, round=round_, ms=ms,
                                   tflops=flops / ms / 1e9)
                        out.write(json.dumps(row | {"env": env}) + "\n")
                        out.flush()
                        print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

"""Where flash_gluon_backward should take over flash_triton's backward at head_dim 64: backward
time at 1k-16k keys, causal and not, of the Gluon backward (forced on), flash_triton's atomic
backward (Gluon off) and its split backward, on the same saved tensors, two interleaved rounds
(the second in reverse order), do_bench medians. bf16, 16k tokens per batch, heads x d = 2048;
a backward counts 2.5x the forward's FLOPs (4 B H S^2 d, halved when causal).

    PYTHONPATH=src python3 benchmarks/attention/gluon_backward_lengths.py OUT.jsonl   (on an H100)
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "trials"))
from gluon_backward import _interleaved, _rows  # noqa: E402

from lmperf.attention import flash_triton  # noqa: E402

LENGTHS = (1024, 2048, 4096, 8192, 16384)


def main(out_path: str, tokens: int = 16384, head_dim: int = 64) -> None:
    emit = _rows(out_path)
    for causal in (False, True):
        for seq in LENGTHS:
            heads = 2048 // head_dim
            q, k, v = (torch.randn(tokens // seq, heads, seq, head_dim, device="cuda").bfloat16() for _ in range(3))
            do = torch.randn_like(q)
            o, lse = flash_triton.triton_forward(q, k, v, causal)
            peers = {  # the Gluon backward forced on, and off
                "gluon-bwd": lambda: flash_triton.triton_backward(q, k, v, o, lse, do, causal, "atomic", gluon=True),
                "triton-atomic-bwd": lambda: flash_triton.triton_backward(q, k, v, o, lse, do, causal, "atomic", gluon=False),
                "triton-split-bwd": lambda: flash_triton.triton_backward(q, k, v, o, lse, do, causal, "split"),
            }
            flops = 2.5 * 4 * q.shape[0] * heads * seq * seq * head_dim / (2 if causal else 1)
            _interleaved(emit, peers, dict.fromkeys(peers, flops), dict(head_dim=head_dim, causal=causal, seq=seq))


if __name__ == "__main__":
    main(sys.argv[1])

"""A change to flash_gluon (the Gluon forward) measured against the module as committed, on an H100.

    PYTHONPATH=src [AB_HEAD_DIMS=128] [AB_CAUSAL=1] python3 benchmarks/attention/gluon_forward_ab.py PATCH[,PATCH...] OUT.jsonl

As gluon_backward_ab.py does for the backward: PATCH (a `git diff` of
src/lmperf/attention/flash_gluon.py; several, comma-separated, applied in order) goes onto a copy
of the module, loaded beside the committed one under its own custom-op names. First the
candidate's O and LSE against float64 (SDPA in float64; LSE as logsumexp of the scaled scores) on
ragged shapes: odd lengths, seq_q != seq_k both ways, GQA and MQA, causal and not, head_dim 64, 80
and 128. Then, per point, forward time of the committed module ("committed"), the candidate and
SDPA cuDNN's forward ("sdpa-cudnn-fwd"), two interleaved rounds, the second reversed; bf16, 16k
tokens per batch, heads x d = 2048 (2560 at 80). AB_HEAD_DIMS and AB_CAUSAL (1: causal only, 0:
non-causal only) narrow the grid; AB_LENGTHS (comma-separated key counts) replaces
gluon_backward_ab's lengths at every head_dim. Rows as gluon_backward_ab.py's, so
`trials/gluon_backward_summary.py OUT.jsonl` prints errors and ratios (committed / candidate > 1:
the change is faster).
"""

import math
import os
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "trials")]
from gluon_backward import _cudnn, _interleaved, _rows  # noqa: E402
from gluon_backward_ab import CAUSAL, COLUMNS, candidate, grid  # noqa: E402

from lmperf.attention import flash_gluon  # noqa: E402

DEVICE = "cuda"
RAGGED = [  # (head_dim, causal, seq_q, seq_k, heads, kv_heads)
    (64, True, 777, 1025, 8, 2), (64, False, 1025, 777, 4, 1), (128, True, 1000, 1000, 4, 4),
    (128, True, 1025, 777, 4, 1), (128, False, 777, 1025, 8, 2), (128, True, 131, 131, 2, 2),
    (80, True, 777, 1025, 8, 2), (80, False, 1025, 777, 4, 1),
]
GRID = grid(CAUSAL)  # AB_HEAD_DIMS, AB_LENGTHS and AB_CAUSAL as gluon_backward_ab.py reads them


def reference(q, k, v, causal):
    """O and LSE (natural log) in float64, the keys and values repeated for GQA."""
    group = q.shape[1] // k.shape[1]
    q, k, v = (t.double() for t in (q, k, v))
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:  # top-left aligned, as the kernels mask: key j visible to query i where j <= i
        hidden = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(hidden, float("-inf"))
    return torch.softmax(scores, -1) @ v, torch.logsumexp(scores, -1)


def check(emit, module) -> None:
    for d, causal, seq_q, seq_k, heads, kv_heads in RAGGED:
        gen = torch.Generator(device=DEVICE).manual_seed(d + seq_q + seq_k)
        q = torch.randn(2, heads, seq_q, d, device=DEVICE, generator=gen).bfloat16()
        k, v = (torch.randn(2, kv_heads, seq_k, d, device=DEVICE, generator=gen).bfloat16() for _ in range(2))
        o, lse = module.forward(q, k, v, causal)
        expected_o, expected_lse = reference(q, k, v, causal)
        errors = {"max_rel_error_o": ((o.double() - expected_o).abs().max() / expected_o.abs().max()).item(),
                  "max_abs_error_lse": (lse.double() - expected_lse).abs().max().item()}  # a log: absolute
        emit(dict(kind="check", variant="candidate", head_dim=d, causal=causal, seq_q=seq_q, seq_k=seq_k,
                  heads=heads, kv_heads=kv_heads, **errors))


def main(patches: str, out_path: str, tokens: int = 16384) -> None:
    module = candidate(patches, flash_gluon)
    emit = _rows(out_path)
    check(emit, module)
    for d, causal, seq in GRID:
        heads = COLUMNS.get(d, 2048) // d
        q, k, v = (torch.randn(tokens // seq, heads, seq, d, device=DEVICE).bfloat16() for _ in range(3))
        peers = {
            "committed": lambda: flash_gluon.forward(q, k, v, causal),
            "candidate": lambda: module.forward(q, k, v, causal),
            "sdpa-cudnn-fwd": lambda: _cudnn(q, k, v, causal),
        }
        work = dict.fromkeys(peers, 4 * q.shape[0] * heads * seq * seq * d / (2 if causal else 1))
        _interleaved(emit, peers, work, dict(head_dim=d, causal=causal, seq=seq))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

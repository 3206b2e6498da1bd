"""sm90.combine under TRITON_INTERPRET=1 on the CPU (fp32).

Not collected on its own (no test_ prefix): test_attention_sm90_schedule.py runs this file in a
subprocess with TRITON_INTERPRET=1 set before Triton compiles anything. The runs are made here in
float64 from their definition (softmax over a run's keys), independently of the Gluon kernel
that makes them on the GPU, so the merge is checked against attention over all keys.
"""

import math
import os

import pytest
import torch

from lmperf.attention.sm90 import combine, schedule

assert os.environ.get("TRITON_INTERPRET") == "1", "run through test_attention_sm90_schedule.py"


def float64_runs(q, k, v, whole, parts, block_m, block_n):
    """Each run's O (normalised by its own sums) and base-2 log-sum-exp, as the forward leaves them:
    rows of query tile u % n_m of batch x head u // n_m, rows past seq_q from zero queries."""
    batch, heads, seq_q, head_dim = q.shape
    n_m, key_tiles = -(-seq_q // block_m), -(-k.shape[2] // block_n)
    padded = torch.zeros(batch, heads, n_m * block_m, head_dim, dtype=torch.float64)
    padded[:, :, :seq_q] = q
    o_runs, lse_runs = [], []
    for unit in range(whole, batch * heads * n_m):
        bh, tile_m = divmod(unit, n_m)
        rows = padded[bh // heads, bh % heads, tile_m * block_m : (tile_m + 1) * block_m]
        for part in range(parts):
            first, stop = schedule.key_range(part, parts, key_tiles)
            keys = slice(first * block_n, stop * block_n)
            scores = rows @ k[bh // heads, bh % heads, keys].T / math.sqrt(head_dim)
            o_runs.append(torch.softmax(scores, -1) @ v[bh // heads, bh % heads, keys])
            lse_runs.append(torch.logsumexp(scores, -1) / math.log(2))
    return torch.stack(o_runs).float(), torch.stack(lse_runs).float()


@pytest.mark.parametrize(
    "batch, heads, seq_q, seq_k, head_dim, block_m, programs",
    [
        (2, 3, 37, 53, 16, 16, 13),  # 18 tiles of 16 rows on 13 programs: the last 5 in two runs each
        (1, 2, 40, 70, 20, 16, 40),  # fewer tiles than programs: all 6 in six runs; 20 columns of 32
        (2, 1, 16, 9, 16, 16, 25),  # one full tile per head, two key tiles (the second of one key)
        (1, 2, 100, 45, 16, 48, 19),  # tiles of 48 rows merged 16 at a time (as 192 by 64 on the GPU)
        (1, 1, 16, 150, 20, 16, 40),  # 19 runs, padded to 32: 8 rows a program (COMBINE_ELEMENTS)
    ],
)
def test_combine_merges_runs_as_softmax_over_all_keys(batch, heads, seq_q, seq_k, head_dim, block_m, programs):
    block_n = 8
    n_m = -(-seq_q // block_m)
    whole, parts = schedule.split_plan(batch * heads * n_m, programs, -(-seq_k // block_n))
    assert parts >= 2
    gen = torch.Generator().manual_seed(seq_q + seq_k)
    q, k, v = (
        torch.randn(batch, heads, n, head_dim, dtype=torch.float64, generator=gen) for n in (seq_q, seq_k, seq_k)
    )
    part_o, part_lse = float64_runs(q, k, v, whole, parts, block_m, block_n)
    # O as the forward allocates it, (B, H, seq_q, d) over (B, seq_q, H, d) storage; rows of whole
    # tiles keep what they held
    o = torch.full((batch, seq_q, heads, head_dim), 7.0).transpose(1, 2)
    lse = torch.full((batch, heads, seq_q), -3.0)
    combine.combine(part_o, part_lse, o, lse, whole, parts, n_m)

    scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)
    expected_o, expected_lse = torch.softmax(scores, -1) @ v, torch.logsumexp(scores, -1)
    split = torch.zeros(batch * heads, n_m * block_m, dtype=torch.bool)
    split.view(-1)[whole * block_m :] = True
    split = split[:, :seq_q].view(batch, heads, seq_q)
    torch.testing.assert_close(o[split].double(), expected_o[split], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lse[split].double(), expected_lse[split], atol=1e-5, rtol=1e-5)
    assert (o[~split] == 7.0).all() and (lse[~split] == -3.0).all()

"""Rank 0 of Megatron-style tensor parallelism, emulated on one GPU (no communication kernels).

A rank of degree tp runs every attention and MLP GEMM of the full model sharded: Q, K, V and the
MLP's gate and up projections split by output columns (H/tp query heads, KV/tp K/V heads,
d_ff/tp), the attention output and down projections split by inner rows ((H/tp)·hd and d_ff/tp,
output d). Those are exactly the GEMMs of a model with H/tp heads of the same head_dim, KV/tp K/V
heads, d_ff/tp and the same d_model, which is what runs here; the norms and residual adds keep
the full width, as on every rank. The embedding and the LM head are vocabulary-parallel, as in
Megatron and vLLM: V/tp rows each, the lookup zeroing the token ids of other ranks' rows.

Left out, since one process has no peer: the all-reduce after each attention and MLP block, the
embedding's all-reduce and the logits' all-gather.
"""

from __future__ import annotations

import torch
from torch import nn

from lmperf.pmc.targets import TP_EMULATION

SHARDED = ("num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size")
SHARDED_FIELDS = ("n_heads", "n_kv_heads", "d_ff", "vocab_size")  # the same, as truth files name them


def shard_fields(fields: dict, degree: int) -> dict:
    """A Llama-family config.json dict of the full model -> rank 0's shard: heads, K/V heads,
    d_ff and vocabulary divided by `degree`, head_dim pinned (the config would otherwise derive
    it from d_model / heads and double it)."""
    heads = fields["num_attention_heads"]
    full = {**fields, "num_key_value_heads": fields.get("num_key_value_heads", heads)}
    full.setdefault("head_dim", fields["hidden_size"] // heads)
    return {**full, **{key: full[key] // degree for key in SHARDED}}


class VocabShardEmbedding(nn.Module):
    """Rank 0's rows of a vocabulary-parallel embedding: a token id past them looks up row 0 and
    is zeroed (a real run then sums every rank's rows with an all-reduce)."""

    def __init__(self, embedding: nn.Embedding) -> None:
        super().__init__()
        self.embedding = embedding

    @property
    def weight(self) -> torch.Tensor:
        return self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        outside = ids >= self.embedding.num_embeddings  # (B, T)
        rows = self.embedding(ids.masked_fill(outside, 0))  # (B, T, d)
        return rows.masked_fill(outside.unsqueeze(-1), 0.0)


def shard_truth(full_shape: dict, degree: int) -> dict:
    """What the truth file says of the parallelism: the degree, the rank, how it ran, and the
    full model the shard belongs to."""
    return dict(degree=degree, rank=0, how=TP_EMULATION, full_model=full_shape)

"""The one analytic FLOP model of TransformerLM, per op and per layer.

Counting rules (a multiply-add is 2 FLOPs):
- A matmul of (M, K) by (K, N) costs 2·M·K·N forward. Its backward computes the input gradient
  and the weight gradient, two matmuls of the same size: 2x the forward. Every block input needs
  a gradient (the embedding is trained), so this holds for every matmul, the first block's too.
- Attention scores QK^T and the weighted sum PV are counted over the full T×T square even when
  causal (that is what naive attention and FlopCounterMode count); `causal_fraction` lowers it for
  kernels that skip masked tiles.
- Vector work (norms, rotary, softmax, SwiGLU's gate, residual adds, loss) is counted at a few
  FLOPs per element, noted on each op; its backward is taken as 2x the forward. These are
  estimates (the exact count depends on the kernel), small next to the matmuls, and reported
  separately so MFU can use matmul FLOPs alone.
- AdamW costs about 13 FLOPs per parameter per step.

Bench (MFU), profile (FLOPs per region) and pmc (predicted vs measured counters) all read this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lmperf import regions
from lmperf.errors import UsageError
from lmperf.model.config import ModelConfig, parameter_count
from lmperf.model.step import MODES

ADAMW_FLOPS_PER_PARAM = 13


@dataclass(frozen=True)
class Op:
    """One op of the forward pass: FLOPs for one instance (one layer) and how many instances."""

    name: str
    region: str
    is_matmul: bool
    forward_flops: float
    count: int = 1
    # Matmul shape (M, K, N) per instance, batch folded into M; None for vector ops.
    shape: tuple[int, int, int] | None = None

    @property
    def total_forward(self) -> float:
        return self.forward_flops * self.count


def _matmul(name: str, region: str, m: int, k: int, n: int, count: int, batch: int = 1) -> Op:
    return Op(name, region, True, 2.0 * batch * m * k * n, count, (batch * m, k, n))


def _vector(name: str, region: str, elements: int, flops_per_element: int, count: int) -> Op:
    return Op(name, region, False, float(elements * flops_per_element), count)


def padded_matmul_flops(op: Op, tile_m: int = 1, tile_n: int = 1) -> float:
    """FLOPs a tensor-core counter reports for `op`: whole output tiles, so M and N round up."""
    if op.shape is None:
        raise UsageError(f"{op.name} is not a matmul")
    m, k, n = op.shape
    return 2.0 * math.ceil(m / tile_m) * tile_m * k * math.ceil(n / tile_n) * tile_n


def forward_ops(config: ModelConfig, batch: int, seq_len: int, causal_fraction: float = 1.0) -> list[Op]:
    """Every op of one forward pass (embedding lookup is a gather: 0 FLOPs).

    Grouped-query attention (`n_kv_heads` < `n_heads`) narrows the K and V projections and the
    rotary work on k; the score and weighted-sum matmuls still run per query head. The query
    projection, the rotary work on q and the output projection span the attention's width, n_heads ·
    head_dim, which need not be d_model. A GELU MLP (`mlp="gelu"`) has one up-projection instead of
    SwiGLU's two; `qk_norm` adds the per-head norms of q and k.
    """
    if batch <= 0 or seq_len <= 0:
        raise UsageError(f"batch and context length must be positive, got {batch}, {seq_len}")
    B, T, d, f = batch, seq_len, config.d_model, config.d_ff
    H, hd, L, V = config.n_heads, config.head_dim, config.n_layers, config.vocab_size
    width, kv_width = config.attention_width, config.kv_width
    gated = config.mlp == "swiglu"
    up_width = 2 * f if gated else f
    tokens = B * T
    square = int(round(B * H * T * T * causal_fraction))
    # square, mean, rsqrt·x, ·g per element of every q and k head
    qk_norm = [_vector("qk_norm", regions.QK_NORM, tokens * (width + kv_width), 4, L)] if config.qk_norm else []
    return [
        _vector("attn_norm", regions.ATTN_NORM, tokens * d, 4, L),  # square, mean, rsqrt·x, ·g
        _matmul("qkv_proj", regions.QKV_PROJ, tokens, d, width + 2 * kv_width, L),
        *qk_norm,
        _vector("rope", regions.ROPE, tokens * (width + kv_width), 3, L),  # q and k: 2 mul + 1 add each
        Op("attn_scores", regions.ATTN_SCORES, True, 2.0 * square * hd, L, (B * H * T, hd, T)),
        _vector("attn_softmax", regions.ATTN_SOFTMAX, square, 5, L),  # scale, max, exp, sum, div
        Op("attn_weighted_sum", regions.ATTN_WEIGHTED_SUM, True, 2.0 * square * hd, L, (B * H * T, T, hd)),
        _matmul("out_proj", regions.OUT_PROJ, tokens, width, d, L),
        _vector("attn_residual", regions.OUT_PROJ, tokens * d, 1, L),
        _vector("ffn_norm", regions.FFN_NORM, tokens * d, 4, L),
        _matmul("ffn_w1_w3", regions.FFN, tokens, d, up_width, L),
        # silu (≈4) and the product; GELU's tanh form ≈8 (cube, two multiply-adds, tanh, product)
        _vector("ffn_gate", regions.FFN, tokens * f, 5 if gated else 8, L),
        _matmul("ffn_w2", regions.FFN, tokens, f, d, L),
        _vector("ffn_residual", regions.FFN, tokens * d, 1, L),
        _vector("final_norm", regions.FINAL_NORM, tokens * d, 4, 1),
        _matmul("lm_head", regions.LM_HEAD, tokens, d, V, 1),
        _vector("loss", regions.LOSS, tokens * V, 5, 1),  # max, sub, exp, sum, log
    ]


@dataclass(frozen=True)
class StepFlops:
    """FLOPs of one step of a mode, split into matmul and vector work and by region."""

    matmul: float
    vector: float
    by_region: dict[str, float]

    @property
    def total(self) -> float:
        return self.matmul + self.vector


def step_flops(config: ModelConfig, batch: int, seq_len: int, mode: str, causal_fraction: float = 1.0) -> StepFlops:
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    multiplier = 1.0 if mode == "forward" else 3.0  # forward + 2x forward for the backward
    matmul = vector = 0.0
    by_region: dict[str, float] = {}
    for op in forward_ops(config, batch, seq_len, causal_fraction):
        flops = op.total_forward * multiplier
        by_region[op.region] = by_region.get(op.region, 0.0) + flops
        if op.is_matmul:
            matmul += flops
        else:
            vector += flops
    if mode == "train-step":
        optimizer = float(ADAMW_FLOPS_PER_PARAM * parameter_count(config)["total"])
        by_region[regions.OPTIMIZER] = optimizer
        vector += optimizer
    return StepFlops(matmul, vector, by_region)


def attention_kernel_flops(
    batch_heads: int, seq_q: int, seq_k: int, head_dim: int, is_causal: bool
) -> dict[str, float]:
    """FLOPs of one attention call as FlashAttention's benchmarks count them.

    Forward: QK^T and PV, 2 matmuls of 2·Nq·Nk·d each, halved when causal (skipped tiles);
    backward: 5 matmuls of that size (dV, dP, dQ, dK and the recomputed S), 2.5x the forward.
    """
    forward = 4.0 * batch_heads * seq_q * seq_k * head_dim * (0.5 if is_causal else 1.0)
    return {"forward": forward, "backward": 2.5 * forward, "forward_backward": 3.5 * forward}


FUSED_ATTENTION_PARTS = (regions.ATTN_SCORES, regions.ATTN_SOFTMAX, regions.ATTN_WEIGHTED_SUM)


def region_flops(config: ModelConfig, batch: int, seq_len: int, mode: str) -> dict[str, float]:
    """FLOPs per profiled region: `step_flops(...).by_region`, except that an attention
    implementation other than naive runs scores, softmax and weighted sum as one kernel inside
    the `attn_fused` region, so their FLOPs are reported there (still the full T×T square)."""
    by_region = dict(step_flops(config, batch, seq_len, mode).by_region)
    if config.attention != "naive":
        by_region[regions.ATTN_FUSED] = sum(by_region.pop(part) for part in FUSED_ATTENTION_PARTS)
    return by_region

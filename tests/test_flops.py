import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from lmperf import regions
from lmperf.analysis.flops import MODES, forward_ops, region_flops, step_flops
from lmperf.analysis.tiles import causal_tile_fraction
from lmperf.model.step import ModelStep, StepConfig
from lmperf.model import preset


def _counted_flops(attention: str, mode: str, batch: int, seq_len: int, kv_heads: int, **shape) -> int:
    """FlopCounterMode's count of one step of the (causal) tiny model with `kv_heads` K/V heads
    (and any other `shape` fields)."""
    config = StepConfig(
        "tiny", seq_len, mode, batch=batch, attention=attention, model=preset("tiny", n_kv_heads=kv_heads, **shape)
    )
    step = ModelStep(config, torch.device("cpu"))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        step.run(mode)
    return counter.get_total_flops()


# (batch, seq_len, K/V heads of tiny's 4): odd lengths, multi-head, grouped-query and multi-query.
SHAPES = [(2, 16, 4), (3, 37, 4), (2, 24, 2), (1, 20, 1)]


@pytest.mark.parametrize("attention", ["naive", "sdpa"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("batch, seq_len, kv_heads", SHAPES)
def test_matmul_flops_match_flop_counter_mode(attention, mode, batch, seq_len, kv_heads):
    """The model's causal step, counted by PyTorch. SDPA runs its math backend here: PyTorch's
    CPU flash kernel has no FLOP formula, while the math backend is the matmuls it computes
    (the full T×T square, masked: causal attention does the square's work unless it skips tiles)."""
    analytic = step_flops(preset("tiny", n_kv_heads=kv_heads, attention=attention), batch, seq_len, mode)
    assert _counted_flops(attention, mode, batch, seq_len, kv_heads) == analytic.matmul


# Heads whose width is not d / heads (tiny: d 64, 4 query heads): Qwen3-like 4 x 32 = 128 wide
# with the per-head q and k norms, and 4 x 8 = 32 wide; grouped K/V, odd lengths.
WIDTHS = [(2, 19, 2, dict(head_dim=32, qk_norm=True)), (3, 24, 1, dict(head_dim=8)), (1, 37, 4, dict(head_dim=32))]


@pytest.mark.parametrize("attention", ["naive", "sdpa"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("batch, seq_len, kv_heads, shape", WIDTHS)
def test_attention_of_another_width_matches_flop_counter_mode(attention, mode, batch, seq_len, kv_heads, shape):
    """The query projection, the scores, the weighted sum and the output projection span
    heads x head_dim, not d_model: the causal step PyTorch counts is the model's."""
    analytic = step_flops(preset("tiny", n_kv_heads=kv_heads, attention=attention, **shape), batch, seq_len, mode)
    assert _counted_flops(attention, mode, batch, seq_len, kv_heads, **shape) == analytic.matmul


@pytest.mark.parametrize("mode", MODES)
def test_triton_model_flops_are_those_pytorch_counts_for_sdpa(mode):
    """The Triton kernel runs outside PyTorch's dispatcher (FlopCounterMode cannot see it, and a
    CPU runs it only interpreted), so its model's FLOPs are checked against the same model's
    step through SDPA: one attention, one count."""
    batch, seq_len, kv_heads = 2, 24, 2
    analytic = step_flops(preset("tiny", n_kv_heads=kv_heads, attention="triton"), batch, seq_len, mode)
    assert _counted_flops("sdpa", mode, batch, seq_len, kv_heads) == analytic.matmul


# (batch, seq_len, K/V heads, 128x128 score tiles the causal kernel computes per head), by hand:
# 37 and 100 pad to one tile; 256 is two query tiles, the first seeing one key tile, the second two.
TORCH_SHAPES = [(2, 37, 4, 1), (1, 100, 2, 1), (1, 256, 4, 3)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("batch, seq_len, kv_heads, tiles", TORCH_SHAPES)
def test_flash_attention_torch_flops_match_flop_counter_mode(mode, batch, seq_len, kv_heads, tiles):
    """lmperf's FlashAttention-2 in PyTorch computes whole 128x128 score tiles (zero-padded past
    the end, causal tiles above the diagonal skipped): the FLOP model with that tile share
    (`causal_tile_fraction`) is what PyTorch counts, plus in the backward the recomputed scores
    (one more QK^T per computed tile: FA2's fifth matmul)."""
    H, hd, L, tile = 4, 16, 2, 128  # tiny: 4 heads of 16, 2 layers
    one_tile_product = 2 * batch * H * tile * tile * hd
    recompute = 0 if mode == "forward" else L * tiles * one_tile_product
    config = preset("tiny", n_kv_heads=kv_heads, attention="torch")
    analytic = step_flops(config, batch, seq_len, mode, causal_fraction=causal_tile_fraction(seq_len))
    assert causal_tile_fraction(seq_len) * seq_len**2 == tiles * tile * tile
    assert _counted_flops("torch", mode, batch, seq_len, kv_heads) == analytic.matmul + recompute


@pytest.mark.parametrize("mode, passes", [("forward", 1), ("forward-backward", 3), ("train-step", 3)])
def test_attention_region_flops_by_hand(mode, passes):
    """QK^T and PV each cost 2·T·T·head_dim FLOPs (T·T·head_dim multiply-adds) per head, batch row
    and layer; the backward costs each twice that again (two matmuls per product). Halving them
    anywhere in the region model shows here."""
    B, T, L, H, hd = 2, 40, 2, 4, 16  # tiny: d_model 64 = 4 heads of 16
    one_product = 2 * B * H * T * T * hd * L
    naive = region_flops(preset("tiny"), B, T, mode)
    assert naive[regions.ATTN_SCORES] == naive[regions.ATTN_WEIGHTED_SUM] == passes * one_product
    fused = region_flops(preset("tiny", attention="sdpa"), B, T, mode)
    assert (
        fused[regions.ATTN_FUSED]
        == naive[regions.ATTN_SCORES] + naive[regions.ATTN_SOFTMAX] + naive[regions.ATTN_WEIGHTED_SUM]
    )
    assert fused[regions.ATTN_FUSED] >= 2 * passes * one_product


def test_regions_add_up_to_the_total():
    flops = step_flops(preset("small"), 4, 512, "train-step")
    assert sum(flops.by_region.values()) == pytest.approx(flops.total)
    assert flops.vector < 0.05 * flops.matmul  # vector work is small next to the matmuls


def test_causal_fraction_only_scales_attention_matmuls():
    config = preset("small")
    full = {op.name: op.total_forward for op in forward_ops(config, 1, 1024)}
    half = {op.name: op.total_forward for op in forward_ops(config, 1, 1024, causal_fraction=0.5)}
    for name in full:
        expected = 0.5 if name in ("attn_scores", "attn_softmax", "attn_weighted_sum") else 1.0
        assert half[name] == pytest.approx(full[name] * expected)


def test_six_n_rule_of_thumb_for_large_models():
    # At short context the training FLOPs per token approach 6 x non-embedding parameters + head.
    config = preset("2.7B")
    flops = step_flops(config, 1, 128, "train-step").matmul / 128
    d, V = config.d_model, config.vocab_size
    n_matmul = config.n_layers * (4 * d * d + 3 * d * config.d_ff) + d * V
    assert flops == pytest.approx(6 * n_matmul, rel=0.01)

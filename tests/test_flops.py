import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from lmperf import regions
from lmperf.analysis.flops import MODES, forward_ops, region_flops, step_flops
from lmperf.model.step import ModelStep, StepConfig
from lmperf.model import preset


@pytest.mark.parametrize("attention", ["naive", "sdpa"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("batch, seq_len", [(2, 16), (3, 37)])
def test_matmul_flops_match_flop_counter_mode(attention, mode, batch, seq_len):
    """The model's causal step, counted by PyTorch. SDPA runs its math backend here: PyTorch's
    CPU flash kernel has no FLOP formula, while the math backend is the matmuls it computes
    (the full T×T square, masked: causal attention does the square's work unless it skips tiles)."""
    config = StepConfig("tiny", seq_len, mode, batch=batch, attention=attention)
    step = ModelStep(config, torch.device("cpu"))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        step.run(mode)
    analytic = step_flops(step.model.config, batch, seq_len, mode)
    assert counter.get_total_flops() == analytic.matmul


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
    assert fused[regions.ATTN_FUSED] == naive[regions.ATTN_SCORES] + naive[regions.ATTN_SOFTMAX] + naive[regions.ATTN_WEIGHTED_SUM]
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

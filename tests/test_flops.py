import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lmperf.analysis.flops import MODES, forward_ops, step_flops
from lmperf.model.step import ModelStep, StepConfig
from lmperf.model import preset


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("batch, seq_len", [(2, 16), (3, 37)])
def test_matmul_flops_match_flop_counter_mode(mode, batch, seq_len):
    step = ModelStep(StepConfig("tiny", seq_len, mode, batch=batch), torch.device("cpu"))
    with FlopCounterMode(display=False) as counter:
        step.run(mode)
    analytic = step_flops(step.model.config, batch, seq_len, mode)
    assert counter.get_total_flops() == analytic.matmul


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

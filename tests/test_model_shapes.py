"""Grouped-query attention, tied embeddings and the GELU MLP: against independent references."""

import math

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lmperf.analysis.flops import MODES, step_flops
from lmperf.attention import attention
from lmperf.errors import UsageError
from lmperf.model import TransformerLM, parameter_count, preset
from lmperf.model.step import ModelStep, StepConfig


def per_head_reference(q, k, v, is_causal):
    """float64, one query head at a time, each reading K/V head h // group (no repeat op)."""
    heads_q, heads_kv, seq_q, seq_k = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    group = heads_q // heads_kv
    outs = []
    for h in range(heads_q):
        scores = q[:, h] @ k[:, h // group].transpose(-1, -2) / math.sqrt(q.shape[-1])
        if is_causal:
            allowed = torch.ones(seq_q, seq_k, dtype=torch.bool).tril()
            scores = scores.masked_fill(~allowed, float("-inf"))
        outs.append(scores.softmax(-1) @ v[:, h // group])
    return torch.stack(outs, dim=1)


@pytest.mark.parametrize("impl", ["naive", "sdpa", "torch"])
@pytest.mark.parametrize("heads_q, heads_kv", [(6, 2), (4, 1), (3, 3)])
@pytest.mark.parametrize("is_causal", [True, False])
def test_grouped_query_attention_matches_a_per_head_reference(impl, heads_q, heads_kv, is_causal):
    generator = torch.Generator().manual_seed(heads_q * 10 + heads_kv)
    draw = lambda h: torch.randn(2, h, 37, 16, generator=generator, dtype=torch.float64)  # noqa: E731
    q, k, v = draw(heads_q), draw(heads_kv), draw(heads_kv)
    do = torch.randn(2, heads_q, 37, 16, generator=generator, dtype=torch.float64)
    expected_inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    expected = per_head_reference(*expected_inputs, is_causal)
    expected.backward(do)
    inputs = [t.float().requires_grad_() for t in (q, k, v)]
    out = attention(*inputs, is_causal=is_causal, impl=impl)
    out.backward(do.float())
    torch.testing.assert_close(out.double(), expected, rtol=1e-4, atol=1e-4)
    for actual, reference in zip(inputs, expected_inputs):  # dK, dV summed over each group
        torch.testing.assert_close(actual.grad.double(), reference.grad, rtol=1e-4, atol=1e-4)


def test_grouped_query_model_is_a_multi_head_model_with_repeated_kv_weights():
    # Independent derivation: GQA is MHA whose K/V projections repeat each K/V head per group.
    torch.manual_seed(0)
    gqa = TransformerLM(preset("tiny", n_kv_heads=2))
    mha = TransformerLM(preset("tiny"))
    state = gqa.state_dict()
    d, hd, group = 64, 16, 2
    for name, weight in list(state.items()):
        if name.endswith("qkv_proj.weight"):
            q, k, v = weight.split((d, 2 * hd, 2 * hd))
            repeat = lambda w: w.view(2, hd, d).repeat_interleave(group, 0).reshape(d, d)  # noqa: E731
            state[name] = torch.cat((q, repeat(k), repeat(v)))
    mha.load_state_dict(state)
    tokens = torch.randint(0, 512, (2, 19))
    torch.testing.assert_close(gqa(tokens), mha(tokens), rtol=1e-5, atol=1e-5)


def test_tied_embeddings_share_one_matrix_and_its_gradient():
    model = TransformerLM(preset("tiny", tie_embeddings=True))
    assert model.lm_head.weight is model.embedding.weight
    tokens = torch.randint(0, 512, (2, 9))
    model(tokens).sum().backward()
    assert model.embedding.weight.grad is not None


@pytest.mark.parametrize(
    "overrides",
    [
        dict(n_kv_heads=2),
        dict(n_kv_heads=1, tie_embeddings=True),
        dict(mlp="gelu", tie_embeddings=True),
    ],
)
def test_parameter_count_matches_the_modules_and_a_hand_count(overrides):
    config = preset("small", **overrides)
    with torch.device("meta"):
        model = TransformerLM(config)
    d, f, L, V = 768, 3072, 12, 10_000
    kv = config.n_kv_heads * 64
    mlp = (2 if config.mlp == "gelu" else 3) * d * f
    head = 0 if config.tie_embeddings else V * d
    by_hand = V * d + L * (2 * d * d + 2 * d * kv + mlp + 2 * d) + d + head
    assert sum(p.numel() for p in model.parameters()) == by_hand  # a tied matrix counted once
    assert parameter_count(config)["total"] == by_hand


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "overrides",
    [
        dict(n_kv_heads=2),
        dict(n_kv_heads=1, tie_embeddings=True),
        dict(mlp="gelu", tie_embeddings=True, vocab_size=300),
    ],
)
def test_matmul_flops_of_other_shapes_match_flop_counter_mode(mode, overrides):
    # naive attention: FlopCounterMode has no formula for SDPA's CPU kernel (it counts 0 there).
    model = preset("tiny", **overrides)
    step = ModelStep(StepConfig("tiny", 21, mode, attention=model.attention, batch=2, model=model), torch.device("cpu"))
    with FlopCounterMode(display=False) as counter:
        step.run(mode)
    assert counter.get_total_flops() == step_flops(step.model.config, 2, 21, mode).matmul


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(n_kv_heads=3), "not a multiple"),
        (dict(n_kv_heads=0), "positive"),
        (dict(mlp="relu"), "unknown mlp"),
    ],
)
def test_impossible_shapes_are_usage_errors(overrides, message):
    with pytest.raises(UsageError, match=message):
        preset("tiny", **overrides)


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["sdpa", "triton"])
def test_grouped_query_attention_on_the_gpu_in_bf16(impl):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, h, 300, 64, generator=generator) for h in (8, 2, 2))
    expected = per_head_reference(q.double(), k.double(), v.double(), True)
    out = attention(*(t.cuda().bfloat16() for t in (q, k, v)), is_causal=True, impl=impl)
    torch.testing.assert_close(out.double().cpu(), expected, rtol=2e-2, atol=2e-2)

"""FlashAttention2Torch against the float64 reference on hypothesis-drawn shapes."""

import functools

import pytest
import torch
from hypothesis import given, settings

from attention_reference import shapes, check_against_reference, random_qkv
from lmperf.attention.flash_torch import FlashAttention2Torch, flash_attention_torch_with_lse
from lmperf.errors import UsageError

TILE = 16  # small tiles so that a few dozen rows already span several tiles and a ragged edge


def _apply(q, k, v, is_causal, tile=TILE):
    return FlashAttention2Torch.apply(q, k, v, is_causal, tile)


@settings(max_examples=25, deadline=None)
@given(shapes(max_seq=70, max_lead=3))
def test_matches_float64_reference_fp32(shape):
    lead, seq_q, seq_k, head_dim, is_causal, seed = shape
    q, k, v, do = random_qkv(lead, seq_q, seq_k, head_dim, torch.float32, seed=seed)
    forward = functools.partial(flash_attention_torch_with_lse, tile=TILE)
    check_against_reference(forward, _apply, q, k, v, do, is_causal, tolerance=1e-4)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float16, 5e-3), (torch.bfloat16, 3e-2)])
def test_half_precision_inputs_accumulate_in_fp32(dtype, tolerance):
    q, k, v, do = random_qkv((2, 3), 45, 37, 32, dtype, seed=1)
    forward = functools.partial(flash_attention_torch_with_lse, tile=TILE)
    check_against_reference(forward, _apply, q, k, v, do, True, tolerance)


def test_default_tile_and_non_contiguous_inputs():
    q, k, v, do = random_qkv((2, 2), 150, 140, 16, torch.float32, seed=2)
    # (B, T, H, d) storage seen as (B, H, T, d), as the model's q, k, v are
    q_t, k_t, v_t = (t.detach().transpose(1, 2).contiguous().transpose(1, 2).requires_grad_() for t in (q, k, v))
    assert not q_t.is_contiguous()
    check_against_reference(flash_attention_torch_with_lse, FlashAttention2Torch.apply, q_t, k_t, v_t, do, True, 1e-4)


@pytest.mark.parametrize("lead", [(), (2,), (2, 3), (2, 1, 2)])
def test_forward_saves_inputs_output_and_lse_in_the_callers_shapes(lead):
    q, k, v, _ = random_qkv(lead, 20, 24, 16, torch.float32)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        FlashAttention2Torch.apply(q, k, v, True)
    shapes = [tuple(t.shape) for t in saved]
    qs, ks = tuple(q.shape), tuple(k.shape)
    assert sorted(shapes) == sorted([qs, ks, ks, qs, qs[:-1]])  # q, k, v, output, log-sum-exp


@pytest.mark.parametrize("heads, kv_heads", [(4, 2), (3, 1)])
def test_grouped_query_heads(heads, kv_heads):
    q, k, v, do = random_qkv((2, heads), 37, 45, 16, torch.float32, seed=heads, kv_heads=kv_heads)
    forward = functools.partial(flash_attention_torch_with_lse, tile=TILE)
    check_against_reference(forward, _apply, q, k, v, do, True, tolerance=1e-4)


@pytest.mark.parametrize(
    "q_shape, k_shape, dtype",
    [
        ((2, 8, 20), (2, 8, 20), torch.float32),  # head_dim not a multiple of 8
        ((2, 8, 264), (2, 8, 264), torch.float32),  # head_dim over 256
        ((2, 8, 16), (3, 8, 16), torch.float32),  # leading dims differ
        ((2, 4, 8, 16), (2, 3, 8, 16), torch.float32),  # 3 kv heads do not divide 4 query heads
        ((2, 4, 8, 16), (3, 2, 8, 16), torch.float32),  # batch differs
        ((2, 8, 16), (2, 8, 16), torch.float64),
        ((2, 0, 16), (2, 8, 16), torch.float32),
    ],
)
def test_unsupported_inputs_are_usage_errors(q_shape, k_shape, dtype):
    q = torch.randn(q_shape, dtype=dtype)
    k = torch.randn(k_shape, dtype=dtype)
    with pytest.raises(UsageError):
        FlashAttention2Torch.apply(q, k, k, False)

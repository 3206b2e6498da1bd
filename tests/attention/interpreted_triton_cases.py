"""FlashAttention2Triton's kernels under TRITON_INTERPRET=1 on the CPU (fp32 and fp16).

Not collected on its own (no test_ prefix): test_attention_flash_triton_interpreted.py runs this
file in a subprocess with TRITON_INTERPRET=1 set before Triton compiles anything. The interpreter
uses small tiles with BLOCK_M != BLOCK_N, so ragged edges and misaligned diagonals are covered.
"""

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import interpreter_compat  # noqa: F401  (Triton 3.6's interpreter under NumPy 2.4)
from attention_reference import (
    check_against_reference,
    model_loss_and_grads,
    random_qkv,
    shapes,
    top_left_and_bottom_right,
)
from lmperf.attention.dispatch import BACKWARDS, backward_mode
from lmperf.attention.flash_triton import FlashAttention2Triton, flash_attention_triton_with_lse
from lmperf.attention.triton_kernels import tiles as tiles_module
from lmperf.attention.triton_kernels.tiles import TILES
from lmperf.errors import UsageError

assert os.environ.get("TRITON_INTERPRET") == "1", "run through test_attention_flash_triton_interpreted.py"


def _apply_with(backward):
    return lambda q, k, v, is_causal: FlashAttention2Triton.apply(q, k, v, is_causal, backward)


@settings(max_examples=12, deadline=None)
@given(shapes(max_seq=50, max_lead=2), st.sampled_from(list(BACKWARDS)))
def test_matches_float64_reference_fp32(shape, backward):
    lead, seq_q, seq_k, head_dim, is_causal, seed = shape
    q, k, v, do = random_qkv(lead, seq_q, seq_k, head_dim, torch.float32, seed=seed)
    check_against_reference(flash_attention_triton_with_lse, _apply_with(backward), q, k, v, do, is_causal, 1e-4)


def _autotune_tile_shapes():
    """Every (BLOCK_M, BLOCK_N) of each kernel's GPU autotune table, as interpreter tile sets."""
    shapes = {name: sorted({t[:2] for tiles in by_size.values() for t in tiles}) for name, by_size in TILES.items()}
    return [
        {name: {"BLOCK_M": s[i % len(s)][0], "BLOCK_N": s[i % len(s)][1]} for name, s in shapes.items()}
        for i in range(max(map(len, shapes.values())))
    ]


@pytest.mark.parametrize("tiles", _autotune_tile_shapes())
@pytest.mark.parametrize("backward", ["split", "atomic"])  # atomic reads the dkdv_dq table
def test_every_autotuned_tile_shape(monkeypatch, tiles, backward):
    # Lengths that leave ragged edges and misaligned diagonals for every tile in the tables.
    monkeypatch.setattr(tiles_module, "INTERPRETED_TILES", tiles)
    for is_causal, seq_q, seq_k in ((True, 300, 300), (False, 200, 270), (True, 270, 200)):
        q, k, v, do = random_qkv((1, 2), seq_q, seq_k, 16, torch.float32, seed=seq_q)
        check_against_reference(flash_attention_triton_with_lse, _apply_with(backward), q, k, v, do, is_causal, 1e-4)


@pytest.mark.parametrize("backward", list(BACKWARDS))
@pytest.mark.parametrize("heads, kv_heads, is_causal", [(4, 2, True), (3, 1, False)])
def test_grouped_query_heads(backward, heads, kv_heads, is_causal):
    q, k, v, do = random_qkv((2, heads), 37, 45, 16, torch.float32, seed=heads, kv_heads=kv_heads)
    check_against_reference(flash_attention_triton_with_lse, _apply_with(backward), q, k, v, do, is_causal, 1e-4)


@pytest.mark.parametrize("backward", list(BACKWARDS))
@pytest.mark.parametrize(
    "head_dim, heads, kv_heads, seq_q, seq_k, is_causal",
    [(80, 2, 2, 45, 45, True), (48, 4, 2, 37, 51, False), (96, 3, 1, 51, 37, True)],
)
def test_head_dims_tiled_as_two_column_blocks(backward, head_dim, heads, kv_heads, seq_q, seq_k, is_causal):
    # 80 = 64 + 16, 48 = 32 + 16, 96 = 64 + 32: every matmul over head_dim runs as two chained ones.
    assert tiles_module.column_blocks(head_dim)["BLOCK_E"] == {80: 16, 48: 16, 96: 32}[head_dim]
    q, k, v, do = random_qkv((2, heads), seq_q, seq_k, head_dim, torch.float32, seed=head_dim, kv_heads=kv_heads)
    check_against_reference(flash_attention_triton_with_lse, _apply_with(backward), q, k, v, do, is_causal, 1e-4)


def test_default_backward_by_shape_and_determinism():
    # Unnamed: atomic only for causal attention over >= 4096 keys or where the Gluon backward
    # runs, and never under determinism.
    assert backward_mode() == "split" and backward_mode("atomic") == "atomic"
    assert backward_mode(None, True, 4096) == "atomic" and backward_mode(None, True, 4095) == "split"
    assert backward_mode(None, False, 16384) == "split" and backward_mode("split", True, 16384) == "split"
    # Where the Gluon backward runs ("atomic" on an H100), it is the default at any length.
    assert (
        backward_mode(None, False, 1024, gluon=True) == "atomic"
        and backward_mode("split", False, 1024, True) == "split"
    )
    q, k, v, _ = random_qkv((2,), 20, 24, 16, torch.float32)
    torch.use_deterministic_algorithms(True)
    try:
        assert backward_mode(None, True, 16384) == "split" and backward_mode("ordered") == "ordered"
        assert backward_mode(None, False, 16384, gluon=True) == "split"
        with pytest.raises(UsageError, match="atomic"):
            FlashAttention2Triton.apply(q, k, v, True, "atomic")
    finally:
        torch.use_deterministic_algorithms(False)
    with pytest.raises(UsageError):
        backward_mode("racy")


def test_tuned_tiles_are_kept_apart_for_every_kernel_the_host_compiles():
    # What the host varies that makes another kernel (besides the tiles): the lengths, head_dim
    # and its split into column blocks ("ordered" pads), causal, precision; for
    # the dK/dV kernel the dQ mode and the GQA group it is unrolled over. A tuning cache entry
    # shared by two of these would run one's tiles on the other.
    for (name, _), tuner in tiles_module.TUNED.items():
        assert {"seq_q", "seq_k", "HEAD_DIM", "BLOCK_E", "CAUSAL", "PRECISION"} <= set(tuner.keys), name
        if name in ("dkdv", "dkdv_dq"):
            assert {"DQ_MODE", "GROUP"} <= set(tuner.keys), name


@pytest.mark.parametrize("is_causal", [False, True])
def test_fp16_with_non_contiguous_inputs(is_causal):
    q, k, v, do = random_qkv((2, 2), 41, 35, 16, torch.float16, seed=3)
    q, k, v = (t.detach().transpose(1, 2).contiguous().transpose(1, 2).requires_grad_() for t in (q, k, v))
    check_against_reference(flash_attention_triton_with_lse, FlashAttention2Triton.apply, q, k, v, do, is_causal, 5e-3)


@pytest.mark.parametrize("lead", [(), (2,), (2, 3), (2, 1, 2)])
def test_forward_saves_inputs_output_and_lse_in_the_callers_shapes(lead):
    q, k, v, _ = random_qkv(lead, 20, 24, 16, torch.float32)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        FlashAttention2Triton.apply(q, k, v, True)
    shapes = [tuple(t.shape) for t in saved]
    qs, ks = tuple(q.shape), tuple(k.shape)
    assert sorted(shapes) == sorted([qs, ks, ks, qs, qs[:-1]])  # q, k, v, output, log-sum-exp


@pytest.mark.parametrize("lead", [(), (3,), (2, 3), (2, 1, 3)])
def test_output_is_laid_out_with_heads_inside_the_sequence(lead):
    # (B, H, T, d) stored as (B, T, H, d): the model's y.transpose(1, 2).reshape(B, T, H * d) is
    # then a view (SDPA's flash and cuDNN kernels store theirs so too); for other ranks the
    # caller's shape still comes back. Values: the float64 tests above.
    q, k, v, _ = random_qkv(lead, 20, 24, 16, torch.float32)
    out = FlashAttention2Triton.apply(q, k, v, True)
    assert out.shape == q.shape
    if len(lead) == 2:
        B, H, T, d = out.shape
        assert out.transpose(1, 2).is_contiguous()
        assert out.transpose(1, 2).reshape(B, T, H * d).data_ptr() == out.data_ptr()


def test_model_with_triton_attention_matches_naive():
    loss, grads = model_loss_and_grads("triton")
    expected_loss, expected_grads = model_loss_and_grads("naive")
    torch.testing.assert_close(loss, expected_loss, rtol=1e-5, atol=1e-5)
    for grad, expected in zip(grads, expected_grads):
        torch.testing.assert_close(grad, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seq_q, seq_k", [(21, 50), (50, 21)])
def test_causal_masks_are_top_left_aligned(seq_q, seq_k):
    """Query i sees keys 0..i whatever the lengths (not FlashAttention's bottom-right alignment)."""
    q, k, v, _ = random_qkv((1, 2), seq_q, seq_k, 16, torch.float32, seed=seq_q)
    top_left, bottom_right, live = top_left_and_bottom_right(q, k, v)
    ours = FlashAttention2Triton.apply(q, k, v, True).double()
    torch.testing.assert_close(ours, top_left, rtol=1e-4, atol=1e-4)
    assert (ours[..., live, :] - bottom_right).abs().max() > 1e-2


# ------------------------------------------------- lmperf::flash_attention as a PyTorch operator


@pytest.mark.parametrize("is_causal, seq_q, seq_k, kv_heads", [(True, 33, 33, 2), (False, 17, 40, 1)])
def test_the_operator_passes_opcheck(is_causal, seq_q, seq_k, kv_heads):
    # Schema, fake (meta) implementation, autograd registration and AOT dispatch (static and
    # dynamic shapes), each against running the operator itself.
    from lmperf.attention.flash_triton import flash_attention_op

    torch.manual_seed(seq_q)
    q = torch.randn(1, 2, seq_q, 16, requires_grad=True)
    k, v = (torch.randn(1, kv_heads, seq_k, 16, requires_grad=True) for _ in range(2))
    torch.library.opcheck(flash_attention_op, (q, k, v, is_causal, True, None))


def test_torch_compile_traces_the_model_in_one_graph():
    # fullgraph=True: a graph break anywhere in a block (the operator, its dispatch) is an error.
    from lmperf.model import TransformerLM, preset

    torch.manual_seed(0)
    model = TransformerLM(preset("tiny", vocab_size=300, max_seq_len=64, attention="triton"))
    block = torch.compile(model.blocks[0], fullgraph=True, backend="aot_eager")
    x = torch.randn(2, 24, model.config.d_model, requires_grad=True)
    compiled = block(x)
    expected = model.blocks[0](x)
    torch.testing.assert_close(compiled, expected, rtol=1e-5, atol=1e-5)
    (grad,) = torch.autograd.grad(compiled.sum(), x)
    (expected_grad,) = torch.autograd.grad(expected.sum(), x)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("checkpoint, forwards", [("none", 1), ("full", 2), ("selective", 1), ("selective:1", 1)])
def test_selective_checkpointing_keeps_lmperfs_attention_as_it_keeps_sdpas(monkeypatch, checkpoint, forwards):
    # The forward kernel is counted where the operator launches it: "selective" keeps its output
    # and log-sum-exp, so the backward recomputes the block's matmuls but not attention.
    from lmperf.attention import flash_triton
    from lmperf.model import TransformerLM, preset

    calls = []
    forward = flash_triton.triton_forward
    monkeypatch.setattr(flash_triton, "triton_forward", lambda *a, **kw: calls.append(1) or forward(*a, **kw))
    torch.manual_seed(0)
    config = preset("tiny", vocab_size=300, max_seq_len=64, attention="triton")
    model = TransformerLM(config, checkpoint)
    tokens = torch.randint(0, config.vocab_size, (2, 25))
    model(tokens[:, :-1], tokens[:, 1:]).backward()
    assert len(calls) == forwards * config.n_layers

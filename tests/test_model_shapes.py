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
from lmperf.model.transformer import lm_loss


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
        dict(head_dim=128, n_kv_heads=4, qk_norm=True),  # 12 heads of 128: attention 1536 wide
        dict(head_dim=32, n_kv_heads=6, tie_embeddings=True),  # 384 wide, no q/k norms
    ],
)
def test_parameter_count_matches_the_modules_and_a_hand_count(overrides):
    config = preset("small", **overrides)
    with torch.device("meta"):
        model = TransformerLM(config)
    d, f, L, V = 768, 3072, 12, 10_000
    hd = overrides.get("head_dim", 64)  # small: 12 heads of 64
    width, kv = 12 * hd, config.n_kv_heads * hd
    mlp = (2 if config.mlp == "gelu" else 3) * d * f
    head = 0 if config.tie_embeddings else V * d
    qk_norms = 2 * hd if config.qk_norm else 0
    by_hand = V * d + L * (2 * d * width + 2 * d * kv + mlp + 2 * d + qk_norms) + d + head
    assert sum(p.numel() for p in model.parameters()) == by_hand  # a tied matrix counted once
    assert parameter_count(config)["total"] == by_hand


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "overrides",
    [
        dict(n_kv_heads=2),
        dict(n_kv_heads=1, tie_embeddings=True),
        dict(mlp="gelu", tie_embeddings=True, vocab_size=300),
        dict(head_dim=32, n_kv_heads=2, qk_norm=True),  # 4 heads of 32: attention 128 wide over d 64
        dict(head_dim=8, n_kv_heads=1, mlp="gelu"),  # 32 wide
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


# tiny with heads wider than d / heads: 4 query heads of 32 (attention 128 wide over d 64), 2 K/V
# heads, the per-head q and k norms (Qwen3's shape, small).
WIDE = dict(head_dim=32, n_kv_heads=2, qk_norm=True)


@pytest.mark.parametrize("impl", ["naive", "sdpa", "torch"])
def test_heads_wider_than_d_over_heads_run_forward_and_backward(impl):
    torch.manual_seed(0)
    model = TransformerLM(preset("tiny", attention=impl, **WIDE))
    attn = model.blocks[0].attn
    assert tuple(attn.qkv_proj.weight.shape) == (128 + 2 * 64, 64) and tuple(attn.out_proj.weight.shape) == (64, 128)
    assert tuple(attn.q_norm.weight.shape) == tuple(attn.k_norm.weight.shape) == (32,)
    tokens = torch.randint(0, 512, (2, 37))
    logits = model(tokens)
    assert logits.shape == (2, 37, 512)
    lm_loss(logits, tokens).backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all() and param.grad.abs().sum() > 0, name


def test_naive_sdpa_and_torch_attention_agree_on_wide_heads():
    tokens = torch.randint(0, 512, (2, 29), generator=torch.Generator().manual_seed(0))
    results = {}
    for impl in ("naive", "sdpa", "torch"):
        torch.manual_seed(1)
        model = TransformerLM(preset("tiny", attention=impl, **WIDE))
        loss = lm_loss(model(tokens), tokens)
        loss.backward()
        results[impl] = (
            loss.detach(),
            model.blocks[0].attn.q_norm.weight.grad,
            model.blocks[0].attn.qkv_proj.weight.grad,
        )
    for impl in ("sdpa", "torch"):
        for got, want in zip(results[impl], results["naive"]):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def _attention_by_hand(attn, x, q_gain, k_gain, eps, theta):
    """The block's attention written out in float64 with torch ops: q, k, v from the QKV weight's
    rows; each head of q and k divided by its root mean square and multiplied by its gain; pair j
    (channels 2j, 2j+1) of position t turned as a complex number by t·theta^(-2j/hd); causal
    softmax(q k^T / sqrt(hd)) v, each K/V head read by its group of query heads
    (per_head_reference); heads merged; the output projection."""
    B, T, _ = x.shape
    H, Hkv, hd = 4, 2, 32
    wq, wk, wv = attn.qkv_proj.weight.double().split((H * hd, Hkv * hd, Hkv * hd))

    def heads(weight, n):
        return (x @ weight.T).view(B, T, n, hd).transpose(1, 2)

    def normed(t, gain):
        return t / torch.sqrt(t.pow(2).mean(-1, keepdim=True) + eps) * gain

    angles = torch.arange(T, dtype=torch.float64)[:, None] * theta ** (
        -torch.arange(0, hd, 2, dtype=torch.float64) / hd
    )
    turn = torch.polar(torch.ones_like(angles), angles)  # (T, hd/2)

    def rotated(t):
        pairs = torch.view_as_complex(t.reshape(*t.shape[:-1], hd // 2, 2).contiguous())
        return torch.view_as_real(pairs * turn).flatten(-2)

    q = rotated(normed(heads(wq, H), q_gain))
    k = rotated(normed(heads(wk, Hkv), k_gain))
    y = per_head_reference(q, k, heads(wv, Hkv), True)
    return y.transpose(1, 2).reshape(B, T, H * hd) @ attn.out_proj.weight.double().T


def _wide_attention_and_reference(impl: str, length: int, random_gains: bool):
    """A WIDE block's attention (gains 1, or drawn from [0.5, 2]), an input of `length` tokens
    and the float64 output by hand."""
    torch.manual_seed(0)
    config = preset("tiny", attention=impl, **WIDE)
    attn = TransformerLM(config).blocks[0].attn
    if random_gains:
        with torch.no_grad():
            attn.q_norm.weight.uniform_(0.5, 2.0)
            attn.k_norm.weight.uniform_(0.5, 2.0)
    x = torch.randn(2, length, 64, generator=torch.Generator().manual_seed(1))
    q_gain, k_gain = attn.q_norm.weight.detach().double(), attn.k_norm.weight.detach().double()
    return attn, x, _attention_by_hand(attn, x.double(), q_gain, k_gain, config.norm_eps, config.rope_theta)


@pytest.mark.parametrize("impl", ["naive", "sdpa"])
@pytest.mark.parametrize("gains", ["ones", "random"])
def test_qk_norm_attention_matches_a_reference_by_hand(impl, gains):
    attn, x, expected = _wide_attention_and_reference(impl, 23, gains == "random")
    with torch.no_grad():
        torch.testing.assert_close(attn(x).double(), expected, rtol=1e-4, atol=1e-5)
        # the norms are applied: a q gain of 2 doubles every score, which the output shows
        attn.q_norm.weight.fill_(2.0)
        assert not torch.allclose(attn(x).double(), expected, rtol=1e-2, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["sdpa", "triton"])
def test_qk_norm_attention_on_the_gpu_in_bf16_matches_the_reference(impl):
    """The per-head q/k norms and heads wider than d / heads through the GPU kernels, at an odd
    length: against the float64 reference by hand."""
    attn, x, expected = _wide_attention_and_reference(impl, 301, random_gains=True)
    with torch.no_grad():
        out = attn.cuda().bfloat16()(x.cuda().bfloat16())
    torch.testing.assert_close(out.double().cpu(), expected, rtol=3e-2, atol=3e-2)


@pytest.mark.gpu
def test_wide_heads_with_qk_norm_compile_and_train_on_the_gpu():
    """torch.compile of the Qwen3-shaped model gives eager's loss and q-norm gradient under bf16
    autocast (with the q/k norms compiled, inductor's CUDA code gives NaN losses: torch 2.11)."""
    torch.manual_seed(0)
    model = TransformerLM(preset("tiny", attention="sdpa", **WIDE)).cuda()
    tokens = torch.randint(0, 512, (2, 77), device="cuda")
    results = []
    for step in (model, torch.compile(model)):
        model.zero_grad()
        with torch.autocast("cuda", torch.bfloat16):
            loss = lm_loss(step(tokens), tokens)
        loss.backward()
        results.append((loss.detach().float(), model.blocks[0].attn.q_norm.weight.grad.clone()))
    (eager_loss, eager_grad), (compiled_loss, compiled_grad) = results
    assert torch.isfinite(eager_loss) and eager_grad.abs().sum() > 0
    torch.testing.assert_close(compiled_loss, eager_loss, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(compiled_grad, eager_grad, rtol=5e-2, atol=5e-3)


def test_compiled_blocks_run_the_qk_norms_eagerly():
    """Under torch.compile the q/k norms run between a block's graphs, not inside one: dynamo
    breaks its graph at them and nowhere else, and not at all in a block without them; the pieces
    give the block's eager output (inductor's own numbers are the GPU test's)."""
    torch.manual_seed(0)
    x = torch.randn(1, 19, 64)
    for qk_norm in (True, False):
        block = TransformerLM(preset("tiny", **{**WIDE, "qk_norm": qk_norm})).blocks[0]
        torch._dynamo.reset()
        breaks = torch._dynamo.explain(block)(x).break_reasons
        assert bool(breaks) == qk_norm
        at = {brk.user_stack[-1].line for brk in breaks}  # the source line each break is at
        assert all("QK_NORM" in line or "_eager_qk_norms" in line for line in at), at
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(block, backend="aot_eager")(x), block(x))

"""Checkpoint policies, the fused loss and bf16 parameters change memory, never the result.

At 2 layers, d 64, vocabulary 1000, context 128 on a CPU, every combination gives the plain
eager model's loss and gradients: in fp32 to fp32 round-off (rtol 1e-5); with bf16 parameters
to bf16 round-off of the bf16 eager model (loss rtol 1e-2, gradients within 5% of their
largest entry), and the bf16 model's loss within 2% of the fp32 one.
"""

import dataclasses
import itertools

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from lmperf.errors import UsageError
from lmperf.model import TransformerLM, preset
from lmperf.model.step import ModelStep, StepConfig
from lmperf.model.checkpointing import block_policies
from lmperf.model.transformer import LOSSES

CONFIG = preset("tiny", vocab_size=1000, max_seq_len=128, attention="sdpa")
CHECKPOINT_POLICIES = (
    "none",
    "full",
    "selective",
    "selective-mm",
    "selective-mm-out",
    "selective:1",
    "selective-mm:1",
    "selective-mm-out*1+selective-mm*1",
)  # ":1" and "*1+..." mix two kinds of block
BATCH, CONTEXT = 2, 128
# Heads wider than d / heads (4 of 32: the attention 128 wide over d 64), 2 K/V heads and the
# per-head q and k norms: the QKV output (128 + 2·64) and the output projection's input (128)
# are other widths than tiny's, and the norms run between the QKV projection and attention.
WIDE = dataclasses.replace(CONFIG, head_dim=32, n_kv_heads=2, qk_norm=True)


def _batch():
    data = torch.randint(0, CONFIG.vocab_size, (BATCH, CONTEXT + 1), generator=torch.Generator().manual_seed(1))
    data[0, 5] = -100  # an ignored target: both losses must skip it the same way
    return data[:, :-1].clamp(min=0), data[:, 1:]


def _loss_and_grads(checkpoint="none", loss="eager", param_dtype=torch.float32, config=CONFIG):
    torch.manual_seed(0)
    model = TransformerLM(config, checkpoint, loss)
    for param in model.parameters():
        param.data = param.data.to(param_dtype)
    inputs, targets = _batch()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=param_dtype == torch.bfloat16):
        value = model(inputs, targets)
    value.backward()
    return value.float(), {name: p.grad.float() for name, p in model.named_parameters()}


def _assert_matches(got, want, rtol, grad_share):
    torch.testing.assert_close(got[0], want[0], rtol=rtol, atol=0)
    assert got[1].keys() == want[1].keys()
    for name, grad in want[1].items():
        torch.testing.assert_close(got[1][name], grad, rtol=rtol, atol=grad_share * grad.abs().max().item(), msg=name)


@pytest.fixture(scope="module")
def references():
    return {torch.float32: _loss_and_grads(), torch.bfloat16: _loss_and_grads(param_dtype=torch.bfloat16)}


@pytest.mark.parametrize("checkpoint, loss", list(itertools.product(CHECKPOINT_POLICIES, LOSSES))[1:])
def test_fp32_options_equal_the_plain_eager_model(references, checkpoint, loss):
    _assert_matches(_loss_and_grads(checkpoint, loss), references[torch.float32], 1e-5, 1e-6)


@pytest.mark.parametrize("checkpoint, loss", list(itertools.product(CHECKPOINT_POLICIES, LOSSES)))
def test_bf16_parameters_equal_the_bf16_eager_model(references, checkpoint, loss):
    got = _loss_and_grads(checkpoint, loss, torch.bfloat16)
    _assert_matches(got, references[torch.bfloat16], 1e-2, 5e-2)
    torch.testing.assert_close(got[0], references[torch.float32][0], rtol=2e-2, atol=0)


class _AttentionCalls(TorchDispatchMode):
    def __init__(self, ops):
        super().__init__()
        self.ops, self.calls = ops, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += func in self.ops
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("checkpoint, forwards", [("none", 1), ("full", 2), ("selective", 1), ("selective:1", 1)])
def test_selective_checkpointing_keeps_attention_and_full_recomputes_it(checkpoint, forwards):
    from lmperf.model.transformer import attention_ops

    torch.manual_seed(0)
    model = TransformerLM(CONFIG, checkpoint)
    inputs, targets = _batch()
    with _AttentionCalls(attention_ops()) as probe:
        model(inputs, targets).backward()
    assert probe.calls == forwards * CONFIG.n_layers


@pytest.mark.parametrize("checkpoint, forwards", [("none", 1), ("selective", 2)])
def test_selective_checkpointing_recomputes_lmperfs_own_attention(monkeypatch, checkpoint, forwards):
    # The policy keeps operators' outputs; lmperf's PyTorch FlashAttention is an autograd.Function,
    # not an operator, so "selective" runs its forward again in the backward (as the README says).
    # lmperf's Triton attention is an operator: interpreted_triton_cases.py counts its calls.
    from lmperf.attention import flash_torch

    calls = []
    forward = flash_torch.FlashAttention2Torch.forward
    monkeypatch.setattr(
        flash_torch.FlashAttention2Torch, "forward", staticmethod(lambda ctx, *a: calls.append(1) or forward(ctx, *a))
    )
    model = TransformerLM(dataclasses.replace(CONFIG, attention="torch"), checkpoint)
    inputs, targets = _batch()
    model(inputs, targets).backward()
    assert len(calls) == forwards * CONFIG.n_layers


@pytest.mark.parametrize(
    "checkpoint, recomputed",
    [
        ("none", 0),
        ("selective", 8),
        ("selective:1", 4),
        ("selective:2", 0),
        ("selective-mm", 2),
        ("selective-mm:1", 1),
        ("selective-mm-out", 0),
        ("selective-mm-out*1+selective-mm*1", 1),
        ("full*1+none*1", 4),
    ],
)
@pytest.mark.parametrize("config", [CONFIG, WIDE], ids=["tiny", "wide-heads"])
def test_checkpoint_policies_recompute_the_matmuls_they_do_not_keep(checkpoint, recomputed, config):
    # Each tiny block runs 5 matmuls (QKV, output, w1, w3, w2) in its forward; a block that keeps
    # everything runs them once, a selectively checkpointed block runs 4 again in the backward:
    # recomputation stops once every saved tensor is back, and no backward needs w2's output;
    # under selective-mm only the output projection runs again (QKV, w1 and w3 are kept), and
    # under selective-mm-out none does. The same with wide heads, whose QKV output (256) is not
    # d 64 wide and whose output projection takes 128, not d_ff 256.
    torch.manual_seed(0)
    model = TransformerLM(config, checkpoint)
    inputs, targets = _batch()
    with _AttentionCalls({torch.ops.aten.mm.default}) as probe:
        model(inputs, targets).backward()
    forward_only = 5 * config.n_layers + 1  # the blocks' and the LM head's
    backward = 2 * forward_only  # input and weight gradients of each
    assert probe.calls == forward_only + backward + recomputed


@pytest.mark.parametrize("checkpoint", CHECKPOINT_POLICIES[1:])
def test_checkpoint_policies_of_wide_heads_equal_the_plain_eager_model(checkpoint):
    want = _loss_and_grads(config=WIDE)
    _assert_matches(_loss_and_grads(checkpoint, config=WIDE), want, 1e-5, 1e-6)


@pytest.mark.parametrize(
    "changes, refused, message",
    [
        # 4 heads of 8 and 2 K/V heads: a QKV output 32 + 2·16 = 64 wide, d_model's width
        (dict(head_dim=8, n_kv_heads=2), ("selective-mm", "selective-mm-out"), "QKV projection is as wide as"),
        # 4 heads of 64: an attention 256 wide, d_ff's width, which selective-mm-out reads as w2's input
        (dict(head_dim=64), ("selective-mm-out",), "attention is as wide as its d_ff"),
    ],
)
def test_policies_by_width_refuse_widths_they_would_mistake(changes, refused, message):
    config = dataclasses.replace(CONFIG, **changes)
    for checkpoint in ("selective-mm", "selective-mm-out"):
        if checkpoint in refused:
            with pytest.raises(UsageError, match=message):
                TransformerLM(config, checkpoint)
        else:
            TransformerLM(config, checkpoint)


def test_block_policies_put_the_kept_blocks_last():
    assert block_policies("selective:2", 5) == ["selective"] * 3 + ["none"] * 2
    assert block_policies("full", 2) == ["full", "full"]
    assert block_policies("selective-mm-out:1", 3) == ["selective-mm-out"] * 2 + ["none"]
    assert block_policies("selective-mm-out*2+selective-mm*3", 5) == ["selective-mm-out"] * 2 + ["selective-mm"] * 3
    for bad in (
        "selective*2+full*2",
        "selective*2+nonsense*3",
        "selective*x+full*3",
        "selective*5+",
        "selective*²+none*3",
    ):
        with pytest.raises(UsageError, match="checkpoint"):
            block_policies(bad, 5)


@pytest.mark.parametrize("checkpoint", ["selective-mm", "selective-mm-out", "selective*1+selective-mm*1"])
def test_policies_by_width_refuse_an_mlp_as_wide_as_the_model(checkpoint):
    # With d_ff = d_model the gate and up outputs have the model's width and the down projection
    # takes it as input: no width tells them from the output projection.
    square = dataclasses.replace(CONFIG, d_ff=CONFIG.d_model)
    with pytest.raises(UsageError, match="d_ff equals its d_model"):
        TransformerLM(square, checkpoint)
    TransformerLM(square, "selective")  # attention's outputs are told by operator, not width
    for bad in ("selective:6", "selective:-1", "full:1", "selective:x", "selective-mm-out:6", "none:0", "selective:²"):
        with pytest.raises(UsageError, match="unknown checkpoint policy"):
            block_policies(bad, 5)


def test_bf16_parameters_make_bf16_gradients_and_optimizer_state():
    step = ModelStep(
        StepConfig("tiny", 16, "train-step", "bf16", batch=1, param_dtype="bf16", loss="fused"), torch.device("cpu")
    )
    step.run("train-step")
    param = next(step.model.parameters())
    state = step.optimizer.state[param]
    assert param.dtype == param.grad.dtype == state["exp_avg"].dtype == torch.bfloat16


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(checkpoint="some"), "unknown checkpoint policy 'some'"),
        (dict(loss="liger"), "unknown loss"),
        (dict(param_dtype="bf16"), "bf16 parameters need --precisions bf16"),
        (dict(seq_len=40_000, preset="cs336-8b"), "exceeds the model's maximum 32768"),
    ],
)
def test_bad_step_options_are_usage_errors(changes, message):
    with pytest.raises(UsageError, match=message):
        StepConfig(**{**dict(preset="tiny", seq_len=16, mode="train-step"), **changes}).validate()

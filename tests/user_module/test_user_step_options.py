"""lmperf's step options on a user's module: the fused loss through its last Linear, activation
checkpointing of its repeated blocks, bf16 parameters, regional compilation; and the Python API
with a module instance, and with a contract of its own (its own batch and loss functions)."""

from dataclasses import replace

import pytest
import torch
from torch import nn

from lmperf.bench import run_bench
from lmperf.model.choice import ModelChoice
from lmperf.model.step import ModelStep
from lmperf.run.options import SweepOptions
from lmperf.profile.breakdown import tensor_parts
from scratch_model import PARAM_TENSORS, PARAMS, SCRATCH

CPU = torch.device("cpu")


def scratch_config(**changes):
    base = ModelChoice(module=SCRATCH).base(None, "tiny")
    return replace(base, seq_len=16, mode="train-step", batch=2, **changes).validate()


def loss_and_grads(config) -> tuple[torch.Tensor, dict]:
    torch.manual_seed(0)  # the same initial weights for every configuration
    step = ModelStep(config, CPU)
    step.run("forward-backward")
    return step.loss().detach(), {n: p.grad.clone() for n, p in step.model.named_parameters()}


@pytest.mark.parametrize(
    "changes",
    [{"loss": "fused"}, {"checkpoint": "full"}, {"checkpoint": "selective"}],
    ids=["fused-loss", "full-checkpoint", "selective-checkpoint"],
)
def test_options_change_memory_not_the_numbers(changes):
    loss, grads = loss_and_grads(scratch_config())
    other_loss, other_grads = loss_and_grads(scratch_config(**changes))
    assert other_loss.dim() == 0 and torch.allclose(other_loss, loss, rtol=1e-5)
    assert other_grads.keys() == grads.keys()  # module paths unchanged by the wrapping
    for name, grad in grads.items():
        assert torch.allclose(other_grads[name], grad, rtol=1e-4, atol=1e-6), name


def test_fused_loss_forms_no_logits():
    """The head returns the loss: no (batch, context, vocab) tensor leaves the module."""
    step = ModelStep(scratch_config(loss="fused"), CPU)
    seen = []
    step.model.lm_head.register_forward_hook(lambda module, args, output: seen.append(output.shape))
    step.run("forward")
    assert seen == [torch.Size([])]


def test_bf16_parameters_and_their_bytes():
    """2 bytes per parameter, gradient and AdamW moment; AdamW's step counts stay fp32."""
    step = ModelStep(scratch_config(precision="bf16", param_dtype="bf16"), CPU)
    parts = tensor_parts(step)
    assert {p.dtype for p in step.model.parameters()} == {torch.bfloat16}
    assert parts.parameters == parts.gradients == PARAMS * 2
    assert parts.optimizer_state == 2 * PARAMS * 2 + PARAM_TENSORS * 4


def test_compile_compiles_each_repeated_block_once():
    from torch._dynamo.utils import counters

    step = ModelStep(scratch_config(compile="compile", checkpoint="full"), CPU)
    counters.clear()
    step.run("forward")
    assert counters["stats"]["unique_graphs"] == 1  # one graph: the blocks share it
    assert all(layer._compiled_call_impl is not None for layer in step.model.layers)
    assert step.model._compiled_call_impl is None  # embedding, head and loss stay eager


class Regressor(nn.Module):
    """Not a language model: features (batch, context, 8) to one value per position."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return self.out(x)


def regression_batch(batch, context, device):
    return torch.randn(batch, context, 8, device=device), torch.randn(batch, context, 1, device=device)


def regression_loss(model, batch):
    features, target = batch
    return nn.functional.mse_loss(model(features), target)


def test_python_api_with_an_instance_of_another_contract(tmp_path):
    module = Regressor()
    before = [p.detach().clone() for p in module.parameters()]
    choice = ModelChoice.of(module, loss=regression_loss, batch=regression_batch)
    result = run_bench(
        SweepOptions(
            contexts="5",
            batch=4,
            modes="forward,train-step",
            warmup=1,
            steps=2,
            device="cpu",
            runs_root=tmp_path,
            model=choice,
        )
    )
    rows = {row["mode"]: row for row in result.rows}
    # Per position: 3 layers of 2·8·8 and the output 2·8·1, for 4 × 5 positions. The backward
    # computes input and weight gradients (2x the forward) except for the first layer, whose
    # input (the features) needs no gradient: only its weight gradient, 1x.
    positions = 4 * 5
    forward = positions * (3 * 2 * 8 * 8 + 2 * 8)
    backward = positions * (2 * 8 * 8 + 2 * (2 * 2 * 8 * 8) + 2 * 2 * 8)
    assert rows["forward"]["matmul_flops"] == forward == 8_000
    assert rows["train-step"]["matmul_flops"] == forward + backward == 21_440
    assert rows["forward"]["module"]["factory"] == "instance of Regressor" and rows["forward"]["params"] == 3 * 72 + 9
    assert rows["forward"]["transformer_flops"] is None  # no vocabulary: not a language model
    assert all(torch.equal(a, b) for a, b in zip(before, module.parameters()))  # the steps ran on a copy


def test_python_api_with_a_language_model_instance(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("scratch_for_api", SCRATCH.rsplit(":", 1)[0])
    scratch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scratch)
    result = run_bench(
        SweepOptions(
            contexts="8",
            batch=2,
            modes="forward",
            warmup=0,
            steps=1,
            device="cpu",
            runs_root=tmp_path,
            model=ModelChoice.of(scratch.build(num_layers=1)),
        )
    )
    (row,) = result.rows
    assert row["status"] == "ok" and row["module"]["layers"] == 1 and row["module"]["vocab_size"] == 256


def test_own_batch_and_loss_come_together():
    from lmperf.errors import UsageError

    with pytest.raises(UsageError, match="together"):
        ModelChoice.of(Regressor(), loss=regression_loss)

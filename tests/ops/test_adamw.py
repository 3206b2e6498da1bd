"""lmperf.ops.AdamW without the Triton interpreter: the PyTorch path every CPU tensor takes.

Expected values: torch.optim.AdamW (single-tensor loop) in float64, where rounding cannot hide a
wrong formula; the kernel itself is tested under the interpreter (interpreted_adamw_cases.py) and
on a GPU (tests/ops/test_adamw_gpu.py)."""

import pytest
import torch

from lmperf.ops import AdamW
from lmperf.ops.adamw import triton_kernel


def _pair(dtype):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(9, 17), torch.nn.Tanh(), torch.nn.Linear(17, 3)).to(dtype)
    twin = torch.nn.Sequential(torch.nn.Linear(9, 17), torch.nn.Tanh(), torch.nn.Linear(17, 3)).to(dtype)
    twin.load_state_dict(model.state_dict())
    return model, twin


@pytest.mark.parametrize("weight_decay", [0.0, 0.2])
def test_matches_torch_adamw_in_float64(weight_decay):
    ours, theirs = _pair(torch.float64)
    hyper = dict(lr=1e-2, betas=(0.85, 0.98), eps=1e-6, weight_decay=weight_decay)
    optimizers = AdamW(ours.parameters(), **hyper), torch.optim.AdamW(theirs.parameters(), foreach=False, **hyper)
    x = torch.randn(5, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    for _ in range(3):
        for model, optimizer in zip((ours, theirs), optimizers):
            optimizer.zero_grad()
            model(x).pow(2).sum().backward()
            optimizer.step()
    for a, b in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
    assert not torch.equal(ours[0].weight, _pair(torch.float64)[0][0].weight)  # it moved


def test_parameters_without_gradients_are_left_alone():
    ours, _ = _pair(torch.float32)
    optimizer = AdamW(ours.parameters(), lr=0.1)
    ours[2].weight.sum().backward()  # the first layer gets no gradient
    before = ours[0].weight.clone()
    optimizer.step()
    assert torch.equal(ours[0].weight, before) and ours[0].weight not in optimizer.state
    assert optimizer.state[ours[2].weight]["step"].item() == 1


def test_cpu_tensors_take_the_pytorch_path_without_the_interpreter():
    tensor = torch.zeros(8)
    assert triton_kernel([tensor, tensor, tensor, tensor]) is None


@pytest.mark.parametrize(
    "bad", [dict(lr=-1.0), dict(eps=-1e-8), dict(betas=(1.0, 0.9)), dict(betas=(0.9, -0.1)), dict(weight_decay=-0.1)]
)
def test_bad_hyperparameters_are_refused(bad):
    with pytest.raises(ValueError, match="invalid"):
        AdamW([torch.nn.Parameter(torch.zeros(2))], **bad)


@pytest.mark.parametrize("flag", ["amsgrad", "maximize"])
def test_a_torch_state_dict_asking_for_what_this_adamw_lacks_is_refused(flag):
    """A torch.optim.AdamW state_dict carries amsgrad and maximize into the groups: stepping plain
    AdamW instead would be silent."""
    ours, theirs = _pair(torch.float32)
    optimizer = AdamW(ours.parameters())
    optimizer.load_state_dict(torch.optim.AdamW(theirs.parameters(), **{flag: True}).state_dict())
    ours[0].weight.sum().backward()
    with pytest.raises(ValueError, match=flag):
        optimizer.step()


def test_complex_parameters_are_refused():
    param = torch.nn.Parameter(torch.zeros(3, dtype=torch.complex64))
    param.grad = torch.ones(3, dtype=torch.complex64)
    with pytest.raises(RuntimeError, match="complex"):
        AdamW([param]).step()

"""`lmperf precision`: which dtype each module really sees under autocast, and why accumulation
precision matters.

The dtype table is read from a real forward and backward of the model under
torch.autocast(dtype): forward hooks record each module's output dtype, full backward hooks the
dtype of the gradient arriving at its output, and after the backward each parameter's .grad
dtype is read. The accumulation demo adds 0.01 a thousand times with an fp32 accumulator, an
fp16 accumulator, and fp16 addends into an fp32 accumulator (mixed precision).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import torch

from lmperf.dtypes import torch_dtype
from lmperf.model import TransformerLM
from lmperf.model.step import StepConfig
from lmperf.model.transformer import lm_loss

AUTOCAST_DTYPES = ("bf16", "fp16")
DTYPE_COLUMNS = [
    ("module", "module", ""),
    ("type", "type", ""),
    ("param dtype", "param_dtype", ""),
    ("output dtype", "output_dtype", ""),
    ("output grad dtype", "output_grad_dtype", ""),
    ("param grad dtype", "param_grad_dtype", ""),
]
ACCUMULATION_COLUMNS = [
    ("accumulation", "name", ""),
    ("result", "result", ".6f"),
    ("abs error", "abs_error", ".2e"),
    ("rel error", "rel_error", ".2e"),
]


def _short(dtype: torch.dtype | None) -> str:
    return "-" if dtype is None else str(dtype).removeprefix("torch.")


def _first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        return next((v for v in value if isinstance(v, torch.Tensor)), None)
    return None


def _attach_hooks(model: torch.nn.Module, seen: dict[str, dict]) -> list:
    handles = []
    for name, module in model.named_modules():
        entry = seen.setdefault(name or "(model)", {})

        def on_output(module, inputs, output, entry=entry):
            entry["output_dtype"] = _short(_first_tensor(output).dtype)

        def on_grad(module, grad_input, grad_output, entry=entry):
            grad = _first_tensor(grad_output)
            entry["output_grad_dtype"] = _short(grad.dtype if grad is not None else None)

        handles += [module.register_forward_hook(on_output), module.register_full_backward_hook(on_grad)]
    return handles


def _model_and_loss(
    config: StepConfig, device: torch.device, batch: int, seq_len: int
) -> tuple[torch.nn.Module, Callable[[], torch.Tensor]]:
    """A fresh model of `config` (lmperf's, or the user's module) and its loss on a random batch."""
    generator = torch.Generator().manual_seed(0)
    if config.module:
        model = config.module.build(device)
        data, loss_of = (
            config.module.make_batch(batch, seq_len, device, generator),
            config.module.step_loss(model, "eager"),
        )
        return model, lambda: loss_of(model, data)
    with device:
        model = TransformerLM(config.model_config())
    tokens = torch.randint(0, model.config.vocab_size, (batch, seq_len + 1), generator=generator).to(device)
    return model, lambda: lm_loss(model(tokens[:, :-1]), tokens[:, 1:])


def dtype_table(
    config: StepConfig, autocast: str = "bf16", device: str = "cpu", batch: int = 2, seq_len: int = 16
) -> tuple[list[dict], str]:
    """(one row per module, the loss dtype) from a real forward/backward of `config`'s model
    (its own module for a `--module` model) under autocast."""
    dtype = torch_dtype(autocast, AUTOCAST_DTYPES, "autocast dtype")
    torch.manual_seed(0)
    model, loss_of = _model_and_loss(config, torch.device(device), batch, seq_len)
    seen: dict[str, dict] = {}
    handles = _attach_hooks(model, seen)
    try:
        with torch.autocast(torch.device(device).type, dtype=dtype):
            loss = loss_of()
        with warnings.catch_warnings():  # the model's own input (token ids) needs no gradient: expected
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            loss.backward()
    finally:
        for handle in handles:
            handle.remove()
    rows = []
    for name, module in model.named_modules():
        if "output_dtype" not in seen.get(name or "(model)", {}):
            continue  # containers such as ModuleList are never called
        params = list(module.parameters(recurse=False))
        rows.append(
            {
                "module": name or "(model)",
                "type": type(module).__name__,
                "param_dtype": _short(params[0].dtype) if params else "-",
                "param_grad_dtype": _short(params[0].grad.dtype) if params and params[0].grad is not None else "-",
                "output_grad_dtype": "-",
                **seen[name or "(model)"],
            }
        )
    return rows, _short(loss.dtype)


@dataclass(frozen=True)
class Accumulation:
    name: str
    result: float
    abs_error: float
    rel_error: float


def accumulation_demo(value: float = 0.01, count: int = 1000) -> list[Accumulation]:
    """Add `value` `count` times in fp32, in fp16, and fp16 addends into an fp32 sum."""
    exact = value * count
    variants = {
        "fp32 accumulator, fp32 addends": (torch.float32, torch.float32),
        "fp16 accumulator, fp16 addends": (torch.float16, torch.float16),
        "mixed: fp32 accumulator, fp16 addends": (torch.float32, torch.float16),
    }
    results = []
    for name, (accumulator_dtype, addend_dtype) in variants.items():
        total = torch.zeros((), dtype=accumulator_dtype)
        addend = torch.tensor(value, dtype=addend_dtype)
        for _ in range(count):
            total += addend  # in-place add keeps the accumulator's dtype
        result = float(total)
        results.append(Accumulation(name, result, abs(result - exact), abs(result - exact) / exact))
    return results

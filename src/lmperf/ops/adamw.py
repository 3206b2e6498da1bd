"""AdamW whose update is one Triton pass per parameter tensor (lmperf.ops.adamw_triton).

`AdamW(params, lr, betas, eps, weight_decay)` is `torch.optim.AdamW`'s algorithm (decoupled
weight decay, bias-corrected moments, fp32 arithmetic whatever the storage dtype) for a step that
is bound by memory: each parameter, gradient and moment is read once and written once, one
launch per tensor, where PyTorch's fused AdamW walks its tensor lists in fixed chunks. FSDP2's
DTensor parameters are updated through their local shards; their moments are DTensors like
them, so a sharded checkpoint of the optimizer state keeps its layout.

Tensors the kernel cannot take (not contiguous, not on a Triton device, another dtype) take the
same arithmetic as PyTorch ops in fp32 (`_adamw_torch_`), so every parameter gets one algorithm.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

import torch

from lmperf.ops.adamw_hyperparameters import Hyperparameters
from lmperf.ops.triton_device import takes_triton


class AdamW(torch.optim.Optimizer):
    """AdamW with torch.optim.AdamW's arguments and defaults (no amsgrad, no maximize)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2):
        for name, value, low, high in (
            ("learning rate", lr, 0.0, float("inf")),
            ("epsilon", eps, 0.0, float("inf")),
            ("beta1", betas[0], 0.0, 1.0),
            ("beta2", betas[1], 0.0, 1.0),
            ("weight decay", weight_decay, 0.0, float("inf")),
        ):
            if not low <= value < high:
                raise ValueError(f"invalid {name}: {value}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            # A state_dict of torch.optim.AdamW brings these flags along; this AdamW has neither.
            for flag in ("amsgrad", "maximize"):
                if group.get(flag):
                    raise ValueError(f"lmperf's AdamW has no {flag}; this parameter group asks for it")
            beta1, beta2 = group["betas"]
            hyper = Hyperparameters(
                float(group["lr"]), float(beta1), float(beta2), float(group["eps"]), float(group["weight_decay"])
            )
            for param in group["params"]:
                if param.grad is None:
                    continue
                if param.grad.is_sparse:
                    raise RuntimeError("lmperf's AdamW does not take sparse gradients")
                if param.is_complex():
                    raise RuntimeError("lmperf's AdamW does not take complex parameters")
                state = self.state[param]
                if not state:
                    # A CPU step count, as torch.optim.AdamW keeps it when not capturable: reading
                    # it never waits for the GPU.
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                state["step"] += 1
                tensors = [_local(t) for t in (param, param.grad, state["exp_avg"], state["exp_avg_sq"])]
                kernel = triton_kernel(tensors)
                update = kernel.adamw_ if kernel is not None else _adamw_torch_
                update(tensors, hyper, int(state["step"].item()))
        return loss


def _local(tensor: torch.Tensor) -> torch.Tensor:
    """A DTensor's shard on this rank (FSDP2's parameters are DTensors), any other tensor itself.

    Called under no_grad, where DTensor.to_local returns the shard's own storage, so updating it
    updates the parameter."""
    to_local = getattr(tensor, "to_local", None)
    return tensor if to_local is None else to_local()


def triton_kernel(tensors: list[torch.Tensor]) -> ModuleType | None:
    """The Triton kernel's module when it takes these tensors, else None (the PyTorch path).

    Imported on first use: Triton comes with CUDA builds of torch, not with CPU ones."""
    first = tensors[0]
    takes_all = all(
        takes_triton(t) and t.device == first.device and t.is_contiguous() and t.numel() == first.numel()
        for t in tensors
    )
    return importlib.import_module("lmperf.ops.adamw_triton") if takes_all else None


def _adamw_torch_(tensors: Sequence[torch.Tensor], hyper: Hyperparameters, step: int) -> None:
    """The Triton kernel's arithmetic as PyTorch ops on (param, grad, exp_avg, exp_avg_sq), in
    fp32 (or wider) copies written back."""
    param, _, exp_avg, exp_avg_sq = tensors
    wide = torch.promote_types(param.dtype, torch.float32)
    p, g, m, v = (t.to(wide) for t in tensors)
    p.mul_(1.0 - hyper.lr * hyper.weight_decay)
    m.mul_(hyper.beta1).add_(g, alpha=1.0 - hyper.beta1)
    v.mul_(hyper.beta2).addcmul_(g, g, value=1.0 - hyper.beta2)
    denominator = v.sqrt().div_(hyper.bias_correction2_sqrt(step)).add_(hyper.eps)
    p.addcdiv_(m, denominator, value=-hyper.step_size(step))
    for stored, value in ((param, p), (exp_avg, m), (exp_avg_sq, v)):
        stored.copy_(value)

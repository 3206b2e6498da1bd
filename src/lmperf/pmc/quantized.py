"""Quantised weights, as a server runs them: every decoder `nn.Linear` replaced by a module that
keeps its weight in 8 bits and multiplies with PyTorch's own low-precision GEMMs.

- "fp8": weights in float8_e4m3fn with one scale per tensor; activations cast to fp8 with one
  dynamic scale per call (their absolute maximum), then `torch._scaled_mm` on the fp8 tensor
  cores, bf16 out (the per-tensor "fp8 dynamic" scheme of vLLM and TensorRT-LLM).
- "int8": weights and activations in int8 (one scale per weight row, one per activation row),
  `torch._int_mm` on the int8 tensor cores into int32, rescaled to bf16 (SmoothQuant's W8A8).
- "int8-weight-only": int8 weights with one scale per row, bf16 activations,
  `torch._weight_int8pack_mm` (PyTorch's weight-only kernel).

The embedding, the norms and the LM head stay in bf16, as serving stacks keep them.
"""

from __future__ import annotations

import torch
from torch import nn

from lmperf.errors import UsageError

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0  # float8_e4m3fn's largest finite value
INT8_MAX = 127.0
# What each scheme stores and computes, for the truth file.
DESCRIPTIONS = {
    "fp8": "weights float8_e4m3fn, one scale per tensor; activations cast to float8_e4m3fn with one "
    "dynamic scale per call; torch._scaled_mm, bf16 out",
    "int8": "weights int8, one scale per output row; activations int8, one dynamic scale per row; "
    "torch._int_mm into int32, rescaled to bf16",
    "int8-weight-only": "weights int8, one scale per output row; bf16 activations; torch._weight_int8pack_mm",
}
# _scaled_mm needs inner and output sizes that are multiples of 16, _int_mm multiples of 8
_ALIGNMENT = {"fp8": 16, "int8": 8, "int8-weight-only": 1}


def _row_scales(values: torch.Tensor, limit: float) -> torch.Tensor:
    """One scale per row that maps the row's largest magnitude to `limit` (never 0)."""
    return values.abs().amax(dim=-1, keepdim=True).float().clamp(min=1e-12) / limit


def _bias(linear: nn.Linear) -> nn.Parameter | None:
    return None if linear.bias is None else nn.Parameter(linear.bias.detach().to(torch.bfloat16))


class Fp8Linear(nn.Module):
    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        scale = weight.abs().amax().clamp(min=1e-12) / FP8_MAX
        self.register_buffer("weight", (weight / scale).to(FP8))  # (out, in), row-major
        self.register_buffer("weight_scale", scale.reshape(()))
        self.bias = _bias(linear)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])  # (N, in)
        scale = rows.abs().amax().float().clamp(min=1e-12) / FP8_MAX
        quantised = (rows / scale).to(FP8)
        # _scaled_mm takes its second operand column-major: the row-major (out, in) weight's .t()
        out = torch._scaled_mm(
            quantised, self.weight.t(), scale_a=scale, scale_b=self.weight_scale, bias=self.bias, out_dtype=x.dtype
        )
        return out.reshape(*x.shape[:-1], -1)


class _Int8Weights(nn.Module):
    """int8 weights with one scale per output row; `_matmul` multiplies the (N, in) rows by them."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        scale = _row_scales(weight, INT8_MAX)  # (out, 1)
        self.register_buffer("weight", (weight / scale).round().to(torch.int8))  # (out, in)
        self.register_buffer("weight_scale", scale.reshape(-1))  # (out,)
        self.bias = _bias(linear)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self._matmul(x.reshape(-1, x.shape[-1]))  # (N, out)
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], -1)


class Int8Linear(_Int8Weights):
    def _matmul(self, rows: torch.Tensor) -> torch.Tensor:
        scale = _row_scales(rows, INT8_MAX)  # (N, 1)
        quantised = (rows / scale).round().to(torch.int8)
        return (torch._int_mm(quantised, self.weight.t()) * scale * self.weight_scale).to(rows.dtype)


class Int8WeightOnlyLinear(_Int8Weights):
    def _matmul(self, rows: torch.Tensor) -> torch.Tensor:
        return torch._weight_int8pack_mm(rows, self.weight, self.weight_scale.to(rows.dtype))


_MODULES = {"fp8": Fp8Linear, "int8": Int8Linear, "int8-weight-only": Int8WeightOnlyLinear}


def quantize_linears(layers: nn.Module, scheme: str) -> list[str]:
    """Replace every `nn.Linear` inside `layers` (the decoder blocks) by the scheme's module, in
    place; returns the replaced modules' names. A Linear whose sizes the scheme's GEMM cannot
    take is an error, not left in bf16: the capture would then show a mix."""
    quantised = _MODULES[scheme]
    names = [name for name, module in layers.named_modules() if isinstance(module, nn.Linear)]
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = layers.get_submodule(parent_name) if parent_name else layers
        linear = getattr(parent, child)
        if linear.in_features % _ALIGNMENT[scheme] or linear.out_features % _ALIGNMENT[scheme]:
            raise UsageError(
                f"{scheme} needs Linear sizes that are multiples of {_ALIGNMENT[scheme]}: "
                f"{name} is {linear.in_features} -> {linear.out_features}"
            )
        setattr(parent, child, quantised(linear))
    return names

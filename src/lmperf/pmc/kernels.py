"""What pmc reads from a kernel beyond lmperf.analysis.kernels' name rules: its category with the
counters' correction for generated kernels, and whether only a backward pass launches it.

torch.compile's kernels (`triton_poi_*`, `triton_red_*`, `triton_per_*`, `triton_tem_*`) are named
after the operators they fuse, so a name can mention attention or a matmul whose work another
kernel does (`triton_poi_fused__scaled_dot_product_cudnn_attention_...` only lays out Q, K and V
for cuDNN), while a max-autotune GEMM template is named after its epilogue. The counters decide
there: a generated kernel with tensor-pipe work is a GEMM (or flex attention), one without is
elementwise or a reduction whatever operators its name lists.
"""

from __future__ import annotations

import functools
import re

from lmperf.analysis.kernels import (
    ATTENTION,
    COPY,
    ELEMENTWISE,
    MATMUL,
    MATMUL_AUX,
    OPTIMIZER,
    REDUCTION,
    kernel_category,
)
from lmperf.pmc.parse import FADD, FFMA, TENSOR_PATHS, KernelRecord

_BACKWARD = re.compile(r"backward|bwd|_grad|grad_|dgrad|wgrad", re.IGNORECASE)
_GENERATED = re.compile(r"^triton_(poi|red|per|tem)_")


@functools.lru_cache(maxsize=8192)  # a capture repeats a few dozen long names hundreds of times
def is_backward(name: str) -> bool:
    """True for kernels only a backward pass launches (gradient kernels by name)."""
    return bool(_BACKWARD.search(name))


@functools.lru_cache(maxsize=8192)
def is_generated(name: str) -> bool:
    """A kernel torch.compile (inductor) generated: its name lists operators, not its work."""
    return bool(_GENERATED.match(name))


# A Triton kernel (Liger-Kernel's, lmperf's, inductor's) has a bare identifier for a name, where
# CUDA C++ kernels carry a signature and the libraries' own prefixes.
_BARE_NAME = re.compile(r"[A-Za-z_]\w*")
_LIBRARY = re.compile(r"^(nvjet|cudnn|cutlass|sm\d+_|ampere_|volta_|turing_|flash_|fmha|gemv|gemm)", re.IGNORECASE)


def is_template(name: str) -> bool:
    """A max-autotune GEMM template that inductor generated, named after its epilogue's operators."""
    return name.startswith("triton_tem_")


def is_triton(name: str) -> bool:
    """A Triton kernel, whose float counts cover its block's padded lanes (a 3072-wide row runs in
    a 4096-wide block) while its stores are the true elements."""
    return bool(_BARE_NAME.fullmatch(name)) and not _LIBRARY.match(name)


def tensor_work(kernel: KernelRecord) -> float:
    """Tensor-pipe ops of every source type (two per multiply-add)."""
    return kernel.derive("tensor_work", _tensor_work)


def _tensor_work(kernel: KernelRecord) -> float:
    return sum(kernel.metric(name) for name in TENSOR_PATHS.values())


def category(kernel: KernelRecord) -> str:
    """kernel_category of the name, corrected by the counters where the name misleads: a
    generated kernel is a GEMM when it did tensor work (flex attention when so named), a template
    with FFMA work is what its name says, and any other is never attention or a GEMM; a
    multi-tensor kernel without float work (CUDA graphs' input copies) is a copy, not an
    optimizer."""
    return kernel.derive("category", _category)


def _category(kernel: KernelRecord) -> str:
    named = kernel_category(kernel.name)
    if is_generated(kernel.name):
        if tensor_work(kernel) > 0:
            return ATTENTION if "flex_attention" in kernel.name else MATMUL
        if is_template(kernel.name) and kernel.metric(FFMA):
            return named  # an fp32 template without tensor cores: its FFMA are the products
        if named in (ATTENTION, MATMUL, MATMUL_AUX):
            return ELEMENTWISE if kernel.name.startswith("triton_poi_") else REDUCTION
        return named
    if named == OPTIMIZER and not (kernel.metric(FADD) or kernel.metric(FFMA)):
        return COPY
    return named


# A normalization's statistic by name: eager RMSNorm's rsqrt kernel, a fused norm, or an inductor
# reduction named after the mean of squares it computes.
_NORM_OP = re.compile(r"rsqrt|rms_?norm|layer_?norm|mean_pow|pow_mean", re.IGNORECASE)


def runs_norm(kernel: KernelRecord) -> bool:
    """A kernel that normalizes rows itself. Inductor names a GEMM template, and the kernel that
    adds a projection's bias (addmm), after the norm whose output they consume: those are no
    norm of their own."""
    return (
        bool(_NORM_OP.search(kernel.name))
        and category(kernel) not in (MATMUL, MATMUL_AUX)
        and "addmm" not in kernel.name
        and not is_template(kernel.name)
    )

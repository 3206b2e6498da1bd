"""Kernel names made readable, and each kernel put in a category.

CUDA kernel names from torch.profiler are full C++ signatures, often several hundred characters
of nested templates. `short_name` keeps what a reader needs: the kernel's own name, the functor
or op it runs (mul, mean, silu, FusedAdam) and the element type. On a CPU the profiled "kernels"
are ATen ops (aten::mm), shortened by dropping the namespace.

`category` classifies by name first (lmperf.analysis.kernels: matmul, attention, softmax, ...); a
generic elementwise or reduction kernel is then placed by where it ran: inside a norm region it is
norm, inside the softmax region softmax, inside the optimizer step optimizer.
"""

from __future__ import annotations

import re

from lmperf import regions
from lmperf.analysis.kernels import ELEMENTWISE, NORM, OPTIMIZER, OTHER, REDUCTION, SOFTMAX, kernel_category

NORM_REGIONS = (regions.ATTN_NORM, regions.FFN_NORM, regions.FINAL_NORM)


def _region_refinement(category: str, region: str, phase: str) -> str:
    if category not in (ELEMENTWISE, REDUCTION, OTHER):
        return category
    if phase == regions.OPTIMIZER:
        return OPTIMIZER
    if region in NORM_REGIONS:
        return NORM
    if region == regions.ATTN_SOFTMAX:
        return SOFTMAX
    return category


def category(name: str, region: str = "", phase: str = "") -> str:
    """One of CATEGORIES for a kernel (or ATen op) `name` that ran in `region` during `phase`."""
    return _region_refinement(kernel_category(name), region, phase)


_DTYPES = [("c10::BFloat16", "bf16"), ("bfloat16", "bf16"), ("c10::Half", "fp16"), ("half", "fp16"),
           ("double", "fp64"), ("float", "fp32"), ("long", "int64")]
# What a templated kernel runs, most telling first: a named *_kernel_cuda lambda (silu_kernel),
# a functor (MulFunctor, CUDAFunctor_add), a reduction (MeanOps, sum_functor).
_DETAIL_PATTERNS = [
    re.compile(r"(?:^|::)(\w+?)_kernel(?:_cuda|_impl)?(?:<[^<>]*>)?\(at::TensorIterator"),
    re.compile(r"(?:^|[:<\s])(?:CUDAFunctor(?:OnSelf|OnOther)?_(\w+))"),
    re.compile(r"(\w+?)(?:Math)?Functor\b"),
    re.compile(r"(\w+?)Ops<"),
    re.compile(r"(\w+?)_functor\b"),
    re.compile(r"(cutlass_\w+)"),
    re.compile(r"(LogSoftMax)ForwardEpilogue"),
    re.compile(r"std::(plus|minus|multiplies|divides)<"),
]
# Wrappers around the functor that says what is computed (AUnaryFunctor<..., MulFunctor>).
_GENERIC_DETAILS = {"Binary", "Unary", "AUnary", "BUnary", "BinaryOpScalar", "gpu_kernel_impl", "", None}
MAX_SHORT = 72


def _split_signature(name: str) -> tuple[str, str]:
    """('kernel base name', 'its template arguments') of a C++ kernel signature."""
    # torch.profiler writes anonymous namespaces as "(anonymous namespace)", ncu as "<unnamed>".
    name = name.removeprefix("void ").replace("(anonymous namespace)::", "").replace("<unnamed>::", "").strip()
    template, arguments = name.find("<"), name.find("(")
    if template >= 0 and (arguments < 0 or template < arguments):
        # Up to the '>' that closes the template: the argument list after it names only C types
        # (`float const*` would pass for the kernel's dtype).
        depth, end = 0, len(name)
        for i in range(template, len(name)):
            depth += {"<": 1, ">": -1}.get(name[i], 0)
            if depth == 0:
                end = i
                break
        return name[:template].split("::")[-1], name[template + 1:end]
    return (name[:arguments] if arguments >= 0 else name).split("::")[-1], ""


def _detail(template: str) -> str:
    for pattern in _DETAIL_PATTERNS:
        for match in pattern.finditer(template):
            found = next((group for group in match.groups() if group), None)
            if found not in _GENERIC_DETAILS:
                return found.removeprefix("_").lower() if not found.startswith("cutlass") else found
    return ""


def _dtype(template: str) -> str:
    positions = [(template.find(token), short) for token, short in _DTYPES if token in template]
    return min(positions)[1] if positions else ""


def short_name(name: str) -> str:
    """A readable name: `vectorized_elementwise_kernel[add, fp32]`, `mm`, `nvjet_tst_...`."""
    if name.startswith("aten::"):
        return name.removeprefix("aten::")
    if name.startswith(("Memcpy", "Memset")):
        return name
    base, template = _split_signature(name)
    tags = [tag for tag in (_detail(template), _dtype(template)) if tag]
    short = f"{base}[{', '.join(tags)}]" if tags else base
    return short if len(short) <= MAX_SHORT else short[: MAX_SHORT - 1] + "…"

"""The attention implementations' names, without torch: what `--attention` takes, and the forms
`lmperf attention --impls` times them in, for help texts and configuration checks that must not
pay torch's import (`lmperf --help`). `lmperf.attention` maps each implementation to its function
and lmperf.attention.flash_triton names its backwards; tests keep those lists the same as these."""

from __future__ import annotations

import importlib.util
import os

from lmperf.errors import UsageError

ATTENTION_IMPLEMENTATIONS = ("naive", "sdpa", "torch", "triton")
SDPA_BACKENDS = ("flash", "cudnn", "efficient")  # torch.nn.attention.SDPBackend's, pinned one at a time
TRITON_BACKWARDS = ("split", "atomic", "ordered")  # the Triton kernel's dQ strategies (flash_triton.BACKWARDS)

# How the attention benchmark runs each implementation: as the model does (""), compiled, SDPA
# pinned to each backend, the Triton kernel with each backward, and with Triton's own kernels where
# the Gluon forward and backward would run on an H100 ("-no-gluon", to see what they are worth).
# lmperf's PyTorch FlashAttention is timed compiled only (its Python tile loops are what compiling
# removes).
_BENCHMARK_FORMS = {
    "naive": ("", "-compiled"),
    "sdpa": tuple(f"-{backend}" for backend in SDPA_BACKENDS),
    "torch": ("-compiled",),
    "triton": ("", *(f"-{backward}" for backward in TRITON_BACKWARDS), "-no-gluon"),
}
# ... and PyTorch's FlexAttention, which the model does not offer.
BENCHMARK_IMPLEMENTATIONS = tuple(
    impl + form for impl in ATTENTION_IMPLEMENTATIONS for form in _BENCHMARK_FORMS.get(impl, ("",))
) + ("flex-compiled",)
# What `lmperf attention` times when not told: every form but the Triton kernel's named backwards
# and its forward without Gluon ("triton" is its default).
BENCHMARK_DEFAULT = tuple(name for name in BENCHMARK_IMPLEMENTATIONS if not name.startswith("triton-"))


def check_implementation(impl: str) -> str:
    """`impl` if it names an implementation; otherwise a UsageError listing them."""
    if impl not in ATTENTION_IMPLEMENTATIONS:
        raise UsageError(
            f"unknown attention implementation {impl!r}; choose from {', '.join(ATTENTION_IMPLEMENTATIONS)}"
        )
    return impl


def check_runs_here(impl: str, on_gpu: bool) -> str:
    """`impl` if this machine can run it, checked before anything runs: the Triton kernels need a
    CUDA GPU (or, on a CPU, Triton's interpreter, TRITON_INTERPRET=1 set before lmperf starts) and
    the triton package. A UsageError says what to use instead."""
    if check_implementation(impl) != "triton":
        return impl
    if not on_gpu and os.environ.get("TRITON_INTERPRET") != "1":
        others = ", ".join(name for name in ATTENTION_IMPLEMENTATIONS if name != impl)
        raise UsageError(
            f"attention triton needs a CUDA GPU; on a CPU use {others} "
            "(or TRITON_INTERPRET=1 for Triton's interpreter, far slower)"
        )
    if importlib.util.find_spec("triton") is None:
        raise UsageError("attention triton needs the triton package, which is not installed (pip install triton)")
    return impl


def check_benchmark_implementation(impl: str) -> str:
    """`impl` if `lmperf attention` can time it; otherwise a UsageError listing the forms."""
    if impl not in BENCHMARK_IMPLEMENTATIONS:
        raise UsageError(
            f"unknown attention benchmark implementation {impl!r}; choose from {', '.join(BENCHMARK_IMPLEMENTATIONS)}"
        )
    return impl

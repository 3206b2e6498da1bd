"""The attention implementations' names, without torch: what `--attention` takes, and the forms
`lmperf attention --impls` times them in, for help texts and configuration checks that must not
pay torch's import (`lmperf --help`). `lmperf.attention` maps each implementation to its function
and lmperf.attention.flash_triton names its backwards; tests keep those lists the same as these."""

from __future__ import annotations

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
        raise UsageError(f"unknown attention implementation {impl!r}; choose from {', '.join(ATTENTION_IMPLEMENTATIONS)}")
    return impl


def check_benchmark_implementation(impl: str) -> str:
    """`impl` if `lmperf attention` can time it; otherwise a UsageError listing the forms."""
    if impl not in BENCHMARK_IMPLEMENTATIONS:
        raise UsageError(f"unknown attention benchmark implementation {impl!r}; choose from {', '.join(BENCHMARK_IMPLEMENTATIONS)}")
    return impl

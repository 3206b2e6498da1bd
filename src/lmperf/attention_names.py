"""The attention implementations' names, without torch: what `--attention` takes, for help texts
and configuration checks that must not pay torch's import (`lmperf --help`). `lmperf.attention`
maps each name to its function; a test keeps the two lists the same."""

from __future__ import annotations

from lmperf.errors import UsageError

ATTENTION_IMPLEMENTATIONS = ("naive", "sdpa", "torch", "triton")


def check_implementation(impl: str) -> str:
    """`impl` if it names an implementation; otherwise a UsageError listing them."""
    if impl not in ATTENTION_IMPLEMENTATIONS:
        raise UsageError(f"unknown attention implementation {impl!r}; choose from {', '.join(ATTENTION_IMPLEMENTATIONS)}")
    return impl

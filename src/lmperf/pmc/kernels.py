"""What pmc reads from a kernel's name beyond lmperf.analysis.kernels (its category and short
name): whether only a backward pass launches it."""

from __future__ import annotations

import functools
import re

_BACKWARD = re.compile(r"backward|bwd|_grad|grad_|dgrad|wgrad", re.IGNORECASE)


@functools.lru_cache(maxsize=8192)  # a capture repeats a few dozen long names hundreds of times
def is_backward(name: str) -> bool:
    """True for kernels only a backward pass launches (gradient kernels by name)."""
    return bool(_BACKWARD.search(name))

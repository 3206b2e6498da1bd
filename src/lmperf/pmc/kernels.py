"""What pmc reads from a kernel's name beyond its category (lmperf.analysis.kernels): whether only
a backward pass launches it, and a short name for the kernel tables."""

from __future__ import annotations

import re

_BACKWARD = re.compile(r"backward|bwd|_grad|grad_|dgrad|wgrad", re.IGNORECASE)


def is_backward(name: str) -> bool:
    """True for kernels only a backward pass launches (gradient kernels by name)."""
    return bool(_BACKWARD.search(name))


def short_name(name: str, width: int = 60) -> str:
    """A kernel name cut to its identifier: no 'void ', no template or argument lists."""
    base = name.removeprefix("void ").split("(")[0]
    depth, out = 0, []
    for char in base:  # drop template arguments, which can be hundreds of characters
        depth += char == "<"
        if depth == 0:
            out.append(char)
        depth -= char == ">" and depth > 0
    text = "".join(out).strip() or base
    return text if len(text) <= width else text[: width - 1] + "…"

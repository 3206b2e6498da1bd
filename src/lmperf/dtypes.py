"""The one map from lmperf's dtype names (as commands take them and rows record them) to torch."""

from __future__ import annotations

import torch

from lmperf.errors import UsageError

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def torch_dtype(name: str, allowed: tuple[str, ...] = tuple(DTYPES), what: str = "dtype") -> torch.dtype:
    """The torch dtype called `name`; a name outside `allowed` is a UsageError listing them."""
    if name not in allowed:
        raise UsageError(f"unknown {what} {name!r}; choose from {', '.join(allowed)}")
    return DTYPES[name]

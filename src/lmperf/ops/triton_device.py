"""Whether a tensor can take one of lmperf's Triton kernels (the fused loss's rows, AdamW).

On CUDA, always; on a CPU, when TRITON_INTERPRET=1 was set before import (the CPU tests run the
kernels under Triton's interpreter). Either way only for the dtypes the kernels store.
"""

from __future__ import annotations

import os

import torch

# Read once: triton.jit decides at import time whether kernels are interpreted.
TRITON_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
TRITON_STORED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def takes_triton(tensor: torch.Tensor) -> bool:
    on_triton_device = tensor.is_cuda or (TRITON_INTERPRETED and tensor.device.type == "cpu")
    return on_triton_device and tensor.dtype in TRITON_STORED_DTYPES

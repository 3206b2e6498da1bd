"""lmperf's own fused kernels, one op per module."""

from lmperf.ops.adamw import AdamW
from lmperf.ops.fused_linear_cross_entropy import fused_linear_cross_entropy

__all__ = ["AdamW", "fused_linear_cross_entropy"]

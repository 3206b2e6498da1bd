"""lmperf's own fused kernels, one op per module."""

from lmperf.ops.fused_linear_cross_entropy import fused_linear_cross_entropy

__all__ = ["fused_linear_cross_entropy"]

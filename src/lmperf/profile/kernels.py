"""Each profiled kernel put in a category (its readable name: lmperf.analysis.kernels.short_name).

`category` classifies by name first (lmperf.analysis.kernels: matmul, attention, softmax, ...); a
generic elementwise or reduction kernel is then placed by where it ran: inside a norm region it is
norm, inside the softmax region softmax, inside the optimizer step optimizer.
"""

from __future__ import annotations

from lmperf import regions
from lmperf.analysis.kernels import ELEMENTWISE, NORM, OPTIMIZER, OTHER, REDUCTION, SOFTMAX, kernel_category

NORM_REGIONS = (regions.ATTN_NORM, regions.QK_NORM, regions.FFN_NORM, regions.FINAL_NORM)


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

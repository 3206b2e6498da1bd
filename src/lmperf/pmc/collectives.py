"""NCCL's collectives in a capture: what they say of how the run is parallel.

A collective does no model arithmetic, so the inference reads the model without them
(`without_collectives`) and reports them apart (`read_parallelism`). Where they run says which
parallelism launched them: all-reduces between the forward pass's layers sum partial outputs, as
Megatron-style tensor parallelism does after each attention and MLP block; collectives only
after the forward pass (the backward's gradient all-reduces, reduce-scatters) are data
parallelism's or FSDP's. A rank's GEMM widths are then its shard's, and one rank's counters do
not give the degree. `lmperf pmc collect` itself leaves NCCL's kernels unprofiled (lmperf.pmc.ncu
says why); a capture that holds them comes from a profiler that could replay every rank.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

from lmperf.pmc.parse import Capture, KernelRecord
from lmperf.pmc.result import Inference

_NCCL = re.compile(r"nccl", re.IGNORECASE)
# NCCL's device kernels name their collective: ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)
_KINDS = {
    "AllReduce": "all-reduce",
    "AllGather": "all-gather",
    "ReduceScatter": "reduce-scatter",
    "Broadcast": "broadcast",
    "SendRecv": "send/recv",
}
TENSOR, DATA = "tensor", "data"
CONFIDENCE = 0.8  # where the collectives run, not what they move, says which parallelism


def is_collective(kernel: KernelRecord) -> bool:
    return bool(_NCCL.search(kernel.name))


def collective_kind(name: str) -> str:
    return next((kind for key, kind in _KINDS.items() if key.lower() in name.lower()), "other NCCL")


def without_collectives(capture: Capture) -> Capture:
    """The capture with its NCCL kernels left out (indices kept, so positions still compare)."""
    kept = [k for k in capture.kernels if not is_collective(k)]
    return capture if len(kept) == len(capture.kernels) else dataclasses.replace(capture, kernels=kept)


def read_parallelism(result: Inference, capture: Capture, forward: list[KernelRecord]) -> None:
    """Set `parallelism` where the capture holds collectives: "tensor" for all-reduces inside the
    forward pass `forward` (read without them), "data" for collectives only after it."""
    collectives = [k for k in capture.kernels if is_collective(k)]
    if not collectives:
        return
    counts = Counter(collective_kind(k.name) for k in collectives)
    listed = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    first, last = (forward[0].index, forward[-1].index) if forward else (None, None)
    inside = [k for k in collectives if first is not None and first < k.index < last]
    if any(collective_kind(k.name) == "all-reduce" for k in inside):
        parallelism, why = TENSOR, f"{len(inside)} of them inside the forward pass, between its layers' GEMMs"
    elif first is not None and all(k.index > last for k in collectives):
        parallelism, why = DATA, "all after the forward pass (gradients)"
    else:
        parallelism, why = None, "none an all-reduce inside the forward pass, not all after it"
    evidence = f"NCCL kernels in the range: {listed}; {why}"
    if parallelism is None:
        result.extra("parallelism", None, 0.0, evidence)
        return
    result.extra("parallelism", parallelism, CONFIDENCE, evidence)
    result.assumptions.append(
        f"one rank of a {parallelism}-parallel run: the widths read are this rank's"
        + (" shard's; the degree is not read from one rank" if parallelism == TENSOR else "")
    )

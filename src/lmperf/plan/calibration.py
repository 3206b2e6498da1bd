"""What `lmperf plan` assumes when it is given no rows of its own: collective lines fitted to
`lmperf comm` on four H200s over NVLink, and overlaps fitted to that machine's one-, two- and
four-GPU steps by `lmperf plan-check` (docs/plan.md shows both fits; a test refits them from the
rows). The four-GPU fit is the measurement nearest the node sizes plan predicts."""

from __future__ import annotations

from lmperf.plan.collectives import Line, Links

H200_NVLINK = Links(
    lines={
        "all-reduce": Line(alpha_s=63.9e-6, busbw=385.0e9),
        "all-gather": Line(alpha_s=59.5e-6, busbw=353.6e9),
        "reduce-scatter": Line(alpha_s=65.1e-6, busbw=356.2e9),
    },
    device="NVIDIA H200",
    source="`lmperf comm` rows built into lmperf (NCCL, fp32, 1 MiB to 1 GiB)",
    nproc=(4,),
)

# Share of the modelled communication the measured steps did not pay, per strategy. FSDP2's steps
# of the 8B model paid all of it and more, so the fit over the strategy clips at 0.
OVERLAP = {"ddp": 0.40, "fsdp": 0.0}
OVERLAP_SOURCE = (
    "fitted by `lmperf plan-check` to one-, two- and four-GPU steps of 2.7B (context 1024) and "
    "cs336-8b (context 32768) on 4 x NVIDIA H200 (built into lmperf; --overlap sets another)"
)

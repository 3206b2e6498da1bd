"""What `lmperf plan` assumes when it is given no rows of its own: collective lines fitted to
`lmperf comm` on two H200s over NVLink, and overlaps fitted to that machine's one- and two-GPU
steps by `lmperf plan-check` (docs/plan.md shows both fits; a test refits them from the rows)."""

from __future__ import annotations

from lmperf.plan.collectives import Line, Links

H200_NVLINK = Links(
    lines={
        "all-reduce": Line(alpha_s=29.9e-6, busbw=315.5e9),
        "all-gather": Line(alpha_s=32.4e-6, busbw=261.3e9),
        "reduce-scatter": Line(alpha_s=35.2e-6, busbw=279.3e9),
    },
    device="NVIDIA H200",
    source="`lmperf comm` rows built into lmperf (NCCL, fp32, 1 MiB to 1 GiB)",
    nproc=(2,),
)

# Share of the modelled communication the measured steps did not pay, per strategy. FSDP2's steps
# paid all of it and more (the fit clips at 0).
OVERLAP = {"ddp": 0.19, "fsdp": 0.0}
OVERLAP_SOURCE = (
    "fitted by `lmperf plan-check` to one- and two-GPU steps of xl and 2.7B at contexts 512 and "
    "1024 on 2 x NVIDIA H200 (built into lmperf; --overlap sets another)"
)

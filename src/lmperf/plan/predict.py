"""Predicted train step on N GPUs: compute + exposed communication, and memory per rank.

Weak scaling: each GPU keeps its batch, so the compute per GPU is the one-GPU step's at every N
(FSDP2's AdamW step over 1/N of the parameters is not taken off it). Communication is the step's
collectives (schedule.py) timed by the network model (collectives.py). Of that time the step pays

    exposed = max(edge, comm - window, (1 - overlap) x comm)

`edge` being the collectives no compute runs beside, `window` the compute that can run beside the
rest, and `overlap` the share of the communication that compute hides in practice (fitted to
measured steps, check.py). Memory per rank is the analytic model (lmperf.analysis.sharding).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lmperf.analysis.flops import step_flops
from lmperf.analysis.sharding import DataParallel, state_memory, train_step_peak
from lmperf.errors import UsageError
from lmperf.model.step import StepConfig
from lmperf.plan.assumptions import assumptions
from lmperf.plan.collectives import Network
from lmperf.plan.schedule import Call, Parallelism, step_schedule
from lmperf.report.rows import ResultRow


@dataclass(frozen=True)
class Compute:
    """Seconds of one GPU's step, and where the figure comes from."""

    seconds: float
    source: str


@dataclass(frozen=True)
class Overlap:
    fraction: float
    source: str

    def validate(self) -> "Overlap":
        if not 0 <= self.fraction <= 1:
            raise UsageError(f"--overlap must be between 0 and 1, got {self.fraction}")
        return self


def compute_from_mfu(step: StepConfig, mfu: float, peak_tflops: float | None, device: str) -> Compute:
    """The step's matmul FLOPs (lmperf's FLOP model, as bench's MFU counts them) at `mfu`."""
    if not 0 < mfu <= 1:
        raise UsageError(f"--mfu must be in (0, 1], got {mfu}")
    if peak_tflops is None:
        raise UsageError(f"no dense peak is known for {device!r}; give --peak-tflops")
    flops = step_flops(step.model_config(), step.batch, step.seq_len, "train-step").matmul
    return Compute(
        flops / (mfu * peak_tflops * 1e12),
        f"lmperf's FLOP model ({flops / 1e12:,.1f} TFLOP of matmuls per GPU) at an assumed "
        f"MFU of {mfu * 100:g}% of {peak_tflops:,.1f} TFLOP/s ({device}, {step.precision})",
    )


@dataclass(frozen=True)
class PlanInputs:
    step: StepConfig
    parallelism: Parallelism
    network: Network
    overlap: Overlap
    compute: Compute
    peak_tflops: float | None  # the GPU's dense peak in the step's precision, for MFU


@dataclass
class PlanRow(ResultRow):
    """One GPU count's predicted step; the step's configuration fields come first."""

    config: dict
    strategy: str
    reshard: bool | None
    bucket_mb: float | None
    gpus: int
    nodes: int
    gpus_per_node: int
    inter_node_gbps: float
    overlap: float
    compute_ms: float
    comm_ms: float
    exposed_ms: float
    step_ms: float
    tokens_per_s: float
    tokens_per_s_total: float
    mfu: float | None
    peak_memory_gb: float
    persistent_memory_gb: float
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        values = super().to_dict()
        return {**values.pop("config"), **values}


def _seconds(calls: tuple[Call, ...], network: Network, n: int) -> float:
    return sum(call.count * network.seconds(call.op, call.size, n) for call in calls)


def communication(inputs: PlanInputs, n: int) -> tuple[float, float]:
    """(all of the step's communication, the part the step pays), in seconds."""
    schedule = step_schedule(inputs.step, inputs.parallelism)
    comm = _seconds(schedule.calls, inputs.network, n)
    window = schedule.window_share * inputs.compute.seconds
    exposed = max(_seconds(schedule.edge, inputs.network, n), comm - window, (1 - inputs.overlap.fraction) * comm)
    return comm, exposed


def memory_gb(inputs: PlanInputs, n: int) -> tuple[float, float]:
    """(peak of a train step, what stays between steps) per rank, in GB."""
    step, parallelism = inputs.step, inputs.parallelism
    layout = DataParallel(parallelism.strategy, n, reshard=parallelism.reshard)
    config = step.model_config()
    peak = train_step_peak(
        config, step.batch, step.seq_len, step.precision, layout, step.param_dtype, step.checkpoint, step.loss
    )
    return peak / 1e9, state_memory(config, layout, step.precision, step.param_dtype).persistent / 1e9


def predict(inputs: PlanInputs, n: int) -> PlanRow:
    step, parallelism, network = inputs.step, inputs.parallelism, inputs.network
    comm, exposed = communication(inputs, n)
    seconds = inputs.compute.seconds + exposed
    tokens = step.batch * step.seq_len
    matmul = step_flops(step.model_config(), step.batch, step.seq_len, "train-step").matmul
    peak_gb, kept_gb = memory_gb(inputs, n)
    return PlanRow(
        config=step.to_dict(),
        strategy=parallelism.strategy,
        reshard=parallelism.reshard if parallelism.strategy == "fsdp" else None,
        bucket_mb=parallelism.bucket_mb if parallelism.strategy == "ddp" else None,
        gpus=n,
        nodes=network.nodes(n),
        gpus_per_node=network.gpus_per_node,
        inter_node_gbps=network.inter_node_gbps,
        overlap=inputs.overlap.fraction,
        compute_ms=inputs.compute.seconds * 1e3,
        comm_ms=comm * 1e3,
        exposed_ms=exposed * 1e3,
        step_ms=seconds * 1e3,
        tokens_per_s=tokens / seconds,
        tokens_per_s_total=n * tokens / seconds,
        mfu=matmul / seconds / (inputs.peak_tflops * 1e12) if inputs.peak_tflops else None,
        peak_memory_gb=peak_gb,
        persistent_memory_gb=kept_gb,
        assumptions=assumptions(inputs, n),
    )

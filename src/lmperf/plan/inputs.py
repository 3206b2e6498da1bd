"""A plan's inputs from what the user gives: rows files or the built-in calibration, and the
compute of one GPU from a measured row or from an assumed MFU."""

from __future__ import annotations

from pathlib import Path

from lmperf.analysis.peaks import peak_tflops
from lmperf.errors import UsageError
from lmperf.model.step import StepConfig
from lmperf.plan.calibration import H200_NVLINK, OVERLAP, OVERLAP_SOURCE
from lmperf.plan.check import configuration
from lmperf.plan.collectives import Links, Network, fit_links
from lmperf.plan.predict import Compute, Overlap, PlanInputs, compute_from_mfu
from lmperf.plan.schedule import Parallelism
from lmperf.report.rundir import RESULTS, read_rows


def rows_at(path: Path) -> list[dict]:
    """The rows of a results file, of a run directory's, or `FILE:SET`: the rows of a published
    rows file (one JSONL per benchmark page) whose `set` is SET."""
    path = Path(path)
    if not path.exists() and ":" in path.name:
        file, _, name = str(path).rpartition(":")
        rows = [row for row in read_rows(Path(file)) if row.get("set") == name]
        if not rows:
            raise UsageError(f"{file} has no rows of the set {name!r}")
        return rows
    return read_rows(path / RESULTS if path.is_dir() else path)


def links_from(comm: Path | None) -> Links:
    return H200_NVLINK if comm is None else fit_links(rows_at(comm), str(comm))


def overlap_for(strategy: str, given: float | None) -> Overlap:
    if given is None:
        return Overlap(OVERLAP[strategy], OVERLAP_SOURCE)
    return Overlap(given, "given by --overlap").validate()


def compute_from_row(path: Path, step: StepConfig, device: str) -> Compute:
    """The one-GPU train step of `step`'s configuration in the rows at `path`."""
    found = [
        row
        for row in rows_at(path)
        if row.get("status") == "ok"
        and row.get("mode") == "train-step"
        and row.get("nproc", 1) == 1
        and configuration(row) == configuration(step.to_dict())
    ]
    if len(found) != 1:
        what = "no finished one-GPU train step" if not found else f"{len(found)} one-GPU train steps"
        raise UsageError(
            f"{path} has {what} of {step.preset} at context {step.seq_len}, batch {step.batch}, "
            f"{step.precision}, {step.attention} attention, {step.compile}, {step.param_dtype} parameters, "
            f"{step.loss} loss, {step.checkpoint} checkpointing; --from-row needs exactly one"
        )
    row = found[0]
    measured_on = row.get("env", {}).get("device", "unknown")
    if measured_on != device:
        raise UsageError(
            f"{path} was measured on {measured_on}, the comm rows on {device}; calibrate on one kind of GPU"
        )
    return Compute(
        row["mean_ms"] / 1e3,
        f"the measured one-GPU step in {path} (mean of {row.get('steps', '?')} "
        f"steps: {row['mean_ms']:,.1f} ms, {measured_on})",
    )


def plan_inputs(
    step: StepConfig,
    parallelism: Parallelism,
    comm: Path | None = None,
    from_row: Path | None = None,
    mfu: float = 0.5,
    overlap: float | None = None,
    gpus_per_node: int = 8,
    inter_node_gbps: float = 50.0,
    peak: float | None = None,
) -> PlanInputs:
    """Everything a prediction needs; `peak` overrides the dense peak of the comm rows' GPU."""
    step, parallelism = step.validate(), parallelism.validate()
    network = Network(links_from(comm), gpus_per_node, inter_node_gbps).validate()
    device = network.links.device
    dense_peak = peak_tflops(device, step.precision, peak)
    compute = (
        compute_from_mfu(step, mfu, dense_peak, device)
        if from_row is None
        else compute_from_row(from_row, step, device)
    )
    return PlanInputs(step, parallelism, network, overlap_for(parallelism.strategy, overlap), compute, dense_peak)

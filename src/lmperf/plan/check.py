"""The model against measured data-parallel steps: each N-GPU row of bench-dist beside the
one-GPU row of the same configuration.

A prediction takes the measured one-GPU step as its compute, the communication from the lines
fitted to the comm rows, and an overlap fitted to the other pairs of its strategy (leave one out),
so no row is checked against a figure fitted to itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Sequence

from lmperf.model.step import StepConfig
from lmperf.plan.collectives import Network
from lmperf.plan.predict import Compute, Overlap, PlanInputs, communication
from lmperf.plan.schedule import DEFAULT_BUCKET_MB, STRATEGIES, Parallelism
from lmperf.report.rows import ResultRow


@dataclass(frozen=True)
class Pair:
    multi: dict  # the N-GPU step
    single: dict  # the one-GPU step of the same configuration

    @property
    def extra_s(self) -> float:
        """What the N-GPU step costs beyond one GPU's, in seconds."""
        return (self.multi["mean_ms"] - self.single["mean_ms"]) / 1e3


def configuration(row: dict) -> str:
    """A step's configuration as canonical text (the full model shape included), to match rows by."""
    return json.dumps(StepConfig.from_dict(row).to_dict(), sort_keys=True)


def pair_rows(rows: Iterable[dict]) -> tuple[list[Pair], list[dict]]:
    """(pairs, the N-GPU rows with no one-GPU row of their configuration), finished train steps only."""
    steps = [r for r in rows if r.get("status") == "ok" and r.get("mode") == "train-step"]
    singles: dict[str, dict] = {}
    for row in steps:
        if row.get("nproc", 1) == 1:
            singles.setdefault(configuration(row), row)
    pairs, unpaired = [], []
    for row in steps:
        if row.get("nproc", 1) > 1 and row.get("strategy") in STRATEGIES:
            single = singles.get(configuration(row))
            if single is None:
                unpaired.append(row)
            else:
                pairs.append(Pair(row, single))
    return pairs, unpaired


def pair_inputs(pair: Pair, network: Network, overlap: float = 0.0) -> PlanInputs:
    multi = pair.multi
    parallelism = Parallelism(
        multi["strategy"], multi.get("reshard") is not False, multi.get("bucket_mb") or DEFAULT_BUCKET_MB
    )
    compute = Compute(pair.single["mean_ms"] / 1e3, "the measured one-GPU step")
    return PlanInputs(StepConfig.from_dict(multi), parallelism, network, Overlap(overlap, "fitted"), compute, None)


def modelled_comm_s(pair: Pair, network: Network) -> float:
    return communication(pair_inputs(pair, network), pair.multi["nproc"])[0]


def fit_overlap(pairs: Sequence[Pair], network: Network) -> float | None:
    """1 - k, where k x modelled communication fits the measured extra time of the pairs by least
    squares (clipped to [0, 1]: a step neither gains from its communication nor pays more than
    all of it); None without pairs."""
    points = [(pair.extra_s, modelled_comm_s(pair, network)) for pair in pairs]
    if not points:
        return None
    paid = sum(extra * comm for extra, comm in points) / sum(comm * comm for _, comm in points)
    return 1 - min(1.0, max(0.0, paid))


@dataclass
class CheckRow(ResultRow):
    preset: str
    seq_len: int
    batch: int
    precision: str
    attention: str
    strategy: str
    reshard: bool | None
    bucket_mb: float | None
    nproc: int
    profiled: bool
    one_gpu_ms: float
    measured_ms: float
    measured_std_ms: float | None
    extra_ms: float
    comm_ms: float
    overlap: float | None
    predicted_ms: float | None
    relative_error: float | None
    profiler_hidden_share: float | None


def _hidden_share(row: dict) -> float | None:
    return row["hidden_ms"] / row["comm_ms"] if row.get("comm_ms") else None


def check_pair(pair: Pair, others: Sequence[Pair], network: Network) -> CheckRow:
    multi, overlap = pair.multi, fit_overlap(others, network)
    comm_s = modelled_comm_s(pair, network)
    predicted = None
    if overlap is not None:
        inputs = pair_inputs(pair, network, overlap)
        predicted = (inputs.compute.seconds + communication(inputs, multi["nproc"])[1]) * 1e3
    return CheckRow(
        multi["preset"],
        multi["seq_len"],
        multi["batch"],
        multi["precision"],
        multi["attention"],
        multi["strategy"],
        multi.get("reshard"),
        multi.get("bucket_mb"),
        multi["nproc"],
        bool(multi.get("profiled_steps")),
        pair.single["mean_ms"],
        multi["mean_ms"],
        multi.get("std_ms"),
        pair.extra_s * 1e3,
        comm_s * 1e3,
        overlap,
        predicted,
        None if predicted is None else predicted / multi["mean_ms"] - 1,
        _hidden_share(multi),
        env=multi.get("env", {}),
    )


def check(pairs: Sequence[Pair], network: Network) -> list[CheckRow]:
    """Every pair predicted with the overlap fitted to the other pairs of its strategy."""
    return [
        check_pair(
            pair,
            [other for other in pairs if other is not pair and other.multi["strategy"] == pair.multi["strategy"]],
            network,
        )
        for pair in pairs
    ]


def fitted_overlaps(pairs: Sequence[Pair], network: Network) -> dict[str, float | None]:
    """The overlap of each strategy fitted to all of its pairs."""
    return {
        strategy: fit_overlap([p for p in pairs if p.multi["strategy"] == strategy], network) for strategy in STRATEGIES
    }

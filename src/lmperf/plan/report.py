"""The plan's and the check's tables, rendered from their rows."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lmperf.plan.collectives import Links
from lmperf.report import tables
from lmperf.report.environment import measured_on
from lmperf.report.rundir import RunDir

PLAN_COLUMNS: list[tables.Column] = [
    ("GPUs", "gpus", ",d"),
    ("nodes", "nodes", ",d"),
    ("step ms", "step_ms", ",.1f"),
    ("compute ms", "compute_ms", ",.1f"),
    ("comm ms", "comm_ms", ",.1f"),
    ("exposed ms", "exposed_ms", ",.1f"),
    ("tok/s per GPU", "tokens_per_s", ",.0f"),
    ("tok/s total", "tokens_per_s_total", ",.0f"),
    ("MFU", "mfu", ".1%"),
    ("peak GB per rank", "peak_memory_gb", ",.1f"),
    ("between steps GB", "persistent_memory_gb", ",.1f"),
]
CHECK_COLUMNS: list[tables.Column] = [
    ("preset", "preset", ""),
    ("ctx", "seq_len", "d"),
    ("strategy", "strategy", ""),
    ("bucket MB", "bucket_mb", "g"),
    ("reshard", "reshard", ""),
    ("GPUs", "nproc", "d"),
    ("profiled run", "profiled", ""),
    ("one GPU ms", "one_gpu_ms", ".1f"),
    ("measured ms", "measured_ms", ".1f"),
    ("std ms", "measured_std_ms", ".1f"),
    ("extra ms", "extra_ms", ".1f"),
    ("model comm ms", "comm_ms", ".1f"),
    ("overlap (others)", "overlap", ".0%"),
    ("predicted ms", "predicted_ms", ".1f"),
    ("error", "relative_error", "+.1%"),
    ("profiler hidden share", "profiler_hidden_share", ".0%"),
]


def _title(row: dict) -> str:
    option = f", reshard {row['reshard']}" if row["strategy"] == "fsdp" else f", {row['bucket_mb']:g} MB buckets"
    return (
        f"{row['preset']}, {row['batch']} x {row['seq_len']} tokens per GPU, {row['precision']} "
        f"({row['param_dtype']} parameters), {row['attention']} attention, {row['checkpoint']} checkpointing, "
        f"{row['loss']} loss; {row['strategy']}{option}"
    )


def plan_markdown(rows: Sequence[dict]) -> str:
    """The table of predictions, then every assumption they rest on, each once."""
    text = f"Predicted train step: {_title(rows[0])}. Weak scaling (batch per GPU fixed).\n\n"
    text += tables.markdown(rows, PLAN_COLUMNS) + "\nAssumptions:\n\n"
    # The rows that span the most nodes name every assumption, in order.
    widest_first = sorted(rows, key=lambda row: -row["nodes"])
    said = dict.fromkeys(line for row in widest_first for line in row["assumptions"])
    return text + "".join(f"- {line}\n" for line in said)


def write_plan_report(run_path: Path) -> Path:
    md = Path(run_path) / "results.md"
    md.write_text(plan_markdown(RunDir(run_path).rows()), encoding="utf-8")
    return md


def fit_markdown(links: Links, comm_rows: Sequence[dict]) -> str:
    """Each collective's fitted line and its largest misfit over the rows it was fitted to."""
    lines = ["| collective | alpha us | bus bandwidth GB/s | rows | largest misfit |", "|---|---|---|---|---|"]
    for op, line in links.lines.items():
        rows = [r for r in comm_rows if r.get("op") == op and r.get("status") == "ok"]
        worst = max(abs(line.seconds(op, r["size_bytes"], r["nproc"]) / (r["mean_us"] / 1e6) - 1) for r in rows)
        lines.append(f"| {op} | {line.alpha_s * 1e6:.1f} | {line.busbw / 1e9:.1f} | {len(rows)} | {worst:.0%} |")
    return "\n".join(lines) + "\n"


def check_markdown(
    rows: Sequence[dict], links: Links, comm_rows: Sequence[dict], fitted: dict, unpaired: Sequence[dict]
) -> str:
    text = measured_on(rows) + f"Collectives fitted to {links.source} ({links.device}):\n\n"
    text += fit_markdown(links, comm_rows) + "\nEach N-GPU step beside its one-GPU step:\n\n"
    text += tables.markdown(rows, CHECK_COLUMNS)
    text += (
        "\nOverlap fitted to every pair of a strategy: "
        + ", ".join(
            f"{strategy} {'-' if value is None else format(value, '.0%')}" for strategy, value in fitted.items()
        )
        + "\n"
    )
    if unpaired:
        text += (
            "\nNo one-GPU row of the same configuration, not checked: "
            + ", ".join(f"{r['preset']} ctx {r['seq_len']} {r['strategy']} on {r['nproc']} GPUs" for r in unpaired)
            + "\n"
        )
    return text

"""profile.md and region_time.png of a profile run, rendered from its results.jsonl alone."""

from __future__ import annotations

from pathlib import Path

from lmperf.profile import tables as profile_tables
from lmperf.profile.plots import plot_region_time
from lmperf.report import tables
from lmperf.report.environment import measured_on
from lmperf.report.rundir import RunDir

TOP_KERNELS = 15
MATMUL_COLUMNS: list[tables.Column] = [
    ("preset", "preset", ""),
    ("ctx", "seq_len", "d"),
    ("prec", "precision", ""),
    ("attn", "attention", ""),
    ("compile", "compile", ""),
    ("mode", "mode", ""),
    ("status", "status", ""),
    ("ms/step", "step_ms", ".2f"),
    ("matmul share", "matmul_share", ".1%"),
]


def _attribution_check(row: dict) -> str:
    if row.get("device_activities") is None:
        return ""
    return f" Attributed {row['attributed']} of the {row['device_activities']} GPU activities in the trace."


def render_row(row: dict, top: int = TOP_KERNELS) -> str:
    """The Markdown section of one profiled mode."""
    title = f"### {row['preset']} · ctx {row['seq_len']} · batch {row['batch']} · {row['precision']} · {row['attention']} · {row['compile']} · {row['mode']}\n\n"
    if row["status"] != "ok":
        return title + f"status **{row['status']}**: {row.get('error', '')}\n"
    return (
        title
        + f"{row['time_unit']}: {row['step_ms']:.2f} ms per step over {row['steps']} profiled steps "
        + f"(after {row['warmup']} warm-up); matmul share {row['matmul_share']:.1%}; trace `{row['trace']}`."
        + _attribution_check(row)
        + "\n\n"
        + "By category:\n\n"
        + tables.markdown(row["categories"], profile_tables.CATEGORY_COLUMNS)
        + f"\nTop {top} kernels:\n\n"
        + tables.markdown(row["kernels"][:top], profile_tables.KERNEL_COLUMNS)
        + "\nBy region:\n\n"
        + tables.markdown(row["regions"], profile_tables.REGION_COLUMNS)
    )


def write_reports(run_path: Path) -> list[Path]:
    """profile.md (matmul shares, then each mode's tables) and region_time.png."""
    rows = RunDir(run_path).rows()
    md, png = run_path / "profile.md", run_path / "region_time.png"
    body = "\n".join(render_row(row) for row in rows)
    md.write_text(
        measured_on(rows) + "Matmul share of the step:\n\n" + tables.markdown(rows, MATMUL_COLUMNS) + "\n" + body,
        encoding="utf-8",
    )
    plot_region_time(rows, png)
    return [md, png]

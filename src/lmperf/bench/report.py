"""Bench tables (Markdown, CSV, rich) and the time-per-step plot, rendered from results.jsonl."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lmperf.report import tables
from lmperf.report.environment import measured_on
from lmperf.report.files import write_text_whole
from lmperf.report.plots import pyplot, save_figure
from lmperf.report.rundir import RunDir
from lmperf.run.columns import CONFIG_COLUMNS, IDENTIFYING

COLUMNS: list[tables.Column] = CONFIG_COLUMNS + [
    ("status", "status", ""),
    ("flag", "flag", ""),
    ("cold ms", "cold_ms", ".1f"),
    ("mean ms", "mean_ms", ".2f"),
    ("std ms", "std_ms", ".2f"),
    ("spread", "spread", ".0%"),
    ("median ms", "median_ms", ".2f"),
    ("min ms", "min_ms", ".2f"),
    ("max ms", "max_ms", ".2f"),
    ("tok/s", "tokens_per_s", ",.0f"),
    ("TFLOP/s", "tflops", ".1f"),
    ("MFU", "mfu", ".1%"),
    ("peak GB", "peak_memory_gb", ".2f"),
]
# What a narrow terminal shows first; the files always hold every column.
TERMINAL_PRIORITY = (
    *IDENTIFYING,
    "status",
    "flag",
    "mean_ms",
    "spread",
    "mfu",
    "peak_memory_gb",
    "std_ms",
    "tokens_per_s",
    "tflops",
    "cold_ms",
    "median_ms",
    "min_ms",
    "max_ms",
)
NOISY_NOTE = (
    "flag noisy: the measured steps' std is above half their mean; each row also holds the load "
    "average at the start and the end of its measurement (load_start, load_end).\n"
)


def flagged(rows: Sequence[dict]) -> list[dict]:
    """Rows with `flag` "noisy" where the row says its measurement was noisy."""
    return [{**row, "flag": "noisy" if row.get("noisy") else ""} for row in rows]


def plot_time_per_step(rows: Sequence[dict], path: Path) -> None:
    """Mean time per step against parameters, one line per (mode, precision, compile)."""
    plt = pyplot()
    ok = [r for r in rows if r["status"] == "ok"]
    contexts = sorted({r["seq_len"] for r in ok})
    fig, axes = plt.subplots(1, max(len(contexts), 1), figsize=(5 * max(len(contexts), 1), 4), squeeze=False)
    for ax, ctx in zip(axes[0], contexts):
        lines: dict[tuple, list[tuple[int, float]]] = {}
        for r in ok:
            if r["seq_len"] == ctx:
                key = (r["mode"], r["precision"], r["compile"], r["attention"])
                lines.setdefault(key, []).append((r["params"], r["mean_ms"]))
        for key, points in sorted(lines.items()):
            points.sort()
            ax.plot([p / 1e6 for p, _ in points], [t for _, t in points], marker="o", label=" ".join(key))
        ax.set(xscale="log", yscale="log", xlabel="parameters (M)", ylabel="ms per step", title=f"context {ctx}")
        ax.grid(True, which="both", alpha=0.3)
    if ok:  # no finished row, no line to name
        axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)


def write_reports(run_path: Path) -> list[Path]:
    """results.md, results.csv and time_per_step.png beside results.jsonl, each replaced whole;
    returns their paths. The CSV holds every column, the Markdown those that tell rows apart."""
    rows = flagged(RunDir(run_path).rows())
    md, csv_file, png = run_path / "results.md", run_path / "results.csv", run_path / "time_per_step.png"
    note = NOISY_NOTE if any(row["flag"] for row in rows) else ""
    write_text_whole(md, measured_on(rows) + tables.markdown_laid_out(rows, COLUMNS, IDENTIFYING) + note)
    write_text_whole(csv_file, tables.csv_text(rows, COLUMNS))
    plot_time_per_step(rows, png)
    return [md, csv_file, png]

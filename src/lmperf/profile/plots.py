"""The profile's and memory command's pictures: GPU time by region and phase, memory over time."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lmperf.profile.trace import PHASES
from lmperf.report.plots import pyplot


def plot_region_time(rows: Sequence[dict], path: Path) -> None:
    """One panel per profiled mode: a bar per region, stacked by phase (ms per step)."""
    plt = pyplot()
    ok = [row for row in rows if row["status"] == "ok"]
    fig, axes = plt.subplots(1, max(len(ok), 1), figsize=(6 * max(len(ok), 1), 4.5), squeeze=False)
    for ax, row in zip(axes[0], ok):
        names = [r["region"] for r in row["regions"] if r["total_ms"] > 0]
        bottom = [0.0] * len(names)
        by_name = {r["region"]: r for r in row["regions"]}
        for phase in PHASES:
            heights = [by_name[name].get(f"{phase}_ms", 0.0) for name in names]
            ax.bar(names, heights, bottom=bottom, label=phase)
            bottom = [b + h for b, h in zip(bottom, heights)]
        ax.set_ylim(0, max(bottom, default=1.0) * 1.08)  # stacked zero-height bars pin autoscale
        ax.set_title(f"{row['preset']} ctx {row['seq_len']} {row['precision']} {row['mode']}", fontsize=9)
        ax.set_ylabel(f"ms per step ({row['time_unit']})")
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_memory_timeline(allocated_gb: Sequence[float], phase_starts: dict[str, int], title: str, path: Path) -> None:
    """Allocated memory after each allocator event, with a line where each phase begins."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot(range(len(allocated_gb)), allocated_gb, linewidth=1)
    for phase, index in phase_starts.items():
        ax.axvline(index, color="gray", linestyle="--", linewidth=0.8)
        ax.text(index, max(allocated_gb, default=0) * 0.98, f" {phase}", fontsize=8, va="top")
    ax.set(xlabel="allocator event", ylabel="allocated (GB)", title=title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

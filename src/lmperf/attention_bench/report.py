"""Attention benchmark tables (Markdown, CSV) and the TFLOP/s-against-length plot, from results.jsonl."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from lmperf.analysis.tiles import ceil_div
from lmperf.report import tables
from lmperf.report.environment import measured_on
from lmperf.report.plots import pyplot
from lmperf.report.rundir import RunDir

COLUMNS: list[tables.Column] = [
    ("impl", "impl", ""),
    ("dtype", "dtype", ""),
    ("d", "head_dim", "d"),
    ("causal", "causal", ""),
    ("seq", "seq", "d"),
    ("batch", "batch", "d"),
    ("heads", "heads", "d"),
    ("status", "status", ""),
    ("round", "round", "d"),
    ("fwd ms", "fwd_ms", ".3f"),
    ("bwd ms", "bwd_ms", ".3f"),
    ("fwd+bwd ms", "fwd_bwd_ms", ".3f"),
    ("fwd TFLOP/s", "fwd_tflops", ".0f"),
    ("bwd TFLOP/s", "bwd_tflops", ".0f"),
    ("fwd+bwd TFLOP/s", "fwd_bwd_tflops", ".0f"),
    ("peak GB", "peak_memory_gb", ".2f"),
]


def plot_tflops(rows: Sequence[dict], path: Path) -> None:
    """Forward+backward TFLOP/s against sequence length, one panel per (dtype, head_dim, causal)."""
    plt = pyplot()
    ok = [r for r in rows if r["status"] == "ok"]
    panels = sorted({(r["dtype"], r["head_dim"], r["causal"]) for r in ok})
    columns = min(4, max(len(panels), 1))
    lines = ceil_div(max(len(panels), 1), columns)
    fig, axes = plt.subplots(lines, columns, figsize=(4.5 * columns, 3.5 * lines), squeeze=False)
    for ax, (dtype, head_dim, causal) in zip(axes.flat, panels):
        for impl in sorted({r["impl"] for r in ok}):
            by_seq = defaultdict(list)  # the median over rounds (--rounds)
            for r in ok:
                if (r["dtype"], r["head_dim"], r["causal"], r["impl"]) == (dtype, head_dim, causal, impl):
                    by_seq[r["seq"]].append(r["fwd_bwd_tflops"])
            points = sorted((seq, statistics.median(values)) for seq, values in by_seq.items())
            if points:
                ax.plot(*zip(*points), marker="o", label=impl)
        title = f"{dtype} d={head_dim} {'causal' if causal else 'non-causal'}"
        ax.set(xscale="log", xlabel="sequence length", ylabel="fwd+bwd TFLOP/s", title=title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_reports(run_path: Path) -> list[Path]:
    """results.md, results.csv and tflops.png beside results.jsonl; returns their paths."""
    rows = RunDir(run_path).rows()
    md, csv_file, png = run_path / "results.md", run_path / "results.csv", run_path / "tflops.png"
    text = measured_on(rows) + tables.markdown(rows, COLUMNS)
    if any(r["impl"] == "triton" and r["status"] == "ok" for r in rows):
        text += "\n## FlashAttention2Triton beside SDPA (TFLOP/s)\n\n"
        rounds = 1 + max(r.get("round", 0) for r in rows)
        if rounds > 1:
            text += (
                f"{rounds} interleaved rounds per point: TFLOP/s are medians over them, and each ratio is "
                "the median (lowest-highest) of the rounds' own ratios.\n\n"
            )
        text += comparison(rows)
    md.write_text(text, encoding="utf-8")
    csv_file.write_text(tables.csv_text(rows, COLUMNS), encoding="utf-8")
    plot_tflops(rows, png)
    return [md, csv_file, png]


def _ratio_cell(ratios: list[float]) -> str:
    """A ratio, or over several rounds its median and range."""
    if not ratios:
        return "-"
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}"
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def comparison(
    rows: Sequence[dict], ours: str = "triton", against: Sequence[str] = ("sdpa-flash", "sdpa-cudnn")
) -> str:
    """Markdown: `ours` beside each of `against` per shape, forward+backward TFLOP/s and ratios.
    With several rounds (--rounds): each TFLOP/s is the median over the rounds, and each ratio the
    median of the per-round ratios (ours against the other in the same round), with their range."""
    ok: dict[tuple, dict[int, dict]] = defaultdict(dict)  # (impl, dtype, d, causal, seq) -> {round: row}
    for r in rows:
        if r["status"] == "ok":
            ok[(r["impl"], r["dtype"], r["head_dim"], r["causal"], r["seq"])][r.get("round", 0)] = r
    header = ["dtype", "d", "causal", "seq", f"{ours} fwd", f"{ours} bwd", f"{ours} fwd+bwd"]
    header += [f"{other} fwd+bwd" for other in against] + [f"x {other}" for other in against]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    median = lambda rounds, field: statistics.median(r[field] for r in rounds.values())  # noqa: E731
    for key in sorted({k[1:] for k in ok if k[0] == ours}):
        mine = ok[(ours, *key)]
        others = [ok.get((other, *key), {}) for other in against]
        cells = [str(v) for v in key] + [
            f"{median(mine, f):.0f}" for f in ("fwd_tflops", "bwd_tflops", "fwd_bwd_tflops")
        ]
        cells += [f"{median(o, 'fwd_bwd_tflops'):.0f}" if o else "-" for o in others]
        cells += [
            _ratio_cell([mine[r]["fwd_bwd_tflops"] / o[r]["fwd_bwd_tflops"] for r in sorted(mine) if r in o])
            for o in others
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

"""How counted FLOPs grow with sequence length, layers and width (`lmperf pmc explain --sweep`).

Three views of one model's forward matmul FLOPs from the one FLOP model: the full T×T square
(what naive attention computes), the causal half (what a textbook counts), and what a fused
kernel's tensor counter reports (whole 128×128 causal tiles, `causal_tile_fraction`). Captures
with a true configuration can be laid over them as measured points.
"""

from __future__ import annotations

import math
from pathlib import Path

from lmperf.analysis.flops import forward_ops
from lmperf.analysis.tiles import causal_tile_fraction
from lmperf.model import ModelConfig
from lmperf.report import tables
from lmperf.report.plots import pyplot
from lmperf.report.rundir import RunDir

COLUMNS = [
    ("axis", "axis", ""),
    ("value", "value", "d"),
    ("full square", "full", ".4g"),
    ("causal half", "half", ".4g"),
    ("counted (128 tiles)", "counted", ".4g"),
    ("counted / half", "ratio", ".3f"),
]


def _matmul_flops(model: ModelConfig, batch: int, seq_len: int, fraction: float) -> float:
    ops = forward_ops(model, batch, seq_len, fraction)
    return sum(op.total_forward for op in ops if op.is_matmul)


def _row(axis: str, value: int, model: ModelConfig, batch: int, seq_len: int) -> dict:
    counted = _matmul_flops(model, batch, seq_len, causal_tile_fraction(seq_len))
    half = _matmul_flops(model, batch, seq_len, 0.5)
    return dict(
        axis=axis,
        value=value,
        full=_matmul_flops(model, batch, seq_len, 1.0),
        half=half,
        counted=counted,
        ratio=counted / half,
    )


def sweep_rows(
    model: ModelConfig, batch: int, seq_lens: list[int], layers: list[int], widths: list[int], seq_len: int
) -> list[dict]:
    """Rows over T (model fixed), n_layers and d_model (T = seq_len, head_dim kept)."""
    rows = [_row("seq_len", t, model, batch, t) for t in seq_lens]
    for n in layers:
        rows.append(_row("n_layers", n, model.with_(n_layers=n), batch, seq_len))
    for d in widths:  # head_dim and the query heads per K/V head kept
        heads = max(1, d // model.head_dim)
        group = model.n_heads // model.n_kv_heads
        kv_heads = math.gcd(heads, max(1, heads // group))  # must divide the query heads
        config = model.with_(d_model=d, n_heads=heads, n_kv_heads=kv_heads, d_ff=4 * d)
        rows.append(_row("d_model", d, config, batch, seq_len))
    return rows


def plot(rows: list[dict], path: Path) -> Path:
    plt = pyplot()

    axes_names = ("seq_len", "n_layers", "d_model")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, axis in zip(axes, axes_names):
        points = [r for r in rows if r["axis"] == axis]
        xs = [r["value"] for r in points]
        for key, label in (("full", "full square"), ("counted", "counted (128 tiles)"), ("half", "causal half")):
            ax.plot(xs, [r[key] for r in points], marker="o", label=label)
        ax.set_xlabel(axis)
        ax.set_ylabel("forward matmul FLOPs")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_sweep(rows: list[dict], run_dir: RunDir) -> list[Path]:
    """The rows appended to the run's results.jsonl, then sweep.md and sweep.png rendered from them."""
    for row in rows:
        run_dir.append(row)
    md = run_dir.path / "sweep.md"
    md.write_text(tables.markdown(rows, COLUMNS), encoding="utf-8")
    return [run_dir.results, md, plot(rows, run_dir.path / "sweep.png")]

"""Tables and plots of distributed runs, rendered from results.jsonl (and the kernel tables its
profiled rows name), and a benchmark page (`distributed-<machine>.md`) rendered from a comm run
and bench runs."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lmperf.analysis.sharding import DataParallel, state_memory, train_step_peak
from lmperf.distributed.kernel_table import attention_summary, gemm_summary
from lmperf.run.columns import CONFIG_COLUMNS
from lmperf.run.columns import IDENTIFYING as BENCH_IDENTIFYING
from lmperf.run.sweep import row_key
from lmperf.errors import UsageError
from lmperf.model.step import StepConfig
from lmperf.report import tables
from lmperf.report.environment import measured_on
from lmperf.report.files import write_text_whole
from lmperf.report.plots import pyplot, save_figure
from lmperf.report.rundir import RESULTS, RunDir, command_of, read_rows

COMM_COLUMNS: list[tables.Column] = [
    ("collective", "op", ""),
    ("size MiB", "size_mib", ",.0f"),
    ("dtype", "dtype", ""),
    ("procs", "nproc", "d"),
    ("backend", "backend", ""),
    ("status", "status", ""),
    ("time us", "mean_us", ",.1f"),
    ("algbw GB/s", "algbw_gbps", ".1f"),
    ("busbw GB/s", "busbw_gbps", ".1f"),
]
COMM_IDENTIFYING = ("op", "size_mib", "dtype", "nproc", "backend")
_CONFIG: list[tables.Column] = CONFIG_COLUMNS + [
    ("strategy", "strategy", ""),
    ("GPUs", "nproc", "d"),
    ("bucket MB", "bucket_mb", "g"),
    ("reshard", "reshard", ""),
]
# A run's tables show those of these that vary and say the others once; the strategy and process
# count, what every data-parallel table compares, always stay.
IDENTIFYING = BENCH_IDENTIFYING + ("bucket_mb", "reshard")
BENCH_COLUMNS: list[tables.Column] = _CONFIG + [
    ("status", "status", ""),
    ("mean ms", "mean_ms", ".1f"),
    ("std ms", "std_ms", ".1f"),
    ("tok/s per GPU", "tokens_per_s", ",.0f"),
    ("tok/s total", "tokens_per_s_total", ",.0f"),
    ("MFU", "mfu", ".1%"),
    ("scaling eff.", "scaling_efficiency", ".1%"),
    ("peak GB (max rank)", "peak_memory_gb", ".1f"),
    ("error", "error", ""),
]
OVERLAP_COLUMNS: list[tables.Column] = _CONFIG + [
    ("step ms", "mean_ms", ".1f"),
    ("NCCL ms", "comm_ms", ".1f"),
    ("NCCL share", "comm_share", ".1%"),
    ("hidden ms", "hidden_ms", ".1f"),
    ("exposed ms", "exposed_ms", ".1f"),
    ("exposed share", "exposed_share", ".1%"),
]
GEMM_COLUMNS: list[tables.Column] = [
    ("op", "op", ""),
    ("batch", "batch", "d"),
    ("M", "m", "d"),
    ("N", "n", "d"),
    ("K", "k", "d"),
    ("layout", "layout", ""),
    ("dtype", "dtype", ""),
    ("per step", "count", "d"),
    ("ms in step", "total_ms", ",.2f"),
    ("TFLOP/s in step", "step_tflops", ",.0f"),
    ("TFLOP/s alone", "alone_tflops", ",.0f"),
    ("alone / in step", "alone_over_step", ".2f"),
    ("beside NCCL", "nccl_share", ".0%"),
]
ATTENTION_KERNEL_COLUMNS: list[tables.Column] = [
    ("kernel", "name", ""),
    ("per step", "count", "d"),
    ("ms in step", "total_ms", ",.2f"),
    ("mean ms", "mean_ms", ",.3f"),
    ("beside NCCL", "nccl_share", ".0%"),
]
MEMORY_COLUMNS: list[tables.Column] = _CONFIG + [
    ("between steps GB", "persistent_memory_gb", ".1f"),
    ("model between steps GB", "model_persistent_gb", ".1f"),
    ("peak GB", "peak_memory_gb", ".1f"),
    ("model: peak GB", "model_peak_gb", ".1f"),
]


def with_scaling(rows: Sequence[dict]) -> list[dict]:
    """Rows with `scaling_efficiency`: total tokens/s over N x one GPU's, same per-GPU batch."""
    baselines: dict[tuple, dict] = {}
    for row in rows:  # one-GPU rows; a plain one ('none') wins over a one-process DDP or FSDP
        key = row_key(row)
        if row["status"] == "ok" and row.get("nproc") == 1 and (key not in baselines or row["strategy"] == "none"):
            baselines[key] = row
    out = []
    for row in rows:
        base = baselines.get(row_key(row))
        efficiency = None
        if row["status"] == "ok" and base and row.get("nproc", 1) > 1:
            efficiency = row["tokens_per_s_total"] / (row["nproc"] * base["tokens_per_s"])
        out.append({**row, "scaling_efficiency": efficiency})
    return out


def with_memory_model(rows: Sequence[dict]) -> list[dict]:
    """Rows with the analytic per-rank memory (lmperf.analysis.sharding) beside the measured, in GB."""
    out = []
    for row in rows:
        if row.get("module"):  # a user's module has no analytic memory model
            out.append({**row, "model_persistent_gb": None, "model_peak_gb": None})
            continue
        layout = DataParallel(row["strategy"], row.get("nproc", 1), reshard=row.get("reshard") is not False)
        config, param_dtype = StepConfig.from_dict(row).model_config(), row.get("param_dtype", "fp32")
        peak = None
        if row["mode"] == "train-step":
            peak = (
                train_step_peak(
                    config,
                    row["batch"],
                    row["seq_len"],
                    row["precision"],
                    layout,
                    param_dtype,
                    row.get("checkpoint", "none"),
                    row.get("loss", "eager"),
                )
                / 1e9
            )
        kept = state_memory(config, layout, row["precision"], param_dtype).persistent / 1e9
        out.append({**row, "model_persistent_gb": kept, "model_peak_gb": peak})
    return out


def comm_rows(rows: Sequence[dict]) -> list[dict]:
    return [{**r, "size_mib": r["size_bytes"] / 2**20} for r in rows]


def plot_busbw(rows: Sequence[dict], path: Path) -> None:
    """Bus bandwidth against message size, one line per collective."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for op in dict.fromkeys(r["op"] for r in rows):
        points = sorted((r["size_bytes"], r["busbw_gbps"]) for r in rows if r["op"] == op and r["status"] == "ok")
        ax.plot([s / 2**20 for s, _ in points], [b for _, b in points], marker="o", label=op)
    nproc = rows[0]["nproc"] if rows else 0
    ax.set(xscale="log", xlabel="message size (MiB)", ylabel="bus bandwidth (GB/s)", title=f"{nproc} processes")
    ax.grid(True, which="both", alpha=0.3)
    if rows:  # no row, no line to name
        ax.legend()
    fig.tight_layout()
    save_figure(fig, path)


def write_comm_reports(run_path: Path) -> list[Path]:
    rows = comm_rows(RunDir(run_path).rows())
    md, csv_file, png = run_path / "results.md", run_path / "results.csv", run_path / "busbw.png"
    write_text_whole(md, measured_on(rows) + tables.markdown_laid_out(rows, COMM_COLUMNS, COMM_IDENTIFYING))
    write_text_whole(csv_file, tables.csv_text(rows, COMM_COLUMNS))
    plot_busbw(rows, png)
    return [md, csv_file, png]


def _in_order(rows: Sequence[dict]) -> list[dict]:
    return sorted(
        rows,
        key=lambda r: (
            r.get("params", 0),
            r["seq_len"],
            r.get("nproc", 1),
            r["strategy"],
            r.get("bucket_mb") or 0,
            bool(r.get("reshard")),
        ),
    )


def bench_markdown(rows: Sequence[dict]) -> str:
    """Steps and memory from the unprofiled rows (all rows if every one was profiled), overlap
    from the profiled ones: a profiled sweep repeats configurations only to read communication."""
    rows = _in_order(with_memory_model(with_scaling(rows)))
    profiled = [r for r in rows if r.get("profiled_steps")]
    steps = [r for r in rows if not r.get("profiled_steps")] or rows
    constant = tables.layout(rows, _CONFIG, IDENTIFYING)

    def table(some: list[dict], columns: list[tables.Column]) -> str:
        shown = tables.layout(some, columns, ()).columns  # columns empty in every row left out
        return tables.markdown(some, [c for c in shown if c[1] not in constant.constant_keys()])

    text = (constant.line() + "\n\n" if constant.constants else "") + "## Steps\n\n" + table(steps, BENCH_COLUMNS)
    if profiled:
        text += "\n## Communication share and overlap (per step, mean over ranks)\n\n" + table(
            profiled, OVERLAP_COLUMNS
        )
    ok = [r for r in steps if r["status"] == "ok"]
    return text + "\n## Memory per rank: measured and analytic\n\n" + table(ok, MEMORY_COLUMNS)


def kernel_table_markdown(kernel_rows: Sequence[dict], title: str) -> str:
    """The GEMMs (per distinct shape) and attention kernels (per name) of one kernel table."""
    text = f"## GEMMs in the profiled step: {title}\n\n"
    text += "Rank 0, the last profiled step. TFLOP/s alone: the same GEMM (op, shape, strides, dtype) on "
    text += "fresh random tensors, median of repeated calls. Beside NCCL: the share of its time in which "
    text += "an NCCL kernel ran too.\n\n"
    text += tables.markdown(gemm_summary(kernel_rows), GEMM_COLUMNS)
    attention = attention_summary(kernel_rows)
    if attention:
        text += "\n### Attention kernels\n\n" + tables.markdown(attention, ATTENTION_KERNEL_COLUMNS)
    return text


def kernel_tables_markdown(rows: Sequence[dict], run_path: Path) -> str:
    """A kernel_table_markdown section for every row whose kernel table is in `run_path`."""
    sections = []
    for row in rows:
        path = Path(run_path) / row.get("kernel_table", "")
        if row.get("kernel_table") and path.is_file():
            sections.append(kernel_table_markdown(read_rows(path), path.name))
    return "\n".join(sections)


def write_bench_reports(run_path: Path) -> list[Path]:
    rows = RunDir(run_path).rows()
    md, csv_file = run_path / "results.md", run_path / "results.csv"
    kernels = kernel_tables_markdown(rows, run_path)
    write_text_whole(md, measured_on(rows) + bench_markdown(rows) + ("\n" + kernels if kernels else ""))
    write_text_whole(
        csv_file, tables.csv_text(with_memory_model(with_scaling(rows)), BENCH_COLUMNS + MEMORY_COLUMNS[len(_CONFIG) :])
    )
    return [md, csv_file]


def benchmark_page(comm: Sequence[dict], bench: Sequence[dict], title: str, kernels: str = "") -> str:
    """The committed page: environment, collectives, steps, overlap and memory from rows alone,
    then `kernels` (kernel_tables_markdown of the bench runs)."""
    text = f"# {title}\n\n" + measured_on([*comm, *bench])
    text += "Rendered by `lmperf dist-report` from the run directories' results.jsonl. Scaling efficiency = "
    text += "total tokens/s on N GPUs / (N x tokens/s of one plain process with the same per-GPU batch).\n\n"
    if comm:
        text += "## Collectives (nccl-tests bus bandwidth)\n\n" + tables.markdown(comm_rows(comm), COMM_COLUMNS) + "\n"
    if bench:
        text += bench_markdown(bench)
    return text + ("\n" + kernels if kernels else "")


def write_benchmark_page(run_paths: Sequence[Path], out: Path, title: str) -> Path:
    """The page from comm and bench-dist run directories; anything else is a UsageError."""
    comm, bench, kernels = [], [], []
    for path in run_paths:
        made_by = command_of(path) if (Path(path) / RESULTS).is_file() else None
        if made_by not in ("comm", "bench-dist"):
            raise UsageError(f"{path} is not a run directory of `lmperf comm` or `lmperf bench-dist`")
        rows = RunDir(path).rows()
        if not rows:
            raise UsageError(f"{path} has no rows yet")
        (comm if made_by == "comm" else bench).extend(rows)
        if made_by == "bench-dist":
            kernels.append(kernel_tables_markdown(rows, path))
    try:
        page = benchmark_page(comm, bench, title, "\n".join(k for k in kernels if k))
        Path(out).write_text(page, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {out}: {error.strerror}") from None
    return Path(out)

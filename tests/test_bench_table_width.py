"""The bench table in a narrow terminal: whole cells, the columns that fit, the rest in the files."""

import os
import subprocess
import sys

from lmperf.bench import report
from lmperf.report import tables

ROW = {
    "preset": "tiny",
    "seq_len": 16,
    "mode": "forward",
    "precision": "fp32",
    "compile": "eager",
    "attention": "naive",
    "batch": 4,
    "param_dtype": "fp32",
    "loss": "eager",
    "checkpoint": "none",
    "status": "ok",
    "flag": "",
    "cold_ms": 123.4,
    "mean_ms": 3553.1307249584643,
    "std_ms": 1.5,
    "spread": 0.0004,
    "median_ms": 3550.0,
    "min_ms": 3500.0,
    "max_ms": 3600.0,
    "tokens_per_s": 1234.5,
    "tflops": 0.01,
    "mfu": None,
    "peak_memory_gb": None,
}
ROWS = [ROW, {**ROW, "attention": "sdpa", "loss": "fused"}]


def test_a_table_keeps_what_varies_says_what_is_constant_once_and_drops_what_is_empty():
    layout = tables.layout(ROWS, report.COLUMNS, report.IDENTIFYING)
    assert layout.line() == (
        "Every row: preset tiny, ctx 16, mode forward, prec fp32, compile eager, batch 4, "
        "param dtype fp32, checkpoint none."
    )
    keys = [key for _, key, _ in layout.columns]
    assert keys[:3] == ["attention", "loss", "status"]
    assert not {"flag", "mfu", "peak_memory_gb", "preset", "seq_len"} & set(keys)  # empty, or said once


def test_fitting_columns_keep_the_most_wanted_whole_and_in_order():
    shown = tables.fitting_columns(
        ROWS, tables.layout(ROWS, report.COLUMNS, report.IDENTIFYING).columns, 80, report.TERMINAL_PRIORITY
    )
    # Widths by hand (widest text + 3), by priority: attn 8, loss 8, status 9, mean ms 10, spread 9
    # ("spread"), std ms 9, tok/s 8, TFLOP/s 10: 71, 72 with the closing border; cold ms, median,
    # min and max ms (10 or more each) no longer fit.
    assert [key for _, key, _ in shown] == [
        "attention",
        "loss",
        "status",
        "mean_ms",
        "std_ms",
        "spread",
        "tokens_per_s",
        "tflops",
    ]
    assert tables.fitting_columns(ROWS, report.COLUMNS, 1000, report.TERMINAL_PRIORITY) == report.COLUMNS


def test_bench_in_an_80_column_terminal_cuts_no_cell(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lmperf.cli",
            "bench",
            "-p",
            "tiny",
            "-t",
            "16",
            "--modes",
            "forward",
            "--warmup",
            "0",
            "--steps",
            "1",
            "--runs",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    table = result.stdout[result.stdout.index("lmperf bench", 20) : result.stdout.index("more columns")]
    assert "…" not in table and max(len(line) for line in table.splitlines()) <= 80
    assert "mean ms" in table and "Every row: preset tiny, ctx 16, mode forward" in result.stdout

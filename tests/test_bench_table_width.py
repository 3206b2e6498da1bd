"""The bench table in a narrow terminal: whole cells, the columns that fit, the rest in the files."""

import os
import subprocess
import sys

from lmperf.bench import report
from lmperf.report import tables

ROW = {"preset": "tiny", "seq_len": 16, "mode": "forward", "precision": "fp32", "compile": "eager",
       "attention": "naive", "status": "ok", "cold_ms": 123.4, "mean_ms": 3553.1307249584643, "std_ms": 1.5,
       "median_ms": 3550.0, "min_ms": 3500.0, "max_ms": 3600.0, "tokens_per_s": 1234.5, "tflops": 0.01,
       "mfu": 0.0123, "peak_memory_gb": 0.25}


def test_fitting_columns_keep_the_most_wanted_whole_and_in_order():
    shown = tables.fitting_columns([ROW], report.COLUMNS, 80, report.TERMINAL_PRIORITY)
    keys = [key for _, key, _ in shown]
    # Widths by hand (text + 3): preset 9, mode 10, ctx 6, status 9, mean ms 10, MFU 7 ("1.2%"),
    # peak GB 10, prec 7, compile 10: 78, 79 with the closing border; attn (8) and the rest don't fit.
    assert keys == ["preset", "seq_len", "mode", "precision", "compile", "status", "mean_ms", "mfu", "peak_memory_gb"]
    assert tables.fitting_columns([ROW], report.COLUMNS, 1000, report.TERMINAL_PRIORITY) == report.COLUMNS


def test_bench_in_an_80_column_terminal_cuts_no_cell(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "lmperf.cli", "bench", "-p", "tiny", "-t", "16", "--modes", "forward",
         "--warmup", "0", "--steps", "1", "--runs", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "80"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    table = result.stdout[result.stdout.index("lmperf bench", 20):result.stdout.index("more columns")]
    assert "…" not in table and max(len(line) for line in table.splitlines()) <= 80
    assert "mean ms" in table and "tiny" in table

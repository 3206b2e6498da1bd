"""Parsing ncu's raw CSV: preamble lines, program output, units row, separators, missing values."""

import gzip

import pytest

from lmperf.errors import UsageError
from lmperf.pmc.parse import dims, number, parse_text, read_capture

RAW = """==PROF== Connected to process 4242 (/usr/bin/python3.12)
some output the profiled program printed
==PROF== Profiling "ampere_sgemm_128x64_nn": 0%....50%....100% - 9 passes
==WARNING== a warning ncu printed
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","sm__sass_thread_inst_executed_op_ffma_pred_on.sum"
"","","","","","","","","","","","nsecond","inst"
"0","4242","python3.12","127.0.0.1","ampere_sgemm_128x64_nn","1","7","(256, 1, 1)","(4, 8, 2)","0","9.0","12,345","1,073,741,824"
"1","4242","python3.12","127.0.0.1","void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::fill_kernel>(int, T1, T2)","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","1,024.5","n/a"
==PROF== Disconnected from process 4242
"""


def test_number_reads_separators_and_missing_values():
    assert number("1,234,567") == 1234567.0
    assert number("1,024.5") == 1024.5
    assert number("n/a") is None and number("") is None


def test_dims_reads_triples_and_bare_numbers():
    assert dims("(4, 8, 2)") == (4, 8, 2)
    assert dims("512") == (512, 1, 1)
    assert dims("?") == (0, 0, 0)


def test_parse_skips_preamble_and_reads_units_and_kernels():
    capture = parse_text(RAW)
    assert len(capture.kernels) == 2
    assert capture.units["gpu__time_duration.sum"] == "nsecond"
    gemm, fill = capture.kernels
    assert gemm.grid == (4, 8, 2) and gemm.blocks == 64 and gemm.threads_per_block == 256
    assert gemm.metric("sm__sass_thread_inst_executed_op_ffma_pred_on.sum") == 2**30
    assert fill.metrics["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] is None
    assert fill.metric("sm__sass_thread_inst_executed_op_ffma_pred_on.sum") == 0.0
    assert fill.metric("dram__bytes_read.sum") == 0.0  # a metric that was not collected at all
    assert not capture.has("dram__bytes_read.sum")


def test_read_capture_decompresses_gzip(tmp_path):
    path = tmp_path / "c.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write(RAW)
    assert len(read_capture(path).kernels) == 2


@pytest.mark.parametrize("text", ["", "==PROF== No kernels were profiled.\n", RAW.split('"0"')[0]])
def test_no_table_or_no_rows_is_a_usage_error(text):
    with pytest.raises(UsageError):
        parse_text(text)


def test_unreadable_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError):
        read_capture(tmp_path / "missing.csv")
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(UsageError):
        read_capture(bad)


def test_counters_read_their_cells_as_numbers_however_they_are_asked_for():
    """Counters convert a cell when first asked; every way of reading them gives the numbers."""
    first, second = parse_text(RAW).kernels
    ffma, time = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "gpu__time_duration.sum"
    assert first.metrics.get(ffma) == 1073741824.0 and first.metrics[time] == 12345.0
    assert second.metrics.get(ffma) is None and second.metric(ffma) == 0.0  # "n/a"
    assert dict(second.metrics.items()) == {time: 1024.5, ffma: None}
    assert {**first.metrics, ffma: 0.0} == {time: 12345.0, ffma: 0.0}
    assert "Kernel Name" not in first.metrics and first.metrics.get("Kernel Name", -1) == -1
    with pytest.raises(KeyError):
        first.metrics["Kernel Name"]
    assert len(first.metrics) == 2 and first.metrics == {time: 12345.0, ffma: 1073741824.0}

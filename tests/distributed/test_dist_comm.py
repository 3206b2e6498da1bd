"""`lmperf comm` over Gloo: sizes, the nccl-tests bandwidth definitions, and real 2- and 4-process runs."""

import os
import subprocess
import sys

import pytest

from lmperf.analysis.collectives import bus_factor
from lmperf.distributed.comm import parse_size
from lmperf.errors import UsageError
from lmperf.report.rundir import read_rows


@pytest.mark.parametrize("text, size", [("1MB", 2**20), ("512kb", 512 * 2**10), ("1GB", 2**30), ("4096", 4096)])
def test_sizes_are_binary_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "1TB", "-1MB", "0MB", "big"])
def test_bad_sizes_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_bus_factors_follow_nccl_tests():
    assert bus_factor("all-reduce", 2) == 1.0 and bus_factor("all-reduce", 8) == 1.75
    assert bus_factor("all-gather", 2) == 0.5 and bus_factor("reduce-scatter", 8) == 0.875


# nccl-tests' bus factors written out by hand: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n.
HAND_BUS_FACTORS = {
    2: {"all-reduce": 1.0, "all-gather": 0.5, "reduce-scatter": 0.5},
    4: {"all-reduce": 1.5, "all-gather": 0.75, "reduce-scatter": 0.75},
}


def _launched_by_lmperf(nproc):
    return [sys.executable, "-m", "lmperf.cli", "comm", "--nproc", str(nproc)]


def _launched_by_the_user(nproc):
    # torchrun started by hand: lmperf joins its world, whatever the cores (its --nproc guard is
    # for the launches it makes itself; 4 processes also run on a 2-core machine this way)
    from lmperf.distributed.launch import free_port

    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc}",
        f"--master-port={free_port()}",
        "-m",
        "lmperf.cli",
        "comm",
    ]


@pytest.mark.parametrize("nproc, launch", [(2, _launched_by_lmperf), (4, _launched_by_the_user)])
def test_comm_on_gloo_processes_writes_rows_table_and_plot(tmp_path, nproc, launch):
    result = subprocess.run(
        [
            *launch(nproc),
            "--device",
            "cpu",
            "--sizes",
            "64KB,1MB",
            "--warmup",
            "1",
            "--iters",
            "3",
            "--runs",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = tmp_path.iterdir()
    rows = read_rows(run_dir / "results.jsonl")
    assert [(r["op"], r["size_bytes"]) for r in rows] == [
        (op, size) for op in ("all-reduce", "all-gather", "reduce-scatter") for size in (2**16, 2**20)
    ]
    for row in rows:
        assert row["status"] == "ok" and row["backend"] == "gloo" and row["nproc"] == nproc
        assert len(row["mean_us_ranks"]) == nproc and row["mean_us"] > 0
        assert row["algbw_gbps"] == pytest.approx(row["size_bytes"] / row["mean_us"] / 1e3)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * HAND_BUS_FACTORS[nproc][row["op"]])
    assert (run_dir / "busbw.png").stat().st_size > 0
    assert "all-reduce" in (run_dir / "results.md").read_text()

"""`lmperf plan` and `lmperf plan-check` from the command line: rows, report, and bad input as
one line with exit status 2."""

import json

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.report.rundir import read_rows
from test_cli_bad_paths import one_line_exit_2

SIZES = (2**20, 2**24, 2**30)
ENV = {"device": "GPU", "driver": "1", "torch": "2", "triton": "3", "commit": "abc", "date": "today"}


def _comm_file(tmp_path, ops=("all-reduce", "all-gather", "reduce-scatter")):
    """Two-GPU comm rows at 20 us + size x bus factor / 200 GB/s."""
    path = tmp_path / "comm.jsonl"
    rows = [
        {
            "op": op,
            "size_bytes": s,
            "nproc": 2,
            "status": "ok",
            "env": {"device": "GPU"},
            "mean_us": 20 + (1.0 if op == "all-reduce" else 0.5) * s / 200e9 * 1e6,
        }
        for op in ops
        for s in SIZES
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _plan(tmp_path, *args):
    return CliRunner().invoke(app, ["plan", "-p", "tiny", "-t", "64", "--runs", str(tmp_path / "runs"), *args])


def _run_dir(tmp_path):
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


def test_plan_writes_a_row_per_gpu_count_and_its_assumptions(tmp_path):
    result = _plan(tmp_path, "--gpus", "2,16", "--comm", str(_comm_file(tmp_path)), "--peak-tflops", "100")
    assert result.exit_code == 0, result.output
    rows = read_rows(_run_dir(tmp_path) / "results.jsonl")
    assert [(r["gpus"], r["nodes"]) for r in rows] == [(2, 1), (16, 2)]
    assert rows[1]["exposed_ms"] > rows[0]["exposed_ms"] > 0  # the network is slower than the node
    report = (_run_dir(tmp_path) / "results.md").read_text()
    assert "| 16 | 2 |" in report and "Weak scaling" in report and "assumed MFU of 50%" in report
    assert "comm.jsonl on 2 x GPU" in report and "Across nodes" in report


def test_plan_takes_its_compute_from_a_measured_one_gpu_row(tmp_path):
    row = {
        "preset": "tiny",
        "seq_len": 64,
        "mode": "train-step",
        "precision": "bf16",
        "compile": "eager",
        "attention": "sdpa",
        "batch": 1,
        "status": "ok",
        "mean_ms": 12.5,
        "steps": 10,
        "env": {"device": "GPU"},
    }
    measured = tmp_path / "bench.jsonl"
    measured.write_text(json.dumps(row) + "\n" + json.dumps({**row, "seq_len": 32, "mean_ms": 9.0}) + "\n")
    result = _plan(
        tmp_path,
        "--gpus",
        "4",
        "--comm",
        str(_comm_file(tmp_path)),
        "--from-row",
        str(measured),
        "--peak-tflops",
        "100",
    )
    assert result.exit_code == 0, result.output
    (planned,) = read_rows(_run_dir(tmp_path) / "results.jsonl")
    assert planned["compute_ms"] == 12.5 and planned["step_ms"] == pytest.approx(12.5 + planned["exposed_ms"])


def test_plan_runs_on_its_built_in_calibration(tmp_path):
    result = _plan(tmp_path, "--gpus", "8")
    assert result.exit_code == 0, result.output
    assert "NVIDIA H200" in result.output and "Overlap 0%" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["-p", "nope"], "unknown preset 'nope'"),
        (["--gpus", "0"], "GPU counts must be positive"),
        (["--gpus", "8,x"], "--gpus: cannot read"),
        (["--gpus", "12"], "12 GPUs do not fill whole nodes of 8"),
        (["--mfu", "2"], "--mfu must be in (0, 1]"),
        (["--overlap", "1.5"], "--overlap must be between 0 and 1"),
        (["--strategy", "tp"], "unknown strategy 'tp'"),
        (["-t", "4096"], "exceeds the model's maximum"),
        (["--inter-node-gbps", "0"], "--inter-node-gbps must be positive"),
    ],
)
def test_bad_plans_are_one_line(tmp_path, args, message):
    one_line_exit_2(_plan(tmp_path, *args), message)
    assert not (tmp_path / "runs").exists()


def test_comm_rows_without_the_collectives_fsdp_needs(tmp_path):
    comm = _comm_file(tmp_path, ops=("all-reduce",))
    one_line_exit_2(_plan(tmp_path, "--comm", str(comm), "--peak-tflops", "100"), "no all-gather rows")


def test_a_from_row_file_without_the_step(tmp_path):
    empty = tmp_path / "bench.jsonl"
    empty.write_text("")
    one_line_exit_2(_plan(tmp_path, "--from-row", str(empty)), "--from-row needs exactly one")


def test_plan_check_puts_each_step_beside_its_prediction(tmp_path):
    def step(nproc, strategy, mean_ms, seq_len=64):
        return {
            "preset": "tiny",
            "seq_len": seq_len,
            "mode": "train-step",
            "precision": "bf16",
            "compile": "eager",
            "attention": "naive",
            "batch": 4,
            "status": "ok",
            "nproc": nproc,
            "strategy": strategy,
            "mean_ms": mean_ms,
            "bucket_mb": 25.0 if strategy == "ddp" else None,
            "reshard": True if strategy == "fsdp" else None,
            "env": ENV,
        }

    steps = tmp_path / "steps.jsonl"
    rows = [
        step(1, "none", 10.0),
        step(2, "ddp", 10.5),
        step(1, "none", 20.0, 128),
        step(2, "ddp", 20.4, 128),
        step(2, "fsdp", 11.0, 32),
    ]
    steps.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(
        app, ["plan-check", str(steps), "--comm", str(_comm_file(tmp_path)), "--runs", str(tmp_path / "runs")]
    )
    assert result.exit_code == 0, result.output
    checked = read_rows(_run_dir(tmp_path) / "results.jsonl")
    assert [(r["seq_len"], r["measured_ms"], r["one_gpu_ms"]) for r in checked] == [(64, 10.5, 10.0), (128, 20.4, 20.0)]
    assert "not checked: tiny ctx 32 fsdp on 2 GPUs" in result.output and "Measured on GPU" in result.output


def test_plan_check_without_pairs_is_one_line(tmp_path):
    steps = tmp_path / "steps.jsonl"
    steps.write_text("")
    result = CliRunner().invoke(
        app, ["plan-check", str(steps), "--comm", str(_comm_file(tmp_path)), "--runs", str(tmp_path / "runs")]
    )
    one_line_exit_2(result, "no N-GPU train step")

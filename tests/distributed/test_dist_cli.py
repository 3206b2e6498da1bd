"""`lmperf bench-dist` and `lmperf comm` as a user meets them: torchrun, rows, one-line errors."""

import subprocess
import sys
import types

import pytest
import torch
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.report.rundir import read_rows


def lmperf(*args):
    return subprocess.run([sys.executable, "-m", "lmperf.cli", *args], capture_output=True, text=True, timeout=180)


def test_bench_dist_runs_ddp_and_fsdp_on_two_processes(tmp_path):
    result = lmperf(
        "bench-dist",
        "--device",
        "cpu",
        "--nproc",
        "2",
        "--strategy",
        "ddp,fsdp",
        "--bucket-mb",
        "1,25",
        "--modes",
        "train-step",
        "--contexts",
        "32",
        "--warmup",
        "1",
        "--steps",
        "2",
        "--profile-steps",
        "1",
        "--runs",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = tmp_path.iterdir()
    rows = read_rows(run_dir / "results.jsonl")
    assert [(r["strategy"], r["bucket_mb"], r["reshard"]) for r in rows] == [
        ("ddp", 1.0, None),
        ("ddp", 25.0, None),
        ("fsdp", None, True),
    ]
    assert all(r["status"] == "ok" and r["nproc"] == 2 and len(r["mean_ms_ranks"]) == 2 for r in rows)
    markdown = (run_dir / "results.md").read_text()
    assert "## Steps" in markdown and "## Memory per rank" in markdown
    assert (run_dir / "job.json").is_file() and "fsdp" in result.stdout


def test_plain_bench_with_nproc_runs_the_data_parallel_sweep(tmp_path):
    result = lmperf(
        "bench",
        "--nproc",
        "2",
        "--strategy",
        "fsdp",
        "-p",
        "tiny",
        "-t",
        "32",
        "--modes",
        "train-step",
        "--warmup",
        "1",
        "--steps",
        "2",
        "--runs",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = tmp_path.iterdir()
    (row,) = read_rows(run_dir / "results.jsonl")
    assert (row["strategy"], row["nproc"], row["status"], row["preset"]) == ("fsdp", 2, "ok", "tiny")


def test_two_single_process_nodes_meet_at_the_rendezvous_endpoint(tmp_path):
    # Two launches of the same command, as on two machines: node 0's rank 0 writes the row.
    from lmperf.distributed.launch import free_port

    endpoint = f"127.0.0.1:{free_port()}"
    command = [
        sys.executable,
        "-m",
        "lmperf.cli",
        "bench-dist",
        "--device",
        "cpu",
        "--nproc",
        "1",
        "--nnodes",
        "2",
        "--rdzv-endpoint",
        endpoint,
        "--strategy",
        "fsdp",
        "-p",
        "tiny",
        "-t",
        "32",
        "--modes",
        "train-step",
        "--warmup",
        "0",
        "--steps",
        "1",
    ]
    nodes = [
        subprocess.Popen(
            [*command, "--node-rank", str(rank), "--runs", str(tmp_path / f"node{rank}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=240) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs[0][1][-2000:] + outputs[1][1][-2000:]
    (run_dir,) = (tmp_path / "node0").iterdir()
    (row,) = read_rows(run_dir / "results.jsonl")
    assert (row["status"], row["nproc"], len(row["mean_ms_ranks"])) == ("ok", 2, 2)
    assert "node 0 writes the rows" in outputs[1][0]


def _no_fsdp2(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.distributed.fsdp", types.ModuleType("torch.distributed.fsdp"))


def _gpus(count):
    def fake(monkeypatch):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        # a CPU-only torch build has no NCCL; these cases check the GPU count, not the backend
        monkeypatch.setattr(torch.distributed, "is_nccl_available", lambda: True)

    return fake


BAD_INPUTS = [
    (["bench-dist", "--device", "cpu", "--strategy", "zero3"], None, "unknown strategy"),
    (["bench-dist", "--device", "cpu", "--strategy", "none", "--nproc", "2"], None, "needs --nproc 1"),
    (["bench-dist", "--device", "cpu", "--nproc", "0"], None, "at least 1"),
    (["bench-dist", "--device", "cpu", "--strategy", "fsdp", "--reshard", "maybe"], None, "--reshard"),
    (["bench-dist", "--device", "cpu", "--strategy", "fsdp"], _no_fsdp2, "needs torch.distributed.fsdp.fully_shard"),
    (["bench-dist", "--device", "cuda", "--nproc", "2"], _gpus(1), "more processes than the 1 GPU(s)"),
    (["comm", "--device", "cuda", "--nproc", "4"], _gpus(2), "more processes than the 2 GPU(s)"),
    (["comm", "--device", "cpu", "--ops", "all-to-all"], None, "unknown collective"),
    (["comm", "--device", "cpu", "--sizes", "1TB"], None, "cannot read message size"),
    (["bench", "--device", "cuda", "--nproc", "2", "--strategy", "fsdp"], _gpus(1), "more processes than the 1 GPU(s)"),
    (
        ["bench", "--device", "cpu", "-p", "cs336-8b", "-t", "65536", "--nproc", "2"],
        None,
        "exceeds the model's maximum 32768",
    ),
    (
        ["bench", "--device", "cpu", "--checkpoint", "sometimes", "--nproc", "2"],
        None,
        "unknown checkpoint policy 'sometimes'",
    ),
    (["bench", "--device", "cpu", "--loss", "liger"], None, "unknown loss 'liger'"),
    (["bench-dist", "--device", "cpu", "--nnodes", "2"], None, "needs --rdzv-endpoint"),
    (
        ["bench-dist", "--device", "cpu", "--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h:1"],
        None,
        "--node-rank",
    ),
]


@pytest.mark.parametrize("args, patch, message", BAD_INPUTS, ids=[m for _, _, m in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, args, patch, message):
    # In-process (a fresh interpreter per case would cost seconds of torch import each); every
    # case is refused before any process is launched.
    if patch:
        patch(monkeypatch)
    result = CliRunner().invoke(app, [*args, "--runs", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr
    assert not any(tmp_path.iterdir())  # refused before anything ran

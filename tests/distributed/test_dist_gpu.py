"""The NCCL path on all the GPUs at hand (1, 2, 4, 8...): collectives, DDP and FSDP2 rows, memory, overlap."""

import subprocess
import sys

import pytest
import torch

from lmperf.distributed.report import with_memory_model
from lmperf.report.rundir import read_rows


def _lmperf(*args):
    return subprocess.run([sys.executable, "-m", "lmperf.cli", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.gpu
def test_nccl_collectives_and_data_parallel_steps(tmp_path):
    nproc = torch.cuda.device_count()
    comm = _lmperf(
        "comm",
        "--device",
        "cuda",
        "--nproc",
        str(nproc),
        "--sizes",
        "1MB,64MB",
        "--iters",
        "5",
        "--runs",
        str(tmp_path / "comm"),
    )
    assert comm.returncode == 0, comm.stderr[-3000:]
    (comm_dir,) = (tmp_path / "comm").iterdir()
    assert all(r["status"] == "ok" and r["backend"] == "nccl" for r in read_rows(comm_dir / "results.jsonl"))

    bench = _lmperf(
        "bench-dist",
        "--device",
        "cuda",
        "--nproc",
        str(nproc),
        "--strategy",
        "ddp,fsdp",
        "--presets",
        "small",
        "--contexts",
        "256",
        "--modes",
        "train-step",
        "--precisions",
        "bf16",
        "--warmup",
        "2",
        "--steps",
        "3",
        "--profile-steps",
        "2",
        "--runs",
        str(tmp_path / "bench"),
    )
    assert bench.returncode == 0, bench.stderr[-3000:]
    (bench_dir,) = (tmp_path / "bench").iterdir()
    rows = with_memory_model(read_rows(bench_dir / "results.jsonl"))
    assert [r["strategy"] for r in rows] == ["ddp", "fsdp"] and all(r["status"] == "ok" for r in rows)
    for row in rows:
        # Between steps: parameters, AdamW state, rotary tables (and DDP's buckets), as the sharding
        # model says, plus what it leaves out: cuBLAS workspaces and the last batch (under 0.1 GB).
        assert row["persistent_memory_gb"] == pytest.approx(row["model_persistent_gb"], rel=0.1, abs=0.1)
        assert row["peak_memory_gb"] > row["persistent_memory_gb"] and len(row["peak_memory_gb_ranks"]) == nproc
        assert row["peak_reserved_gb"] >= row["peak_memory_gb"] and row["alloc_retries"] == 0
        assert row["profiled_steps"] == 2 and 0 <= row["exposed_ms"] <= row["comm_ms"] <= row["mean_ms"] * 1.5
        if nproc > 1:
            assert row["comm_ms"] > 0 and (bench_dir / row["timeline"]).is_file()
        # rank 0's kernel table: the eager step's GEMMs are aten::mm/addmm, with shapes, also timed alone
        gemms = [r for r in read_rows(bench_dir / row["kernel_table"]) if r.get("flops")]
        assert gemms and all(r["m"] and r["tflops"] > 0 for r in gemms) and any(r["alone_tflops"] for r in gemms)
        assert all(r["env"] == row["env"] for r in gemms)  # each row names the run's GPU and commit
    assert "## GEMMs in the profiled step" in (bench_dir / "results.md").read_text()

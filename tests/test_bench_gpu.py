"""bench on a real GPU: CUDA-event timing, peak memory, MFU against the peak table, compile."""

import pytest
import torch

from lmperf.run.sweep import SweepSettings, grid, run_sweep
from lmperf.report.rundir import RunDir


@pytest.mark.gpu
def test_cuda_sweep_reports_memory_and_mfu(tmp_path):
    configs = grid(
        ["tiny"], [64], ["forward", "train-step"], ["fp32", "bf16"], ["eager", "compile"], ["naive", "sdpa"], 2
    )
    rows = run_sweep(configs, SweepSettings(warmup=2, steps=3, device="cuda"), RunDir.create("bench", tmp_path))
    assert len(rows) == len(configs) and all(r["status"] == "ok" for r in rows)
    for row in rows:
        assert row["peak_memory_gb"] > 0
        # the allocator reserves at least what it hands out; a small model needs no retry
        assert row["peak_reserved_gb"] >= row["peak_memory_gb"] and row["alloc_retries"] == 0
        assert row["env"]["device"] == torch.cuda.get_device_name()
        assert row["env"]["driver"] != "n/a"
        if "H100" in row["env"]["device"] or "H200" in row["env"]["device"]:
            assert 0 < row["mfu"] < 1
    compiled = [r for r in rows if r["compile"] == "compile"]
    assert all(r["cold_ms"] > r["median_ms"] for r in compiled)  # the cold step compiles

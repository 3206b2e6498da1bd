"""GPU checks of the profile and memory paths on the tiny preset (skipped without CUDA)."""

import pytest
import torch

from lmperf.model.step import StepConfig
from lmperf.profile.memory import MemorySettings, run_memory
from lmperf.profile.run import ProfileSettings, run_profile
from lmperf.report.rundir import RunDir


@pytest.mark.gpu
def test_cuda_profile_attributes_kernels_to_phases_and_regions(tmp_path):
    rows = run_profile(
        StepConfig("tiny", 64, "train-step"),
        ["train-step"],
        ProfileSettings(1, 2, "cuda"),
        RunDir.create("profile", tmp_path),
    )
    row = rows[0]
    assert row["status"] == "ok" and row["time_unit"] == "GPU kernel time"
    assert row["attributed"] == row["device_activities"]  # every kernel counted once
    phases = {k["phase"] for k in row["kernels"]}
    assert {"forward", "backward", "optimizer_step"} <= phases
    assert any(k["category"] == "matmul" for k in row["kernels"])
    regions = {r["region"]: r for r in row["regions"]}
    assert regions["ffn"]["backward_ms"] > 0 and regions["attn_softmax"]["backward_ms"] > 0
    assert regions.get("backward (other)", {"time_share": 0})["time_share"] < 0.2


@pytest.mark.gpu
def test_cuda_memory_rows_and_snapshot(tmp_path):
    run_dir = RunDir.create("memory", tmp_path)
    rows = run_memory(MemorySettings("tiny", (64,), ("bf16",), 2), run_dir)
    peaks = [r for r in rows if r["kind"] == "peak"]
    assert [r["status"] for r in peaks] == ["ok", "ok"]
    snapshot = next(r for r in rows if r["kind"] == "snapshot")
    assert snapshot["largest"] and (run_dir.path / "snapshot-train-step.pickle").stat().st_size > 0
    assert snapshot["residual_stream"]["dtype"] == "torch.float32"
    torch.cuda.empty_cache()

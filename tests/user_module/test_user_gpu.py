"""A user's module on CUDA: its memory at a training step's peak adds up to what the allocator
reports, with parameter and AdamW bytes by hand; profile attributes every GPU kernel to a region
named by module path; and bench's bf16 rows carry peak memory and MFU."""

import pytest

from scratch_model import PARAM_TENSORS, PARAMS, SCRATCH, run_cli

pytestmark = pytest.mark.gpu
FP32 = 4


def test_memory_at_the_peak_adds_up(tmp_path):
    _, rows = run_cli(
        tmp_path,
        [
            "memory",
            "--module",
            SCRATCH,
            "-t",
            "64",
            "--batch",
            "4",
            "--precisions",
            "fp32,bf16",
            "--checkpoint",
            "none,full",
        ],
        key=lambda r: (r["precision"], r["checkpoint"]),
    )
    for row in rows.values():
        peak = row["at_peak"]
        assert peak["parameters"] == PARAMS * FP32
        # fused AdamW on CUDA: two fp32 moments per parameter, a one-element fp32 step per tensor
        assert peak["optimizer_state"] == 2 * PARAMS * FP32 + PARAM_TENSORS * FP32
        assert 0 <= peak["gradients"] <= PARAMS * FP32 * 1.01 and peak["activations"] > 0 and peak["temporaries"] >= 0
        assert row["peak"] == sum(peak.values()) == row["max_memory_allocated"]
        assert (tmp_path / next(tmp_path.iterdir()).name / row["snapshots"][0]).stat().st_size > 0
    for precision in ("fp32", "bf16"):
        assert rows[(precision, "full")]["parts"]["activations"] < rows[(precision, "none")]["parts"]["activations"]


def test_profile_attributes_every_kernel_to_a_module(tmp_path):
    _, rows = run_cli(
        tmp_path,
        [
            "profile",
            "--module",
            SCRATCH,
            "--context",
            "64",
            "--batch",
            "4",
            "--precision",
            "bf16",
            "--modes",
            "train-step",
            "--warmup",
            "1",
            "--steps",
            "2",
        ],
    )
    row = rows["train-step"]
    assert row["attributed"] == row["device_activities"]
    names = {r["region"] for r in row["regions"]}
    assert {"layers.*.attn", "layers.*.attn.q_proj", "layers.*.ffn.w2", "lm_head", "optimizer_step"} <= names


def test_bench_bf16_rows_have_peak_memory_and_mfu(tmp_path):
    _, rows = run_cli(
        tmp_path,
        [
            "bench",
            "--module",
            SCRATCH,
            "-t",
            "64",
            "--batch",
            "4",
            "--precisions",
            "bf16",
            "--compile",
            "eager,compile",
            "--warmup",
            "2",
            "--steps",
            "3",
        ],
        key=lambda r: (r["mode"], r["compile"]),
    )
    for row in rows.values():
        assert row["status"] == "ok" and row["peak_memory_gb"] > 0 and 0 < row["mfu"] < 1
        assert row["flops_over_transformer"] == pytest.approx(1.0)

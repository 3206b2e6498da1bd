"""bench's figures against numbers worked out by hand: the FLOPs of a training step by PaLM's
rule (6N + 12·L·d·T per token, N = the matmul weights), TFLOP/s from the MEAN step time in
seconds, MFU against a peak written out, and the datasheet peaks themselves."""

import pytest
import torch

from lmperf.analysis.peaks import peak_tflops
from lmperf.run import sweep
from lmperf.run.sweep import SweepSettings, grid, run_sweep
from lmperf.run.timing import StepTimes
from lmperf.report.rundir import RunDir

# The tiny preset: d_model 64, d_ff 256, 2 layers, 4 heads, vocabulary 512 (SwiGLU, untied head).
D, D_FF, LAYERS, VOCAB = 64, 256, 2, 512
# Matmul weights: per layer q, k, v, out (4·d²) and the MLP's w1, w3, w2 (3·d·d_ff); the LM head d·V.
N = LAYERS * (4 * D * D + 3 * D * D_FF) + D * VOCAB
assert N == 163_840
BATCH, T = 2, 32
# PaLM (Chowdhery et al. 2022, appendix B): 6N per token for the weights' forward and backward,
# plus 12·L·d·T for attention's QK^T and PV (full T×T square, as naive attention computes it).
FLOPS_PER_STEP = (6 * N + 12 * LAYERS * D * T) * BATCH * T
assert FLOPS_PER_STEP == 66_060_288
PEAK = 100.0  # TFLOP/s, given as --peak-tflops
MEASURED_MS = [1.0, 2.0, 6.0]  # mean 3 ms, median 2 ms: a figure taken from the median shows


def test_tflops_and_mfu_of_a_tiny_cpu_row_by_hand(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "time_steps", lambda *args: StepTimes(9.0, [4.0], MEASURED_MS))
    configs = grid(["tiny"], [T], ["train-step"], ["fp32"], ["eager"], ["naive"], BATCH)
    (row,) = run_sweep(configs, SweepSettings(1, 3, "cpu", PEAK), RunDir.create("bench", tmp_path))
    mean_s = 3.0e-3
    assert row["mean_ms"] == pytest.approx(3.0) and row["median_ms"] == pytest.approx(2.0)
    assert row["matmul_flops"] == FLOPS_PER_STEP
    assert row["tflops"] == pytest.approx(FLOPS_PER_STEP / mean_s / 1e12, rel=1e-12)  # 0.02202 TFLOP/s
    assert row["mfu"] == pytest.approx(FLOPS_PER_STEP / mean_s / 1e12 / PEAK, rel=1e-12)
    assert row["tokens_per_s"] == pytest.approx(BATCH * T / mean_s)
    assert row["params"] == N + VOCAB * D + LAYERS * 2 * D + D  # + embedding table and 2L+1 RMSNorm weights


@pytest.mark.parametrize(
    "gpu, precision, datasheet",
    [
        # NVIDIA datasheets, dense (the sparsity figures are twice these): H100 SXM 989.4 bf16 / 66.9
        # fp32, H100 PCIe 756 / 51.2, A100 312 / 19.5.
        ("NVIDIA H100 80GB HBM3", "bf16", 989.4),
        ("NVIDIA H100 80GB HBM3", "fp32", 66.9),
        ("NVIDIA H100 PCIe", "bf16", 756.0),
        ("NVIDIA H200", "bf16", 989.4),
        ("NVIDIA A100-SXM4-80GB", "bf16", 312.0),
        ("NVIDIA A100-SXM4-80GB", "fp32", 19.5),
    ],
)
def test_dense_peaks_match_the_datasheets(gpu, precision, datasheet):
    assert peak_tflops(gpu, precision) == datasheet


def test_unknown_device_has_no_peak_and_the_override_wins():
    assert peak_tflops(f"CPU ({torch.__version__})", "fp32") is None
    assert peak_tflops("NVIDIA H100 80GB HBM3", "bf16", override=500.0) == 500.0

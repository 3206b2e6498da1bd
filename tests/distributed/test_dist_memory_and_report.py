"""The sharding arithmetic, and the tables a distributed run renders (scaling efficiency, memory)."""

import pytest

from lmperf.analysis.memory import memory_model, rotary_table_bytes
from lmperf.distributed.report import benchmark_page, with_memory_model, with_scaling
from lmperf.distributed.sharding import state_memory, train_step_peak
from lmperf.distributed.strategies import Strategy
from lmperf.model import parameter_count, preset

XL = preset("xl")
P = parameter_count(XL)["total"]
ROTARY = rotary_table_bytes(XL)  # buffers: whole on every rank


def test_replicated_strategies_keep_16_bytes_per_parameter_between_steps():
    assert ROTARY == 48 * 2 * 8192 * 32 * 4  # layers x (cos, sin) x max context x head_dim/2 x fp32
    assert state_memory(XL, Strategy("none"), 1).persistent == 12 * P + ROTARY  # gradients released
    assert state_memory(XL, Strategy("ddp"), 2).persistent == 16 * P + ROTARY  # buckets outlive them
    assert state_memory(XL, Strategy("ddp"), 8).persistent == 16 * P + ROTARY  # nothing sharded


@pytest.mark.parametrize("n", [2, 4, 8])
def test_fsdp_shards_parameters_and_optimizer_state(n):
    kept = state_memory(XL, Strategy("fsdp", reshard=True), n)
    assert kept.persistent == pytest.approx(12 * P / n + ROTARY)
    whole = state_memory(XL, Strategy("fsdp", reshard=False), n)
    assert whole.gathered > kept.gathered  # without resharding every block stays gathered


def test_one_plain_process_peak_is_the_single_gpu_model():
    for precision in ("fp32", "bf16"):
        single = memory_model(XL, 4, 512, precision).peak("train-step")
        assert train_step_peak(XL, 4, 512, precision, Strategy("none"), 1) == single


def test_fsdp_peak_falls_with_more_ranks_and_stays_above_unsharded_activations():
    peaks = [train_step_peak(XL, 4, 1024, "bf16", Strategy("fsdp"), n) for n in (2, 4, 8)]
    assert peaks[0] > peaks[1] > peaks[2]
    assert peaks[2] < train_step_peak(XL, 4, 1024, "bf16", Strategy("ddp"), 8)


def _row(strategy, nproc, tokens_per_s, **extra):
    return {"preset": "xl", "seq_len": 512, "mode": "train-step", "precision": "bf16", "compile": "eager",
            "attention": "sdpa", "batch": 4, "status": "ok", "strategy": strategy, "nproc": nproc,
            "bucket_mb": 25.0 if strategy == "ddp" else None, "reshard": True if strategy == "fsdp" else None,
            "tokens_per_s": tokens_per_s, "tokens_per_s_total": tokens_per_s * nproc, **extra}


def test_scaling_efficiency_is_against_one_plain_gpu_with_the_same_batch():
    rows = with_scaling([_row("ddp", 1, 1200.0), _row("none", 1, 1000.0), _row("ddp", 2, 900.0),
                         _row("fsdp", 2, 800.0, seq_len=1024)])
    assert rows[2]["scaling_efficiency"] == pytest.approx(0.9)  # 'none' wins over 1-process DDP
    assert rows[3]["scaling_efficiency"] is None  # no baseline at context 1024
    assert rows[0]["scaling_efficiency"] is None


def test_memory_columns_and_page():
    rows = with_memory_model([_row("fsdp", 2, 800.0, persistent_memory_gb=12.0, peak_memory_gb=40.0)])
    assert rows[0]["model_persistent_gb"] == pytest.approx((12 * P / 2 + ROTARY) / 1e9)
    env = {"device": "NVIDIA H200", "driver": "1", "torch": "2.11", "triton": "3", "commit": "abc", "date": "today"}
    page = benchmark_page([], [{**rows[0], "env": env}], "Data-parallel")
    assert page.startswith("# Data-parallel") and "NVIDIA H200" in page and "| fsdp | 2 |" in page


def test_ddp_peak_holds_the_first_buckets_through_the_second_step():
    # Measured on 2 H200s (benchmarks/scripts/ddp_memory_probe.py, xl at 512, bf16): step 2's
    # forward holds one fp32 gradient copy more than steps 3 and 4 (7.78 vs 6.78 copies).
    single = train_step_peak(XL, 4, 512, "bf16", Strategy("none"), 1)
    ddp = train_step_peak(XL, 4, 512, "bf16", Strategy("ddp"), 2)
    assert ddp - single == 8 * P  # the live buckets and the first iteration's, 4 bytes each

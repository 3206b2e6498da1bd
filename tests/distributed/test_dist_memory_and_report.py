"""The tables a distributed run renders (scaling efficiency, memory beside the analytic model)."""

import pytest

from lmperf.analysis.memory import rotary_table_bytes
from lmperf.distributed.report import benchmark_page, with_memory_model, with_scaling
from lmperf.model import parameter_count, preset

XL = preset("xl")
P = parameter_count(XL)["total"]
ROTARY = rotary_table_bytes(XL)  # buffers: whole on every rank


def _row(strategy, nproc, tokens_per_s, **extra):
    return {
        "preset": "xl",
        "seq_len": 512,
        "mode": "train-step",
        "precision": "bf16",
        "compile": "eager",
        "attention": "sdpa",
        "batch": 4,
        "status": "ok",
        "strategy": strategy,
        "nproc": nproc,
        "bucket_mb": 25.0 if strategy == "ddp" else None,
        "reshard": True if strategy == "fsdp" else None,
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_total": tokens_per_s * nproc,
        **extra,
    }


def test_scaling_efficiency_is_against_one_plain_gpu_with_the_same_batch():
    rows = with_scaling(
        [_row("ddp", 1, 1200.0), _row("none", 1, 1000.0), _row("ddp", 2, 900.0), _row("fsdp", 2, 800.0, seq_len=1024)]
    )
    assert rows[2]["scaling_efficiency"] == pytest.approx(0.9)  # 'none' wins over 1-process DDP
    assert rows[3]["scaling_efficiency"] is None  # no baseline at context 1024
    assert rows[0]["scaling_efficiency"] is None


def test_memory_columns_and_page():
    rows = with_memory_model([_row("fsdp", 2, 800.0, persistent_memory_gb=12.0, peak_memory_gb=40.0)])
    assert rows[0]["model_persistent_gb"] == pytest.approx((12 * P / 2 + ROTARY) / 1e9)
    env = {"device": "NVIDIA H200", "driver": "1", "torch": "2.11", "triton": "3", "commit": "abc", "date": "today"}
    page = benchmark_page([], [{**rows[0], "env": env}], "Data-parallel")
    assert page.startswith("# Data-parallel") and "NVIDIA H200" in page and "| fsdp | 2 |" in page


def test_a_row_written_before_the_optimizer_was_recorded_is_found_on_resume():
    """Rows written before a configuration field existed lack it; a resume must still find them
    (their key takes the field's default), or it runs them again and fills 'error' rows beside."""
    from lmperf.distributed.bench import row_key, stored_keys
    from lmperf.distributed.strategies import Strategy
    from lmperf.model.step import StepConfig

    config, strategy = StepConfig("tiny", 32, "train-step", batch=2), Strategy("fsdp", reshard=True)
    old_row = {**config.to_dict(), **strategy.key(), "nproc": 2}
    del old_row["optimizer"]
    assert row_key(config, strategy, 2) in stored_keys([old_row])
    assert row_key(config, strategy, 4) not in stored_keys([old_row])

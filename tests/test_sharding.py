"""The analytic memory per rank under data parallelism (lmperf.analysis.sharding), by hand."""

import pytest

from lmperf.analysis.memory import memory_model, rotary_table_bytes
from lmperf.analysis.sharding import DataParallel, state_memory, train_step_peak
from lmperf.model import parameter_count, preset

XL = preset("xl")
P = parameter_count(XL)["total"]
ROTARY = rotary_table_bytes(XL)  # buffers: whole on every rank


def test_replicated_strategies_keep_16_bytes_per_parameter_between_steps():
    assert ROTARY == 48 * 2 * 8192 * 32 * 4  # layers x (cos, sin) x max context x head_dim/2 x fp32
    assert state_memory(XL, DataParallel("none", 1)).persistent == 12 * P + ROTARY  # gradients released
    assert state_memory(XL, DataParallel("ddp", 2)).persistent == 16 * P + ROTARY  # buckets outlive them
    assert state_memory(XL, DataParallel("ddp", 8)).persistent == 16 * P + ROTARY  # nothing sharded


@pytest.mark.parametrize("n", [2, 4, 8])
def test_fsdp_shards_parameters_and_optimizer_state(n):
    kept = state_memory(XL, DataParallel("fsdp", n, reshard=True))
    assert kept.persistent == pytest.approx(12 * P / n + ROTARY)
    whole = state_memory(XL, DataParallel("fsdp", n, reshard=False))
    assert whole.gathered > kept.gathered  # without resharding every block stays gathered


def test_one_plain_process_peak_is_the_single_gpu_model():
    for precision in ("fp32", "bf16"):
        single = memory_model(XL, 4, 512, precision).peak("train-step")
        assert train_step_peak(XL, 4, 512, precision, DataParallel("none", 1)) == single


def test_fsdp_peak_falls_with_more_ranks_and_stays_above_unsharded_activations():
    peaks = [train_step_peak(XL, 4, 1024, "bf16", DataParallel("fsdp", n)) for n in (2, 4, 8)]
    assert peaks[0] > peaks[1] > peaks[2]
    assert peaks[2] < train_step_peak(XL, 4, 1024, "bf16", DataParallel("ddp", 8))


def test_ddp_peak_holds_the_first_buckets_through_the_second_step():
    # Measured on 2 H200s (a probe kept in git history: benchmarks/scripts/ddp_memory_probe.py at
    # 79509b2; xl at 512, bf16): step 2's
    # forward holds one fp32 gradient copy more than steps 3 and 4 (7.78 vs 6.78 copies).
    single = train_step_peak(XL, 4, 512, "bf16", DataParallel("none", 1))
    ddp = train_step_peak(XL, 4, 512, "bf16", DataParallel("ddp", 2))
    assert ddp - single == 8 * P  # the live buckets and the first iteration's, 4 bytes each


def test_ddp_without_bucket_views_keeps_gradients_as_a_second_copy():
    viewed = state_memory(XL, DataParallel("ddp", 2, bucket_view=True))
    copied = state_memory(XL, DataParallel("ddp", 2, bucket_view=False))
    assert (viewed.grads, copied.grads) == (0.0, 4 * P)  # fp32 gradients outside the buckets
    assert copied.persistent == viewed.persistent  # set_to_none frees the copy between steps

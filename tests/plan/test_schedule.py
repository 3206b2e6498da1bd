"""The collectives of one step: parameter tensors, DDP's buckets and FSDP2's units by hand."""

import pytest
import torch

from lmperf.errors import UsageError
from lmperf.model import TransformerLM
from lmperf.plan.schedule import Call, Parallelism, ddp_buckets, ddp_schedule, fsdp_schedule, parameter_tensors
from plan_tiny import BLOCK, ROOT, TINY

MiB = 2**20


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"mlp": "gelu"},
        {"tie_embeddings": True},
        {"n_kv_heads": 1},
        {"head_dim": 8, "n_kv_heads": 1, "qk_norm": True},  # 2 heads of 8: attention 16 wide over d 8
        {"head_dim": 2},
    ],
)
def test_parameter_tensors_are_the_models_own(changes):
    config = TINY.with_(**changes)
    with torch.device("meta"):
        model = TransformerLM(config)
    assert parameter_tensors(config) == [p.numel() for p in model.parameters()]


def test_ddp_fills_buckets_from_the_last_parameter_without_splitting_one():
    # Reversed: 20 MiB fills the 1 MiB first bucket alone; 0.5 + 30 MiB reach the 25 MiB cap;
    # 1 + 4 MiB are left over for a last bucket.
    sizes = [4 * MiB, 1 * MiB, 30 * MiB, MiB // 2, 20 * MiB]
    assert ddp_buckets(sizes, 25.0) == [20 * MiB, 30.5 * MiB, 5 * MiB]
    assert ddp_buckets([25 * MiB, 1 * MiB], 25.0) == [1 * MiB, 25 * MiB]  # a bucket at its cap is full


def test_ddp_all_reduces_fp32_gradients_and_the_last_bucket_is_exposed():
    # fp32 gradients, 4 bytes each: 1480 parameters in 17 tensors, far below one bucket: the
    # first bucket (1 MiB cap) takes them all.
    schedule = ddp_schedule(TINY, "fp32", 25.0)
    assert schedule.calls == (Call("all-reduce", 1480 * 4),)
    assert schedule.edge == schedule.calls
    assert schedule.window_share == pytest.approx(2 / 3)
    assert ddp_schedule(TINY, "bf16", 25.0).calls == (Call("all-reduce", 1480 * 2),)


def test_fsdp_gathers_each_block_twice_in_bf16_and_reduces_in_fp32():
    schedule = fsdp_schedule(TINY, "bf16", "fp32", reshard=True)
    assert sorted((c.op, c.size, c.count) for c in schedule.calls) == sorted(
        [
            ("all-gather", BLOCK * 2, 4),  # 2 layers x (forward + backward), bf16
            ("all-gather", ROOT * 2, 1),  # the root stays gathered from its forward to its backward
            ("reduce-scatter", BLOCK * 4, 2),  # fp32 gradients, once per block
            ("reduce-scatter", ROOT * 4, 1),
        ]
    )
    assert sorted((c.op, c.size) for c in schedule.edge) == sorted(
        [
            ("all-gather", ROOT * 2),
            ("all-gather", BLOCK * 2),
            ("reduce-scatter", BLOCK * 4),
            ("reduce-scatter", ROOT * 4),
        ]
    )
    assert schedule.window_share == 1.0


def test_fsdp_without_resharding_gathers_each_block_once_and_fp32_gathers_4_bytes():
    calls = fsdp_schedule(TINY, "fp32", "fp32", reshard=False).calls
    assert Call("all-gather", BLOCK * 4, 2) in calls


@pytest.mark.parametrize("parallelism", [Parallelism("tp"), Parallelism("ddp", bucket_mb=0)])
def test_unknown_strategies_and_empty_buckets_are_refused(parallelism):
    with pytest.raises(UsageError):
        parallelism.validate()

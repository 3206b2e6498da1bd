"""A user's module data-parallel on 2 Gloo ranks: each rank rebuilds it from the row's record (as
torchrun's workers do from job.json), FSDP2 shards each of its repeated blocks, and DDP's and
FSDP2's gradients equal one process stepping on both ranks' batches."""

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from lmperf.distributed.launch import joined_world
from lmperf.distributed.strategies import WEIGHT_SEED, DistModelStep, Strategy
from lmperf.model.choice import ModelChoice
from lmperf.model.module_tree import repeated_blocks
from lmperf.model.step import ModelStep, StepConfig
from world_spawn import spawn_world

SCRATCH = f"{Path(__file__).parents[1] / 'user_models' / 'scratch_lm.py'}:build"
STRATEGIES = [Strategy("ddp"), Strategy("fsdp", reshard=True)]


def _config() -> StepConfig:
    return replace(ModelChoice(module=SCRATCH).base(None, "tiny"), seq_len=16, mode="train-step", batch=2)


def _grads(step: ModelStep) -> list[torch.Tensor]:
    step.run("forward-backward")
    full = [p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad for p in step.model.parameters()]
    return [g.detach().clone() for g in full]


def _rank(out: Path, record: dict) -> None:
    with joined_world("cpu", timeout_s=60) as world:
        for index, strategy in enumerate(STRATEGIES):
            step = DistModelStep(StepConfig.from_dict(record), world.device, strategy, world)
            units = [type(block).__name__.startswith("FSDP") for block in repeated_blocks(step.model)]
            grads = _grads(step)
            if world.is_main:
                torch.save({"grads": grads, "units": units}, out / f"{index}.pt")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("user-dp")
    spawn_world(_rank, 2, out, _config().to_dict())
    return [torch.load(out / f"{i}.pt") for i in range(len(STRATEGIES))]


def test_fsdp_shards_each_repeated_block(results):
    ddp, fsdp = results
    assert ddp["units"] == [False, False] and fsdp["units"] == [True, True]


@pytest.mark.parametrize("index", range(len(STRATEGIES)), ids=[s.name for s in STRATEGIES])
def test_gradients_equal_one_process_on_both_batches(results, index):
    torch.manual_seed(WEIGHT_SEED)
    ranks = [ModelStep(_config(), torch.device("cpu"), seed=rank) for rank in range(2)]  # rank r's batch
    step = ranks[0]
    step.batch = tuple(torch.cat(parts) for parts in zip(*(r.batch for r in ranks)))
    for got, expected in zip(results[index]["grads"], _grads(step)):
        assert torch.allclose(got, expected, rtol=1e-4, atol=1e-6)

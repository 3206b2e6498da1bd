"""A 2-process DDP or FSDP2 step equals one process stepping on the two ranks' batches together."""

from pathlib import Path

import pytest
import torch

from lmperf.model.step import ModelStep, StepConfig
from lmperf.distributed.launch import joined_world
from lmperf.distributed.strategies import WEIGHT_SEED, DistModelStep, Strategy
from world_spawn import spawn_world

CONFIG = StepConfig("tiny", 32, "train-step", batch=2)
STRATEGIES = [Strategy("ddp", bucket_mb=0.01), Strategy("ddp", gradient_as_bucket_view=False),
              Strategy("fsdp", reshard=True), Strategy("fsdp", reshard=False)]


def _full(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor  # FSDP2 shards (DTensor)


def _grads_and_params(step: ModelStep) -> dict:
    params = step.optimizer.param_groups[0]["params"]
    step.run("forward-backward")
    grads = [_full(p.grad).detach().clone() for p in params]
    step.run("train-step")  # zero_grad, forward, backward, one AdamW step
    return {"grads": grads, "params": [_full(p).detach().clone() for p in params]}


def _rank(out: Path) -> None:
    with joined_world("cpu", timeout_s=60) as world:
        for index, strategy in enumerate(STRATEGIES):
            result = _grads_and_params(DistModelStep(CONFIG, world.device, strategy, world))
            if world.is_main:
                torch.save(result, out / f"{index}.pt")


def _single_process_on_both_batches() -> dict:
    torch.manual_seed(WEIGHT_SEED)
    step = ModelStep(CONFIG, torch.device("cpu"), seed=0)  # rank 0's batch
    other = ModelStep(CONFIG, torch.device("cpu"), seed=1)  # rank 1's batch
    step.inputs = torch.cat([step.inputs, other.inputs])
    step.targets = torch.cat([step.targets, other.targets])
    return _grads_and_params(step)


@pytest.fixture(scope="module")
def distributed_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("dp")
    spawn_world(_rank, 2, out)
    return [torch.load(out / f"{i}.pt") for i in range(len(STRATEGIES))]


@pytest.mark.parametrize("index", range(len(STRATEGIES)), ids=["ddp-small-buckets", "ddp-no-bucket-view", "fsdp-reshard", "fsdp-keep-gathered"])
def test_two_ranks_match_one_process_on_the_concatenated_batch(distributed_results, index):
    reference = _single_process_on_both_batches()
    result = distributed_results[index]
    # Gradients first: one AdamW step is nearly blind to a gradient's scale (m / sqrt(v)).
    for name in ("grads", "params"):
        assert len(result[name]) == len(reference[name])
        for got, want in zip(result[name], reference[name]):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_ranks_draw_different_batches():
    # Otherwise the comparison above would not tell averaging from a copy of one rank's gradient.
    assert not torch.equal(ModelStep(CONFIG, torch.device("cpu"), seed=0).inputs,
                           ModelStep(CONFIG, torch.device("cpu"), seed=1).inputs)

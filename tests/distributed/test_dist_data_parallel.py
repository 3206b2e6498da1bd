"""An N-process DDP or FSDP2 step (N = 2 and 4 Gloo ranks) equals one process stepping on all the
ranks' batches together, also with the fused loss and activation checkpointing under FSDP2, and
with lmperf's AdamW updating FSDP2's DTensor shards against PyTorch's AdamW in the one process."""

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from lmperf.model.step import ModelStep, StepConfig
from lmperf.distributed.launch import joined_world
from lmperf.distributed.strategies import WEIGHT_SEED, DistModelStep, Strategy
from world_spawn import spawn_world

CONFIG = StepConfig("tiny", 32, "train-step", batch=2)
FSDP_OPTIONS = replace(CONFIG, attention="sdpa", loss="fused")
CASES = [
    (Strategy("ddp", bucket_mb=0.01), CONFIG),
    (Strategy("ddp", gradient_as_bucket_view=False), CONFIG),
    (Strategy("fsdp", reshard=True), CONFIG),
    (Strategy("fsdp", reshard=False), CONFIG),
    (Strategy("fsdp", reshard=True), replace(FSDP_OPTIONS, checkpoint="selective")),
    (Strategy("fsdp", reshard=False), replace(FSDP_OPTIONS, checkpoint="full")),
    (Strategy("fsdp", reshard=True), replace(CONFIG, optimizer="lmperf")),
]
CASE_IDS = [
    "ddp-small-buckets",
    "ddp-no-bucket-view",
    "fsdp-reshard",
    "fsdp-keep-gathered",
    "fsdp-fused-loss-selective-checkpoint",
    "fsdp-fused-loss-full-checkpoint",
    "fsdp-lmperf-adamw-on-shards",
]


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
        for index, (strategy, config) in enumerate(CASES):
            result = _grads_and_params(DistModelStep(config, world.device, strategy, world))
            if world.is_main:
                torch.save(result, out / f"{index}.pt")


def _single_process_on_all_batches(nproc: int, config: StepConfig = CONFIG) -> dict:
    """The plain eager model (no fused loss, no checkpointing, PyTorch's AdamW) on every rank's batch."""
    torch.manual_seed(WEIGHT_SEED)
    plain = replace(config, loss="eager", checkpoint="none", optimizer="torch")
    ranks = [ModelStep(plain, torch.device("cpu"), seed=rank) for rank in range(nproc)]  # rank r's batch
    step = ranks[0]
    step.inputs = torch.cat([r.inputs for r in ranks])
    step.targets = torch.cat([r.targets for r in ranks])
    return _grads_and_params(step)


@pytest.fixture(scope="module", params=[2, 4], ids=["2-ranks", "4-ranks"])
def distributed_results(request, tmp_path_factory):
    nproc = request.param
    out = tmp_path_factory.mktemp(f"dp{nproc}")
    spawn_world(_rank, nproc, out)
    return nproc, [torch.load(out / f"{i}.pt") for i in range(len(CASES))]


@pytest.mark.parametrize("index", range(len(CASES)), ids=CASE_IDS)
def test_ranks_match_one_process_on_the_concatenated_batch(distributed_results, index):
    nproc, results = distributed_results
    reference = _single_process_on_all_batches(nproc, CASES[index][1])
    result = results[index]
    # Gradients first: one AdamW step is nearly blind to a gradient's scale (m / sqrt(v)).
    for name in ("grads", "params"):
        assert len(result[name]) == len(reference[name])
        for got, want in zip(result[name], reference[name]):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_ranks_draw_different_batches():
    # Otherwise the comparison above would not tell averaging from a copy of one rank's gradient.
    assert not torch.equal(
        ModelStep(CONFIG, torch.device("cpu"), seed=0).inputs, ModelStep(CONFIG, torch.device("cpu"), seed=1).inputs
    )

"""Data-parallel strategies, each PyTorch's own engine: DDP and FSDP2 (`fully_shard`).

`DistModelStep` is bench's ModelStep with the model wrapped for a strategy: every rank builds the
same initial weights (one seed), draws its own batch (seed = rank, so rank 0 draws the batch a
single-GPU ModelStep draws), and every phase ends with the guard's status check.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch
import torch.nn as nn

from lmperf.model.module_tree import repeated_blocks
from lmperf.model.step import ModelStep, StepConfig, autocast_dtype
from lmperf.distributed.guard import on_all_ranks
from lmperf.distributed.launch import World
from lmperf.analysis.sharding import DataParallel
from lmperf.errors import UsageError

STRATEGIES = ("none", "ddp", "fsdp")
DEFAULT_BUCKET_MB = 25.0  # DDP's own default
WEIGHT_SEED = 0


@dataclass(frozen=True)
class Strategy:
    """`bucket_mb` and `gradient_as_bucket_view` apply to DDP, `reshard` to FSDP2."""

    name: str
    bucket_mb: float | None = None
    reshard: bool | None = None
    gradient_as_bucket_view: bool = True

    def validate(self, world_size: int) -> "Strategy":
        if self.name not in STRATEGIES:
            raise UsageError(f"unknown strategy {self.name!r}; choose from {', '.join(STRATEGIES)}")
        if self.name == "none" and world_size != 1:
            raise UsageError("strategy 'none' (one plain process) needs --nproc 1")
        if self.bucket_mb is not None and self.bucket_mb <= 0:
            raise UsageError(f"--bucket-mb must be positive, got {self.bucket_mb}")
        check_available(self.name)
        return self

    def layout(self, world_size: int) -> DataParallel:
        """How this strategy holds the model on `world_size` ranks, as the memory model reads it."""
        return DataParallel(
            self.name, world_size, reshard=self.reshard is not False, bucket_view=self.gradient_as_bucket_view
        )

    def key(self) -> dict:
        """The row fields that tell strategies apart (None where an option does not apply)."""
        return {
            "strategy": self.name,
            "bucket_mb": (self.bucket_mb or DEFAULT_BUCKET_MB) if self.name == "ddp" else None,
            "reshard": (True if self.reshard is None else self.reshard) if self.name == "fsdp" else None,
        }

    def wrap(self, model: nn.Module, world: World, compute_dtype: torch.dtype | None = None) -> nn.Module:
        """The module to call: DDP's wrapper, or `model` itself sharded in place by FSDP2.

        `compute_dtype` (bf16 steps): FSDP2 gathers parameters in that dtype and reduces
        gradients in fp32 (MixedPrecisionPolicy), half the all-gather traffic and no autocast
        copies of the gathered weights."""
        key = self.key()
        if self.name == "ddp":
            from torch.nn.parallel import DistributedDataParallel

            device_ids = [world.device.index] if world.device.type == "cuda" else None
            # lmperf's model's only buffers are the rotary tables, equal on every rank (as a user
            # module's, built from one seed): re-broadcasting them each forward (DDP's default)
            # would add ~100 MB of traffic per step to xl.
            # Newer torch names the option forward_sync_buffers; older ones broadcast_buffers.
            options = inspect.signature(DistributedDataParallel).parameters
            no_sync = "forward_sync_buffers" if "forward_sync_buffers" in options else "broadcast_buffers"
            return DistributedDataParallel(
                model,
                device_ids=device_ids,
                bucket_cap_mb=key["bucket_mb"],
                gradient_as_bucket_view=self.gradient_as_bucket_view,
                **{no_sync: False},
            )
        if self.name == "fsdp":
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

            policy = MixedPrecisionPolicy(
                param_dtype=compute_dtype, reduce_dtype=torch.float32 if compute_dtype else None
            )
            # One FSDP unit per repeated block (lmperf.model.module_tree: lmperf's blocks, a user
            # module's largest ModuleList): its all-gather and reduce-scatter overlap the next
            # block. The root (embedding, final norm, LM head) is the first thing the backward
            # needs, so it stays gathered after the forward, as fully_shard's documentation advises.
            blocks = repeated_blocks(model)
            for block in blocks:
                fully_shard(block, reshard_after_forward=key["reshard"], mp_policy=policy)
            fully_shard(model, reshard_after_forward=False, mp_policy=policy)
            _prefetch_neighbours(blocks)
        return model


def _prefetch_neighbours(blocks: list[nn.Module]) -> None:
    """Each block's all-gather is issued when the block before it (forward) or after it
    (backward) starts, so it runs under that block's compute instead of in front of its own."""
    for earlier, later in zip(blocks, blocks[1:]):
        earlier.set_modules_to_forward_prefetch([later])
        later.set_modules_to_backward_prefetch([earlier])


def check_available(name: str) -> None:
    if name == "fsdp":
        try:
            from torch.distributed.fsdp import fully_shard  # noqa: F401
        except ImportError:
            raise UsageError(
                f"strategy 'fsdp' needs torch.distributed.fsdp.fully_shard (FSDP2), not in torch {torch.__version__}"
            ) from None


class DistModelStep(ModelStep):
    def __init__(self, config: StepConfig, device: torch.device, strategy: Strategy, world: World):
        self.world = world
        torch.manual_seed(WEIGHT_SEED)  # FSDP2 keeps each rank's own shard: the weights must agree
        on_all_ranks(lambda: ModelStep.__init__(self, config, device, seed=world.rank), world)
        on_all_ranks(lambda: self._wrap(strategy), world)

    def _wrap(self, strategy: Strategy) -> None:
        # The optimizer is rebuilt over the wrapped parameters (FSDP2 replaces them by DTensors);
        # AdamW allocates its state lazily, so the first one cost nothing.
        # With --compile the blocks were compiled by ModelStep before wrapping.
        self.model = strategy.wrap(self.model, self.world, autocast_dtype(self.config.precision))
        self.optimizer = self.build_optimizer()

    def run(self, mode: str) -> None:
        on_all_ranks(lambda: ModelStep.run(self, mode), self.world)

"""Where a step's memory goes, for any model (lmperf's or the user's module): parameters,
gradients, optimizer state and activations, and on CUDA every byte alive at a training step's peak.

From the tensors themselves, on any device:
- parameters and buffers: each tensor's elements × element size (a tied matrix once);
- gradients: the same for every parameter's .grad after a backward;
- optimizer state: every tensor in the optimizer's state after a step (AdamW: two moments per
  parameter and a one-element step count per parameter tensor);
- activations: what one forward keeps for the backward, each storage once: the tensors autograd
  saves (torch.autograd.graph.saved_tensors_hooks), and under activation checkpointing the
  inputs each checkpointed block keeps instead (torch.utils.checkpoint holds them outside that
  mechanism); the parameters themselves are not counted again.

On CUDA, one more training step runs under the caching allocator's history (the .pickle that
https://pytorch.org/memory_viz opens) and the allocations are replayed to the step's peak. What
was allocated before the step is parameters, optimizer state and the rest (buffers, the batch,
library workspaces); of the blocks the step allocated and still holds at the peak, gradients are
the parameters' .grad blocks, activations are those the forward allocated, temporaries those the
backward or the optimizer allocated that are not gradients. The parts add up to the peak.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from typing import Iterable

import torch

from lmperf.analysis.tiles import round_up
from lmperf.model.module_tree import repeated_blocks
from lmperf.model.step import ModelStep
from lmperf.profile import snapshot as snap

ALLOC, FREED = snap.ALLOC, snap.FREED


def tensor_bytes(tensors: Iterable[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclass(frozen=True)
class TensorParts:
    """Bytes of each part, from the tensors' own sizes."""

    parameters: int
    buffers: int
    gradients: int
    optimizer_state: int
    activations: int


def tensor_parts(step: ModelStep) -> TensorParts:
    """The parts of `step`'s memory: one forward-backward for the gradients, one train step for
    the optimizer's state, one forward for what it saves (its gradients released after)."""
    model = step.model
    step.run("forward-backward")
    gradients = tensor_bytes(p.grad for p in model.parameters() if p.grad is not None)
    step.run("train-step")
    state = tensor_bytes(optimizer_tensors(step.optimizer))
    step.release_grads()
    return TensorParts(
        tensor_bytes(model.parameters()), tensor_bytes(model.buffers()), gradients, state, saved_by_forward(step)
    )


def saved_by_forward(step: ModelStep) -> int:
    """Bytes of the storages one forward keeps for the backward (module docstring)."""
    params = {p.untyped_storage().data_ptr() for p in step.model.parameters()}
    kept: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            kept[storage.data_ptr()] = storage.nbytes()
        return tensor

    with _checkpointed_inputs(step, keep), torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        loss = step.loss()
    del loss
    return sum(kept.values())


@contextlib.contextmanager
def _checkpointed_inputs(step: ModelStep, keep):
    """While open, the tensor inputs of each checkpointed block go to `keep`."""

    def keep_inputs(module, args):
        for arg in args:
            if isinstance(arg, torch.Tensor):
                keep(arg)

    blocks = repeated_blocks(step.model) if step.config.checkpoint != "none" else []
    handles = [block.register_forward_pre_hook(keep_inputs) for block in blocks]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@dataclass(frozen=True)
class PeakParts:
    """Bytes alive at the peak of one CUDA training step, by part (module docstring)."""

    parameters: int
    optimizer_state: int
    other_resident: int
    gradients: int
    activations: int
    temporaries: int

    @property
    def peak(self) -> int:
        return sum(asdict(self).values())


@dataclass
class _Replay:
    peak_index: int = -1
    live: dict = None  # address -> (size, allocating event index), blocks the trace allocated
    freed_before: int = 0  # bytes allocated before the trace and freed by the peak


BLOCK = 512  # the caching allocator's granularity: max_memory_allocated counts whole blocks


def _block_bytes(size: int) -> int:
    """The bytes the allocator counts for a request of `size`: whole 512-byte blocks, one at least."""
    return max(BLOCK, round_up(size, BLOCK))


def _replay_to_peak(events: list[dict], start: int) -> _Replay:
    """The trace replayed to its highest allocation, in the allocator's own block sizes (a trace
    event may carry the size asked for, such as 4 bytes of a one-element optimizer step)."""
    allocated, peak, replay = start, start, _Replay()
    for index, event in enumerate(events):
        size = _block_bytes(event["size"])
        allocated += size if event["action"] == ALLOC else -size if event["action"] == FREED else 0
        if allocated > peak:
            peak, replay.peak_index = allocated, index
    replay.live = {}
    for index, event in enumerate(events[: replay.peak_index + 1]):
        if event["action"] == ALLOC:
            replay.live[event["addr"]] = (_block_bytes(event["size"]), index)
        elif event["action"] == FREED and replay.live.pop(event["addr"], None) is None:
            replay.freed_before += _block_bytes(event["size"])
    return replay


def peak_parts(events: list[dict], backward_starts: int, start: int, step: ModelStep) -> PeakParts:
    """The peak of one recorded training step (allocator `events` from its first, the index where
    the backward starts, bytes allocated before it), split into parts; `step` still holds the
    step's gradients and optimizer state."""
    replay = _replay_to_peak(events, start)
    live = replay.live
    gradients = sum(size for size, _ in gradient_blocks(events, replay, backward_starts, step).values())
    activations = sum(size for size, index in live.values() if index < backward_starts)
    temporaries = sum(size for size, _ in live.values()) - gradients - activations
    parameters = tensor_bytes(step.model.parameters())
    state = tensor_bytes(optimizer_tensors(step.optimizer))
    return PeakParts(
        parameters, state, start - replay.freed_before - parameters - state, gradients, activations, temporaries
    )


def gradient_blocks(events: list[dict], replay: _Replay, backward_starts: int, step: ModelStep) -> dict:
    """The blocks alive at the peak that hold a parameter's gradient after the step: allocated
    in the backward at the address a .grad has now, and never freed after the peak. A temporary
    alive at the peak and freed later can leave its address to a gradient allocated after it."""
    grads = {p.grad.data_ptr() for p in step.model.parameters() if p.grad is not None}
    freed_later = {e["addr"] for e in events[replay.peak_index + 1 :] if e["action"] == FREED}
    return {
        addr: block
        for addr, block in replay.live.items()
        if addr in grads and block[1] >= backward_starts and addr not in freed_later
    }


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [v for per_param in optimizer.state.values() for v in per_param.values() if isinstance(v, torch.Tensor)]

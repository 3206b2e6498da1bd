"""`lmperf memory` as a library call: measured peaks beside the analytic memory model, and
memory snapshots of a forward pass and a training step (CUDA only).

For every context × precision one ModelStep is built and measured in this order:
- parameters: allocated right after building (the batch and rotary tables are a few MB);
- forward, after one unmeasured forward pass: peak of one forward pass (autograd on, as in training), and what it leaves saved for
  the backward (allocated while the loss is alive, minus before);
- train step: the first step creates AdamW's state (measured as the allocation it leaves);
  the peak is taken on the second, the steady state.
An out-of-memory configuration becomes rows with status "oom". Every row is appended at once.

A user's module (`--module`) has no analytic model: each configuration gets a breakdown row
instead (lmperf.profile.breakdown), on a CPU from the tensors' own sizes, on CUDA also split at a
training step's peak, with that step's snapshot.
"""

from __future__ import annotations

import gc
import pickle
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

import torch

from lmperf import regions
from lmperf.analysis.memory import memory_model
from lmperf.model.choice import ModelChoice
from lmperf.model.step import ModelStep, StepConfig
from lmperf.errors import UsageError
from lmperf.profile import snapshot as snap
from lmperf.profile.breakdown import peak_parts, tensor_parts
from lmperf.profile.plots import plot_memory_timeline
from lmperf.report.environment import environment
from lmperf.report.rows import failure_row
from lmperf.report.rundir import RunDir

GB = 1e9


def require_cuda() -> None:
    if not torch.cuda.is_available():
        raise UsageError("lmperf memory needs a CUDA GPU, and torch sees none on this machine")


@dataclass(frozen=True)
class MemorySettings:
    """What `lmperf memory` measures: one model (a preset, or `model`'s Hugging Face config,
    with `model`'s explicit fields laid over either) at every context × precision."""

    preset: str | None = None  # default: small, unless `model` names a Hugging Face config
    contexts: tuple[int, ...] = (128, 256, 512)
    precisions: tuple[str, ...] = ("fp32", "bf16")
    batch: int = 4
    attention: str = "naive"
    compile: str = "eager"
    snapshot_context: int | None = None  # default: the longest context, first precision
    model: ModelChoice = field(default_factory=ModelChoice)
    checkpoints: tuple[str, ...] = ("none",)

    @property
    def user_module(self) -> bool:
        return bool(self.model.module or self.model.user_model)

    def configs(self) -> list[StepConfig]:
        base = self.model.base(self.preset, "small")
        if base.module and self.attention != "naive":
            raise UsageError("--attention picks lmperf's attention implementations; a --module model brings its own")
        return [
            replace(
                base,
                seq_len=ctx,
                mode="forward",
                precision=precision,
                compile=self.compile,
                attention=base.attention if base.module else self.attention,
                batch=self.batch,
                checkpoint=checkpoint,
            ).validate()
            for ctx in self.contexts
            for precision in self.precisions
            for checkpoint in self.checkpoints
        ]


def _allocated() -> int:
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


def _peak_of(run: Callable[[], object]) -> int:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    run()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()


def _saved_by_forward(step: ModelStep) -> int:
    before = _allocated()
    loss = step.loss()
    saved = _allocated() - before
    del loss
    return saved


def measure(step: ModelStep) -> dict[str, int]:
    """Measured bytes of one configuration (see the module docstring for the order); a train step
    that runs out of memory leaves its keys out, the forward figures stay."""
    measured = {"parameters": _allocated()}
    step.run("forward")  # the first forward also allocates the cuBLAS workspace: keep it out
    measured["saved_by_forward"] = _saved_by_forward(step)
    measured["peak_forward"] = _peak_of(lambda: step.run("forward"))
    try:
        before = _allocated()
        step.run("train-step")
        step.release_grads()
        measured["optimizer_state"] = _allocated() - before
        measured["peak_train-step"] = _peak_of(lambda: step.run("train-step"))
    except torch.OutOfMemoryError:
        pass
    step.release_grads()
    return measured


def peak_rows(config: StepConfig, measured: dict[str, int], env: dict[str, str]) -> list[dict]:
    """One row per mode (forward, train-step): measured peak beside the analytic one; a mode
    with no measured peak ran out of memory. `env`: where it was measured (environment())."""
    model = memory_model(
        config.model_config(), config.batch, config.seq_len, config.precision, checkpoint=config.checkpoint
    )
    rows = []
    for mode in ("forward", "train-step"):
        peak = measured.get(f"peak_{mode}")
        row = {
            **config.to_dict(),
            "mode": mode,
            "kind": "peak",
            "status": "ok" if peak else "oom",
            "error": "" if peak else "CUDA out of memory",
            "analytic": model.to_dict(),
            "analytic_peak_gb": model.peak(mode) / GB,
            "measured": {k: v / GB for k, v in measured.items()},
            "env": env,
        }
        if peak:
            row.update(measured_peak_gb=peak / GB, difference_gb=peak / GB - model.peak(mode) / GB)
        rows.append(row)
    return rows


def _trace_length() -> int:
    return len(torch.cuda.memory._snapshot()["device_traces"][0])


def breakdown_row(step: ModelStep, run_dir: RunDir) -> dict:
    """A user's module's memory by part (lmperf.profile.breakdown); on CUDA also at the peak of
    one training step, whose snapshot is written beside the rows."""
    config = step.config
    row = {
        **config.to_dict(),
        "kind": "breakdown",
        "status": "ok",
        "env": environment(step.device.type),
        "parts": asdict(tensor_parts(step)),
    }
    if step.device.type == "cuda":
        name = f"snapshot-train-step-{config.seq_len}-{config.precision}-{config.checkpoint}.pickle"
        torch.cuda.reset_peak_memory_stats()
        events, marks, start = _record(lambda: _train_step_with_marks(step), run_dir.path / name)
        peak = peak_parts(events, marks[regions.BACKWARD], start, step)
        step.release_grads()
        row.update(
            at_peak=asdict(peak),
            peak=peak.peak,
            max_memory_allocated=torch.cuda.max_memory_allocated(),
            snapshots=[name],
        )
    return row


def _train_step_with_marks(step: ModelStep) -> dict[str, int]:
    """One train step phase by phase, noting the trace index where each phase starts."""
    step.optimizer.zero_grad(set_to_none=True)
    marks = {regions.FORWARD: _trace_length()}
    loss = step.loss()
    marks[regions.BACKWARD] = _trace_length()
    loss.backward()
    marks[regions.OPTIMIZER] = _trace_length()
    step.optimizer.step()
    torch.cuda.synchronize()
    return marks


def _record(run: Callable[[], dict[str, int] | None], path: Path) -> tuple[list[dict], dict[str, int], int]:
    """Run under the allocator's history, dump the .pickle; (events, phase starts, bytes at start)
    with the events and phase starts counted from the run's first event."""
    start = _allocated()
    first = 0
    torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python")
    try:
        first = _trace_length()  # a history switched on again may still hold older events
        marks = run() or {regions.FORWARD: first}
        snapshot = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    path.write_bytes(pickle.dumps(snapshot))
    return snap.trace_events(snapshot)[first:], {k: v - first for k, v in marks.items()}, start


def residual_stream_tensor(step: ModelStep) -> dict:
    """Size and dtype of one block's output (the residual stream) in a real forward pass."""
    seen = {}
    hook = step.model.blocks[0].register_forward_hook(
        lambda module, inputs, output: seen.update(
            shape=list(output.shape), dtype=str(output.dtype), mb=output.numel() * output.element_size() / 1e6
        )
    )
    try:
        step.run("forward")
    finally:
        hook.remove()
    return seen


def snapshot_row(step: ModelStep, run_dir: RunDir, top: int = 12) -> dict:
    """Snapshots of a forward pass and a train step, the largest allocations and the timeline."""
    config = step.config
    _record(lambda: step.run("forward"), run_dir.path / "snapshot-forward.pickle")
    events, marks, start = _record(lambda: _train_step_with_marks(step), run_dir.path / "snapshot-train-step.pickle")
    step.release_grads()
    series = snap.allocated_over_time(events, start)
    title = f"{config.preset} ctx {config.seq_len} batch {config.batch} {config.precision}: one training step"
    plot_memory_timeline([b / GB for b in series], marks, title, run_dir.path / "memory_timeline.png")
    return {
        **config.to_dict(),
        "kind": "snapshot",
        "status": "ok",
        "env": environment("cuda"),
        "snapshots": ["snapshot-forward.pickle", "snapshot-train-step.pickle"],
        "timeline": "memory_timeline.png",
        "phase_starts": marks,
        "largest": [asdict(a) for a in snap.largest_allocations(events, marks, top)],
        "residual_stream": residual_stream_tensor(step),
    }


def _release() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _module_rows(config: StepConfig, run_dir: RunDir) -> list[dict]:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    step = None
    try:
        step = ModelStep(config, device)
        return [breakdown_row(step, run_dir)]
    except torch.OutOfMemoryError as error:
        return [failure_row({**config.to_dict(), "kind": "breakdown", "env": environment(device.type)}, error)]
    finally:
        step = None
        _release()


def _measure_config(config: StepConfig, settings: MemorySettings, run_dir: RunDir) -> list[dict]:
    if config.module:
        return _module_rows(config, run_dir)
    try:
        step = ModelStep(config, torch.device("cuda"))
        measured = measure(step)
    except torch.OutOfMemoryError as error:
        step = None
        _release()
        return [failure_row(row, error) for row in peak_rows(config, {}, environment("cuda"))]
    rows = peak_rows(config, measured, environment("cuda"))
    wanted = settings.snapshot_context or max(settings.contexts)
    if config.seq_len == wanted and config.precision == settings.precisions[0]:
        try:
            rows.append(snapshot_row(step, run_dir))
        except torch.OutOfMemoryError as error:
            rows.append(failure_row({**config.to_dict(), "kind": "snapshot"}, error))
    step = None
    _release()
    return rows


def run_memory(
    settings: MemorySettings, run_dir: RunDir, on_row: Callable[[dict], None] = lambda row: None
) -> list[dict]:
    """Measure every context × precision of `settings` into `run_dir`, rows appended at once."""
    if not settings.user_module:
        require_cuda()
    for config in settings.configs():
        for row in _measure_config(config, settings, run_dir):
            run_dir.append(row)
            on_row(row)
    return run_dir.rows()

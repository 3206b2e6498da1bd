"""`lmperf profile` as a library call: profile the modes of one configuration into a run directory.

Each mode is warmed up, then `steps` steps run under torch.profiler; one row per mode (kernel,
region and category tables, matmul share, trace file, environment) is appended to
results.jsonl at once, and the Markdown report and the PNG are rendered from that file. A mode
that runs out of memory becomes a row with status "oom".
"""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import torch

from lmperf import regions
from lmperf.analysis.flops import region_flops
from lmperf.analysis.module_flops import counted_flops
from lmperf.errors import UsageError
from lmperf.model.choice import ModelChoice
from lmperf.model.module_tree import (
    ROOT,
    collapse,
    is_module_region,
    module_regions,
    path_of_region,
    repeated_containers,
)
from lmperf.model.step import ModelStep, StepConfig
from lmperf.profile import tables
from lmperf.profile.trace import KernelCall, kernel_calls, profile_steps
from lmperf.profile.trace_file import read_trace
from lmperf.report.environment import environment
from lmperf.report.rows import failure_row
from lmperf.report.rundir import RunDir
from lmperf.run.options import SweepOptions, grid_configs


GPU_TIME, CPU_TIME = "GPU kernel time", "CPU op self time"


@dataclass(frozen=True)
class ProfileSettings:
    warmup: int = 3
    steps: int = 3
    device: str = "cpu"

    def validate(self) -> "ProfileSettings":
        if self.warmup < 0 or self.steps <= 0:
            raise UsageError(f"need --warmup >= 0 and --steps > 0, got {self.warmup} and {self.steps}")
        return self


def profile_config(
    model: ModelChoice,
    preset: str | None,
    context: int | None,
    modes: Sequence[str],
    precision: str,
    compile: str,
    attention: str,
    batch: int,
    on_gpu: bool,
) -> tuple[StepConfig, list[str]]:
    """The one configuration `lmperf profile` runs, and its modes: bench's grid with one value on
    every axis but the mode (its defaults: tiny at 128 on a CPU, small at 512 on a GPU)."""
    defaults = SweepOptions().resolved(on_gpu)
    presets = [preset] if preset else None if model.names_own_model else [defaults.presets]
    configs = grid_configs(
        model,
        presets,
        [int(defaults.contexts) if context is None else context],
        list(modes),
        [precision],
        [compile],
        [attention],
        batch,
        ["fp32"],
        ["eager"],
        ["none"],
    )
    return configs[0], [c.mode for c in configs]


def _base_row(config: StepConfig, settings: ProfileSettings, status: str) -> dict:
    return {
        **config.to_dict(),
        "status": status,
        "warmup": settings.warmup,
        "steps": settings.steps,
        "env": environment(settings.device),
    }


def _module_regions(row: dict, calls: list[KernelCall]) -> tuple[list[KernelCall], dict[str, float], list[str]]:
    """A user's module's calls with their regions named by module path, repeated blocks collapsed
    (`layers.*.attn`); its FLOPs per region as counted; the regions' order (the module's)."""
    containers = row["repeated_containers"]

    def label(region: str) -> str:
        return collapse(path_of_region(region), containers) or ROOT if is_module_region(region) else region

    flops = dict(row["region_flops"])
    return [replace(c, region=label(c.region)) for c in calls], flops, [*flops, regions.LOSS, regions.OPTIMIZER]


def analyse(row: dict, calls: list[KernelCall], device_activities: int | None) -> dict:
    """Fill `row` (configuration, mode, steps) with the tables computed from `calls`."""
    config = StepConfig.from_dict(row)
    steps = row["steps"]
    if config.module:
        calls, flops, order = _module_regions(row, calls)
    else:
        flops = region_flops(config.model_config(), config.batch, config.seq_len, config.mode)
        order = tables.REGION_ORDER
    row.update(
        step_ms=sum(call.duration_us for call in calls) / steps / 1e3,
        # A self-check: every device activity in the trace attributed exactly once.
        device_activities=device_activities,
        attributed=len(calls),
        matmul_share=tables.matmul_share(calls),
        kernels=tables.kernel_rows(calls, steps),
        regions=tables.region_rows(calls, steps, flops, order),
        categories=tables.category_rows(calls, steps),
    )
    return row


def regions_of(step: ModelStep) -> contextlib.AbstractContextManager:
    """The step's named regions: a user's module gets one per module while this is open (from
    before the warm-up, so that a compiled module compiles with the hooks it is profiled with);
    lmperf's model has its own."""
    return module_regions(step.model) if step.config.module else contextlib.nullcontext()


def _module_fields(step: ModelStep, mode: str) -> dict:
    """What a user's module's row needs to name and weigh its regions (also on --rebuild)."""
    if not step.config.module:
        return {}
    containers = repeated_containers(step.model)
    counted = counted_flops(step.config.module, step.config.seq_len)
    compiled = step.config.module.blocks if step.config.compile == "compile" else ""
    flops = counted.by_region(step.config.batch, mode, containers, compiled)
    # (region, FLOPs) pairs: a list keeps the module order in rows written with sorted keys
    return {
        "repeated_containers": containers,
        "region_flops": list(flops.items()),
        "flop_count": counted.method(step.config.batch),
    }


def profile_mode(step: ModelStep, mode: str, settings: ProfileSettings, run_dir: RunDir) -> dict:
    """Profile `mode` on an existing ModelStep; the row, with the trace written beside it."""
    with regions_of(step):
        for _ in range(settings.warmup):
            step.run(mode)
        profiler = profile_steps(lambda: step.run(mode), settings.steps, step.device)
    step.release_grads()
    on_gpu = step.device.type == "cuda"
    row = _base_row(replace(step.config, mode=mode), settings, "ok")
    row.update(trace=f"trace-{mode}.json.gz", time_unit=GPU_TIME if on_gpu else CPU_TIME, **_module_fields(step, mode))
    profiler.export_chrome_trace(str(run_dir.path / row["trace"]))
    if on_gpu:
        # Attribute from the exported trace, as --rebuild does: on torch 2.11 the in-memory event
        # list lost 57 of 628 kernels of a tiny training step on an H200, while the trace file
        # accounted for all but 1 of 11,108 activities of the 2.7B profiles on an H100.
        trace = read_trace(run_dir.path / row["trace"])
        return analyse(row, kernel_calls(trace.events, True), trace.device_activities)
    return analyse(row, kernel_calls(profiler.events(), False), None)


def rebuild_from_traces(run_path: Path) -> list[dict]:
    """Recompute every profiled row of a run from its trace files with the current attribution
    code; the rows as first recorded are kept in results-before-rebuild.jsonl."""
    run_dir = RunDir.resume(run_path, "profile")
    rows = run_dir.rows()
    first_recorded = run_dir.path / "results-before-rebuild.jsonl"
    if first_recorded.exists():
        run_dir.results.unlink()
    else:
        run_dir.results.rename(first_recorded)
    for row in rows:
        if row["status"] == "ok":
            trace = read_trace(run_dir.path / row["trace"])
            on_gpu = row["time_unit"] == GPU_TIME
            analyse(row, kernel_calls(trace.events, on_gpu), trace.device_activities if on_gpu else None)
            row["rebuilt_from_trace"] = True
        run_dir.append(row)
    return run_dir.rows()


def _release() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def run_profile(
    config: StepConfig,
    modes: Sequence[str],
    settings: ProfileSettings,
    run_dir: RunDir,
    on_row: Callable[[dict], None] = lambda row: None,
) -> list[dict]:
    """Profile each of `modes` of `config` (its own mode is ignored); rows go to `run_dir`."""
    settings.validate()
    configs = [replace(config, mode=mode).validate() for mode in modes]
    step = None
    for mode_config in configs:
        try:
            step = step or ModelStep(mode_config, torch.device(settings.device))
            row = profile_mode(step, mode_config.mode, settings, run_dir)
        except torch.OutOfMemoryError as error:
            row = failure_row(_base_row(mode_config, settings, "ok"), error)
            step = None  # drop every reference before emptying the cache
            _release()
        run_dir.append(row)
        on_row(row)
    step = None
    _release()
    return run_dir.rows()

"""A grid of step configurations run one after another into a run directory.

Configurations that share everything but the mode share one ModelStep (so a compiled model is
compiled once). A configuration that runs out of memory becomes a row with status "oom", its
memory is released and the sweep goes on; every finished row is on disk before the next starts.
"""

from __future__ import annotations

import gc
import itertools
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator

import torch

from lmperf.analysis.flops import MODES, step_flops
from lmperf.analysis.memory import MEMORY_PRECISIONS, memory_model
from lmperf.analysis.module_flops import CAUSAL_ATTENTION, counted_flops, transformer_flops
from lmperf.analysis.peaks import peak_tflops
from lmperf.model.step import ModelStep, StepConfig
from lmperf.run.timing import do_bench_ms, load_average, time_steps
from lmperf.errors import UsageError
from lmperf.model import parameter_count
from lmperf.report.environment import environment
from lmperf.report.rows import ResultRow, failure_row
from lmperf.report.rundir import RunDir, key_of

KEY_FIELDS = (
    "preset",
    "model",
    "seq_len",
    "mode",
    "precision",
    "compile",
    "attention",
    "batch",
    "param_dtype",
    "loss",
    "checkpoint",
    "module",
    "optimizer",
)
ANALYTIC = "analytic (lmperf.analysis.flops)"


@dataclass
class BenchRow(ResultRow):
    preset: str
    seq_len: int
    mode: str
    precision: str
    compile: str
    attention: str
    batch: int
    model: dict  # the full shape (ModelConfig's fields but attention)
    approximations: str
    param_dtype: str
    loss: str
    checkpoint: str
    warmup: int
    steps: int
    params: int
    matmul_flops: float
    module: dict | None = None  # the user's module: factory, arguments, source hash, shape read
    optimizer: str = "torch"  # whose AdamW (lmperf.model.step.OPTIMIZERS)
    flop_count: str = ANALYTIC  # how matmul_flops were counted
    causal_attention: str = CAUSAL_ATTENTION  # how attention's masked half is counted in them
    # a user's module that looks like a Transformer: 6·N + attention (lmperf.analysis.module_flops)
    transformer_flops: float | None = None
    flops_over_transformer: float | None = None
    cold_ms: float | None = None
    mean_ms: float | None = None
    std_ms: float | None = None
    spread: float | None = None  # std_ms / mean_ms
    noisy: bool | None = None  # spread above timing.NOISY_SPREAD
    load_start: float | None = None  # one-minute load average before the first step and after the last
    load_end: float | None = None
    median_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    warmup_ms: list[float] = field(default_factory=list)
    # every measured step in order: one slow step shows here, not only as a wider std
    step_ms: list[float] = field(default_factory=list)
    tokens_per_s: float | None = None
    tflops: float | None = None
    mfu: float | None = None
    peak_memory_gb: float | None = None
    # The caching allocator's peak reservation and how often it freed its cache to retry an
    # allocation during the row: near the card's capacity a step slows down by these retries.
    peak_reserved_gb: float | None = None
    alloc_retries: int | None = None
    # triton.testing.do_bench's procedure over the whole step (timing.do_bench_ms), when asked
    leaderboard_ms: float | None = None
    leaderboard_calls: int | None = None
    leaderboard_warmup_ms: float | None = None
    leaderboard_rep_ms: float | None = None


@dataclass(frozen=True)
class SweepSettings:
    warmup: int = 5
    steps: int = 10
    device: str = "cpu"
    peak_tflops: float | None = None
    # do_bench's warm-up and repetition budgets in ms (the leaderboard uses 10,000 and 30,000);
    # 0 skips the leaderboard figure
    leaderboard_warmup_ms: float = 0.0
    leaderboard_rep_ms: float = 0.0


def grid(
    presets: Iterable[StepConfig | str],
    seq_lens: Iterable[int],
    modes: Iterable[str],
    precisions: Iterable[str],
    compiles: Iterable[str],
    attentions: Iterable[str],
    batch: int,
    param_dtypes: Iterable[str] = ("fp32",),
    losses: Iterable[str] = ("eager",),
    checkpoints: Iterable[str] = ("none",),
    optimizers: Iterable[str] = ("torch",),
) -> list[StepConfig]:
    """All configurations, validated up front so bad input fails before anything runs.

    `presets` are preset names, or StepConfigs whose model fields (`preset`, `model`,
    `approximations`) name a shape of the user's own; their other fields are the grid's.
    bf16 parameters go with bf16 compute only: with precisions fp32,bf16 and param dtypes
    fp32,bf16 the grid holds three precision pairs, not four. The optimizer steps only in a
    train-step: other modes run once, with the first optimizer named."""
    bases = [StepConfig(p, 0, "") if isinstance(p, str) else p for p in presets]
    optimizers = list(optimizers)
    first_optimizer = optimizers[0] if optimizers else None
    if any(base.module for base in bases) and list(attentions) != ["naive"]:
        raise UsageError("--attention picks lmperf's attention implementations; a --module model brings its own")
    configs = [
        replace(
            base,
            seq_len=t,
            mode=m,
            precision=pr,
            compile=c,
            attention=base.attention if base.module else a,
            batch=batch,
            param_dtype=pd,
            loss=lo,
            checkpoint=ck,
            optimizer=op,
        )
        for base, t, pr, pd, c, a, lo, ck, op, m in itertools.product(
            bases, seq_lens, precisions, param_dtypes, compiles, attentions, losses, checkpoints, optimizers, modes
        )
        if not (pd == "bf16" and pr == "fp32") and (m == "train-step" or op == first_optimizer)
    ]
    if not configs:
        raise UsageError("bf16 parameters need --precisions bf16 (the step computes in bf16)")
    for config in configs:
        config.validate()
        if config.module:  # the module runs at each context now: its errors come before any row
            counted_flops(config.module, config.seq_len)
    return configs


def row_key(values: dict) -> tuple:
    """What makes a row the same configuration: its KEY_FIELDS, the full shape included (rows
    written before the shape was recorded get their preset's)."""
    return key_of(StepConfig.from_dict(values).to_dict(), KEY_FIELDS)


def _group_key(config: StepConfig) -> StepConfig:
    return replace(config, mode="")


def base_row(config: StepConfig, settings: SweepSettings, status: str) -> BenchRow:
    common = {"status": status, "warmup": settings.warmup, "steps": settings.steps, "env": environment(settings.device)}
    if config.module:
        return _module_row(config, common)
    model_config = config.model_config()
    flops = step_flops(model_config, config.batch, config.seq_len, config.mode)
    return BenchRow(
        **config.to_dict(), **common, params=parameter_count(model_config)["total"], matmul_flops=flops.matmul
    )


def _module_row(config: StepConfig, common: dict) -> BenchRow:
    """A user's module's row: its FLOPs counted (lmperf.analysis.module_flops), beside the
    Transformer rule of thumb where the module looks like one."""
    counted = counted_flops(config.module, config.seq_len)
    matmul = counted.matmul(config.batch, config.mode)
    expected = transformer_flops(config.module, config.batch, config.seq_len, config.mode)
    return BenchRow(
        **config.to_dict(),
        **common,
        params=config.module.params,
        matmul_flops=matmul,
        flop_count=counted.method(config.batch),
        transformer_flops=expected,
        flops_over_transformer=matmul / expected if expected else None,
    )


def _measure(step: ModelStep, config: StepConfig, settings: SweepSettings) -> BenchRow:
    device = step.device
    if device.type == "cuda":
        _release(device)  # the peak reservation is this row's, not a cache an earlier row left
        torch.cuda.reset_peak_memory_stats(device)
        retries_before = torch.cuda.memory_stats(device).get("num_alloc_retries", 0)
    load_start = load_average()
    times = time_steps(lambda: step.run(config.mode), settings.warmup, settings.steps, device)
    row = base_row(config, settings, "ok")
    row.load_start, row.load_end = load_start, load_average()
    if settings.leaderboard_rep_ms:
        bench = do_bench_ms(
            lambda: step.run(config.mode), settings.leaderboard_warmup_ms, settings.leaderboard_rep_ms, device
        )
        row.leaderboard_ms, row.leaderboard_calls = bench.mean_ms, bench.calls
        row.leaderboard_warmup_ms, row.leaderboard_rep_ms = settings.leaderboard_warmup_ms, settings.leaderboard_rep_ms
    step.release_grads()
    stats = times.stats
    row.cold_ms, row.warmup_ms, row.step_ms = times.cold_ms, times.warmup_ms, times.measured_ms
    row.mean_ms, row.std_ms, row.median_ms = stats.mean, stats.std, stats.median
    row.spread, row.noisy = stats.spread, stats.noisy
    row.min_ms, row.max_ms = stats.min, stats.max
    row.tokens_per_s = config.batch * config.seq_len / (stats.mean / 1e3)
    row.tflops = row.matmul_flops / (stats.mean / 1e3) / 1e12
    peak = peak_tflops(row.env["device"], config.precision, settings.peak_tflops)
    row.mfu = row.tflops / peak if peak else None
    if device.type == "cuda":
        row.peak_memory_gb = torch.cuda.max_memory_allocated(device) / 1e9
        row.peak_reserved_gb = torch.cuda.max_memory_reserved(device) / 1e9
        row.alloc_retries = torch.cuda.memory_stats(device).get("num_alloc_retries", 0) - retries_before
    return row


def _release(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def device_memory_bytes(device: torch.device) -> int | None:
    """What a step may use: the GPU's memory, or the host RAM available now on a CPU."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            available = next(line for line in meminfo if line.startswith("MemAvailable:"))
        return int(available.split()[1]) * 1024
    except (OSError, StopIteration, ValueError):
        return None


def memory_shortfall(config: StepConfig, device: torch.device) -> str | None:
    """Why the analytic peak of `config` cannot fit `device`, or None when it may."""
    have = device_memory_bytes(device)
    if have is None or config.precision not in MEMORY_PRECISIONS or config.module:  # no analytic model of a module
        return None
    need = memory_model(
        config.model_config(),
        config.batch,
        config.seq_len,
        config.precision,
        config.param_dtype,
        config.checkpoint,
        config.loss,
    ).peak(config.mode)
    if need <= have:
        return None
    where = "GPU memory" if device.type == "cuda" else "host RAM available"
    return f"out of memory (predicted, not run): the analytic peak {need / 1e9:,.1f} GB exceeds the {have / 1e9:,.1f} GB of {where}"


def run_configs(
    configs: list[StepConfig],
    settings: SweepSettings,
    make_step: Callable[[StepConfig, torch.device], ModelStep] = ModelStep,
    check_memory: bool = True,
) -> Iterator[BenchRow]:
    """Yield one row per configuration, in order; out-of-memory and failures become rows.

    `check_memory` refuses, before building it, a step whose single-process analytic peak exceeds
    the device; a data-parallel caller whose state is sharded across ranks turns it off."""
    device = torch.device(settings.device)
    for _, group in itertools.groupby(configs, key=_group_key):
        step = None
        for config in group:
            shortfall = memory_shortfall(config, device) if check_memory else None
            if shortfall:  # the operating system would kill the process, not raise: a row instead
                yield failure_row(base_row(config, settings, "ok"), torch.OutOfMemoryError(shortfall))
                continue
            try:
                if step is None:
                    step = make_step(config, device)
                row = _measure(step, config, settings)
            except RuntimeError as error:  # out of memory, or e.g. a compiler failure: record it, go on
                row = failure_row(base_row(config, settings, "ok"), error)
                step = None  # drop every reference before emptying the cache
                _release(device)
            yield row
        step = None
        _release(device)


def remaining(configs: list[StepConfig], run_dir: RunDir) -> list[StepConfig]:
    """The configurations that have no row in `run_dir` yet, in order."""
    done = {row_key(row) for row in (run_dir.rows() if run_dir.results.exists() else [])}
    return [c for c in configs if row_key(c.to_dict()) not in done]


def run_sweep(
    configs: list[StepConfig],
    settings: SweepSettings,
    run_dir: RunDir,
    make_step: Callable[[StepConfig, torch.device], ModelStep] = ModelStep,
    on_row: Callable[[BenchRow], None] = lambda row: None,
) -> list[dict]:
    """Run the configurations not already in `run_dir`, appending each row as it finishes."""
    for row in run_configs(remaining(configs, run_dir), settings, make_step):
        run_dir.append(row.to_dict())
        on_row(row)
    return run_dir.rows()


__all__ = [
    "BenchRow",
    "KEY_FIELDS",
    "MODES",
    "SweepSettings",
    "grid",
    "remaining",
    "row_key",
    "run_configs",
    "run_sweep",
]

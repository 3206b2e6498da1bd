"""The collectives one data-parallel train step issues on every rank, and which of them nothing
can hide.

- DDP all-reduces the gradients in buckets as the backward produces them: the parameters in
  reverse order, packed until a bucket reaches its cap (1 MiB for the first, then `bucket_mb`
  MiB; a tensor is never split). The backward (two thirds of the compute: its matmuls are twice
  the forward's) can hide them, except the last bucket, which the backward finishes with.
- FSDP2, one unit per block plus the root (embedding, final norm, LM head): all-gathers of each
  block's parameters in the forward and again in the backward (only in the forward without
  reshard-after-forward), one of the root, which stays gathered until its backward; a
  reduce-scatter of every unit's gradients. Parameters are gathered in the compute precision
  (bf16 under bf16 autocast: MixedPrecisionPolicy) and gradients reduced in fp32. All of the
  compute can hide them except the root's and first block's gathers, which start the forward,
  and their reduce-scatters, which end the backward.
"""

from __future__ import annotations

from dataclasses import dataclass

from lmperf.errors import UsageError
from lmperf.model.config import ModelConfig, parameter_count
from lmperf.model.step import StepConfig

STRATEGIES = ("ddp", "fsdp")
DEFAULT_BUCKET_MB = 25.0  # DDP's own default
FIRST_BUCKET_BYTES = 2**20  # DDP's cap for its first bucket
REDUCE_BYTES = 4  # FSDP2 reduces gradients in fp32, and DDP's fp32 gradients are 4 bytes too
BACKWARD_SHARE = 2 / 3  # of a step's matmul FLOPs: the backward's two matmuls per forward one


@dataclass(frozen=True)
class Parallelism:
    """`reshard` applies to FSDP2 (reshard_after_forward of the blocks), `bucket_mb` to DDP."""

    strategy: str
    reshard: bool = True
    bucket_mb: float = DEFAULT_BUCKET_MB

    def validate(self) -> "Parallelism":
        if self.strategy not in STRATEGIES:
            raise UsageError(f"unknown strategy {self.strategy!r}; choose from {', '.join(STRATEGIES)}")
        if self.bucket_mb <= 0:
            raise UsageError(f"--bucket-mb must be positive, got {self.bucket_mb}")
        return self


@dataclass(frozen=True)
class Call:
    op: str
    size: float  # bytes of the whole buffer
    count: int = 1


@dataclass(frozen=True)
class Schedule:
    calls: tuple[Call, ...]  # every collective of one step
    edge: tuple[Call, ...]  # those no compute runs beside
    window_share: float  # share of the step's compute that can run beside the rest


def parameter_tensors(config: ModelConfig) -> list[int]:
    """Elements of each parameter tensor of TransformerLM, in its parameters() order."""
    d, f, width = config.d_model, config.d_ff, config.attention_width
    mlp = [d * f, d * f, f * d] if config.mlp == "swiglu" else [d * f, f * d]
    qk_norms = [config.head_dim] * 2 if config.qk_norm else []
    # norm, qkv, out, the q and k norms, norm, MLP
    block = [d, d * (width + 2 * config.kv_width), width * d, *qk_norms, d, *mlp]
    head = [] if config.tie_embeddings else [config.vocab_size * d]
    return [config.vocab_size * d, *block * config.n_layers, d, *head]


def ddp_buckets(tensor_bytes: list[float], bucket_mb: float) -> list[float]:
    """Bucket sizes in the order DDP fills them (the parameters reversed)."""
    buckets, filling, cap = [], 0.0, FIRST_BUCKET_BYTES
    for size in reversed(tensor_bytes):
        filling += size
        if filling >= cap:
            buckets.append(filling)
            filling, cap = 0.0, bucket_mb * 2**20
    return buckets + ([filling] if filling else [])


def ddp_schedule(config: ModelConfig, param_dtype: str, bucket_mb: float) -> Schedule:
    grad_bytes = 2 if param_dtype == "bf16" else 4  # gradients take the parameters' dtype
    buckets = ddp_buckets([n * grad_bytes for n in parameter_tensors(config)], bucket_mb)
    calls = tuple(Call("all-reduce", size) for size in buckets)
    return Schedule(calls, calls[-1:], BACKWARD_SHARE)


def fsdp_schedule(config: ModelConfig, precision: str, param_dtype: str, reshard: bool) -> Schedule:
    counts = parameter_count(config)
    gather_bytes = 2 if precision == "bf16" or param_dtype == "bf16" else 4
    block = counts["blocks"] / config.n_layers
    root = counts["total"] - counts["blocks"]
    gathers = config.n_layers * (2 if reshard else 1)
    ends = (
        Call("all-gather", root * gather_bytes),
        Call("all-gather", block * gather_bytes),
        Call("reduce-scatter", block * REDUCE_BYTES),
        Call("reduce-scatter", root * REDUCE_BYTES),
    )
    calls = (
        Call("all-gather", block * gather_bytes, gathers),
        ends[0],
        Call("reduce-scatter", block * REDUCE_BYTES, config.n_layers),
        ends[3],
    )
    return Schedule(calls, ends, 1.0)


def step_schedule(step: StepConfig, parallelism: Parallelism) -> Schedule:
    config = step.model_config()
    if parallelism.strategy == "ddp":
        return ddp_schedule(config, step.param_dtype, parallelism.bucket_mb)
    return fsdp_schedule(config, step.precision, step.param_dtype, parallelism.reshard)

"""Analytic memory per rank of each data-parallel strategy: parameters, gradients and AdamW
state, sharded or not.

Bench keeps fp32 parameters (bf16 runs use autocast), fp32 gradients and AdamW's two fp32 moments:
4 + 4 + 8 bytes per parameter. Per rank, with P parameters on N ranks:

- none / DDP: everything replicated, 16 P. DDP's gradient buckets hold the gradients
  (gradient_as_bucket_view) or a second copy of them (4 P more), and stay allocated between steps;
  the second step also holds the first step's buckets (4 P), which DDP replaces by rebuilt ones.
- FSDP2: parameters, gradients and optimizer state sharded, 16 P / N, plus the blocks gathered
  whole for compute: with reshard-after-forward about two blocks at a time (the one computing and
  the one prefetched), without it every block gathered in the forward stays whole until its
  backward (the whole model, 4 P).

Every strategy keeps the model's buffers (the rotary tables) whole on every rank.

`persistent` is what stays allocated between steps once gradients are released (set to None),
the figure bench measures as `persistent_memory_gb`. A train step's peak adds what data
parallelism does not shard, taken from the single-GPU model (lmperf.analysis.memory): activations,
autocast's bf16 weight copies (whole on every rank, FSDP2 too: autocast casts the gathered
weights and the backward keeps the copies) and the logits.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from lmperf.analysis.memory import memory_model, rotary_table_bytes
from lmperf.model import ModelConfig, parameter_count
from lmperf.model.step import StepConfig

PARAM_BYTES, GRAD_BYTES, ADAMW_BYTES = 4, 4, 8
GATHERED_BLOCKS = 2  # computing + prefetched, FSDP2's default prefetch


@dataclass(frozen=True)
class DataParallel:
    """How the ranks hold the model: `strategy` is none, ddp or fsdp; `reshard` is FSDP2's
    reshard_after_forward of the blocks, `bucket_view` DDP's gradient_as_bucket_view."""

    strategy: str
    world_size: int = 1
    reshard: bool = True
    bucket_view: bool = True


@dataclass(frozen=True)
class StateMemory:
    """Bytes per rank."""

    params: float
    grads: float
    optimizer: float
    buckets: float  # DDP gradient buckets that outlive the gradients
    gathered: float  # FSDP2 parameters all-gathered whole for compute (transient)
    buffers: float  # the rotary tables: buffers, whole on every rank under every strategy
    rebuild: float = 0.0  # DDP's first-iteration buckets, alive through the second forward

    @property
    def persistent(self) -> float:
        return self.params + self.optimizer + self.buckets + self.buffers

    def to_dict(self) -> dict:
        return {**asdict(self), "persistent": self.persistent}


def state_memory(
    config: ModelConfig, layout: DataParallel, precision: str = "fp32", param_dtype: str = "fp32"
) -> StateMemory:
    """Per-rank state; bf16 parameters halve parameters, gradients and AdamW state, and a bf16
    FSDP2 step gathers its parameters in bf16 (MixedPrecisionPolicy)."""
    counts = parameter_count(config)
    total, buffers = counts["total"], rotary_table_bytes(config)
    shrink = 2 if param_dtype == "bf16" else 1
    param_bytes, grad_bytes, adamw_bytes = PARAM_BYTES / shrink, GRAD_BYTES / shrink, ADAMW_BYTES / shrink
    if layout.strategy == "fsdp":
        n = layout.world_size
        gathered_bytes = 2 if precision == "bf16" else param_bytes
        block = (counts["blocks"] / config.n_layers) * gathered_bytes
        # The root unit (embedding, final norm, LM head) stays gathered between forward and backward.
        root = (counts["embedding"] + counts["lm_head"] + counts["final_norm"]) * gathered_bytes
        blocks_whole = GATHERED_BLOCKS * block if layout.reshard else counts["blocks"] * gathered_bytes
        return StateMemory(
            total * param_bytes / n,
            total * grad_bytes / n,
            total * adamw_bytes / n,
            0.0,
            (root + blocks_whole) * (n - 1) / n,
            buffers,
        )
    if layout.strategy == "ddp":
        # With bucket views the gradients live in the buckets (which outlive them); without, the
        # gradients are a second copy that set_to_none frees.
        grads = 0.0 if layout.bucket_view else total * grad_bytes
        # After the first iteration DDP rebuilds its buckets in the order the gradients arrived;
        # the old ones stay allocated until the second backward (a full extra gradient copy
        # through the second forward, as a memory probe of DDP steps shows).
        return StateMemory(
            total * param_bytes,
            grads,
            total * adamw_bytes,
            total * grad_bytes,
            0.0,
            buffers,
            rebuild=total * grad_bytes,
        )
    return StateMemory(total * param_bytes, total * grad_bytes, total * adamw_bytes, 0.0, 0.0, buffers)


def train_step_peak(
    config: ModelConfig,
    batch: int,
    seq_len: int,
    precision: str,
    layout: DataParallel,
    param_dtype: str = "fp32",
    checkpoint: str = "none",
    loss: str = "eager",
) -> float:
    """Bytes at one rank's peak in a train step with `batch` sequences per rank.

    As in the single-GPU model, the gradients appear while the activations are freed, so the peak
    holds the larger of the two; DDP's buckets and FSDP2's gathered blocks are held besides. The
    peak of a run includes its second step, where DDP still holds its first buckets (`rebuild`);
    from the third step on, a DDP step peaks `rebuild` bytes lower.
    """
    single = memory_model(config, batch, seq_len, precision, param_dtype, checkpoint, loss)
    # activations, casts, logits (the rotary tables are in `persistent`)
    forward_live = single.peak("forward") - single.parameters - single.rotary_tables
    if layout.strategy == "fsdp" and precision == "bf16":
        forward_live -= single.autocast_weight_copies  # gathered in bf16 already: nothing to cast
    state = state_memory(config, layout, precision, param_dtype)
    return state.persistent + state.gathered + state.rebuild + max(forward_live, state.grads)


def rank_peak(config: StepConfig, layout: DataParallel) -> float:
    """Bytes at one rank's peak in `config`'s mode: a train step's from train_step_peak; a forward
    or forward-backward as one process's (an upper bound under FSDP2, whose parameters are sharded
    between steps)."""
    model = config.model_config()
    if config.mode == "train-step":
        return train_step_peak(
            model,
            config.batch,
            config.seq_len,
            config.precision,
            layout,
            config.param_dtype,
            config.checkpoint,
            config.loss,
        )
    return memory_model(
        model, config.batch, config.seq_len, config.precision, config.param_dtype, config.checkpoint, config.loss
    ).peak(config.mode)

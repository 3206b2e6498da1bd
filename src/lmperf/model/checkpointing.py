"""Activation-checkpoint policies by name, per block (no torch: options are checked before a
model exists). TransformerLM applies them; the memory model counts what each keeps."""

from __future__ import annotations

from lmperf.errors import UsageError
from lmperf.model.config import ModelConfig

BLOCK_POLICIES = ("none", "full", "selective", "selective-mm", "selective-mm-out")
# The selective policies, which ":K" may follow (the last K blocks keep everything instead).
SELECTIVE_POLICIES = ("selective", "selective-mm", "selective-mm-out")
# The policies that tell a block's matmuls apart by their widths (lmperf.model.transformer).
BY_WIDTH = ("selective-mm", "selective-mm-out")
# What --checkpoint takes, for help and error texts.
CHECKPOINT_FORMS = (
    f"{', '.join(BLOCK_POLICIES)}; one of {', '.join(SELECTIVE_POLICIES)} with :K (its last K blocks keep "
    "every activation); or blocks counted out from the first, POLICY*N+POLICY*M"
)


def block_policies(checkpoint: str, n_layers: int) -> list[str]:
    """Each block's own policy (one of BLOCK_POLICIES) under a model's `checkpoint`: one policy
    for every block, a selective one with ":K" (the last K blocks keep everything), or blocks
    counted out from the first, "POLICY*N+POLICY*M..." (N + M + ... = n_layers), so that a kept
    tensor the memory cannot hold in every block can be kept in some."""
    if "+" in checkpoint or "*" in checkpoint:
        return _counted_policies(checkpoint, n_layers)
    name, _, kept = checkpoint.partition(":")
    if name in BLOCK_POLICIES and not kept:
        return [name] * n_layers
    count = _count(kept)
    if name in SELECTIVE_POLICIES and count is not None and count <= n_layers:
        return [name] * (n_layers - count) + ["none"] * count
    raise UsageError(f"unknown checkpoint policy {checkpoint!r} for {n_layers} blocks; choose from {CHECKPOINT_FORMS}")


def model_block_policies(checkpoint: str, config: ModelConfig) -> list[str]:
    """block_policies for `config`'s blocks, refused where a policy that tells matmuls apart by
    width cannot tell them apart in this model (`_widths_alike`)."""
    policies = block_policies(checkpoint, config.n_layers)
    alike = _widths_alike(config, {p for p in policies if p in BY_WIDTH})
    if alike:
        raise UsageError(
            f"--checkpoint {checkpoint} tells the block's matmuls apart by width, and this model's {alike}; "
            "use selective, full or none"
        )
    return policies


def _widths_alike(config: ModelConfig, by_width: set[str]) -> str | None:
    """Which of the block's widths the `by_width` policies would mistake (None: none). They keep
    a matmul output that is not d_model wide, so an MLP as wide as the model would pass its gate
    and up for the output projection and its down projection for a widening one, and a QKV output
    d_model wide would pass for a narrowing one; selective-mm-out also keeps every output whose
    input is not d_ff wide, so an attention d_ff wide would pass the output projection for the
    down projection."""
    if not by_width:
        return None
    if config.d_ff == config.d_model:
        return f"d_ff equals its d_model ({config.d_model})"
    if config.attention_width + 2 * config.kv_width == config.d_model:
        return f"QKV projection is as wide as its d_model ({config.d_model})"
    if "selective-mm-out" in by_width and config.attention_width == config.d_ff:
        return f"attention is as wide as its d_ff ({config.d_ff})"
    return None


def _count(text: str) -> int | None:
    """A count of blocks: ASCII digits only ("²".isdigit() is true, int("²") fails)."""
    return int(text) if text and text.isascii() and text.isdigit() else None


def _counted_policies(checkpoint: str, n_layers: int) -> list[str]:
    policies = []
    for part in checkpoint.split("+"):
        name, _, count = part.partition("*")
        if name not in BLOCK_POLICIES or _count(count) is None:
            raise UsageError(
                f"unknown checkpoint part {part!r} in {checkpoint!r}; write POLICY*N+POLICY*M with POLICY one of "
                f"{', '.join(BLOCK_POLICIES)}"
            )
        policies += [name] * _count(count)
    if len(policies) != n_layers:
        raise UsageError(f"--checkpoint {checkpoint} counts {len(policies)} blocks; the model has {n_layers}")
    return policies

"""Activation-checkpoint policies by name, per block (no torch: options are checked before a
model exists). TransformerLM applies them; the memory model counts what each keeps."""

from __future__ import annotations

from lmperf.errors import UsageError

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


def model_block_policies(checkpoint: str, n_layers: int, d_model: int, d_ff: int) -> list[str]:
    """block_policies for a model of these widths: the policies that tell matmuls apart by width
    cannot where the MLP is as wide as the model (its gate and up would pass for the output
    projection, its down projection for a widening one)."""
    policies = block_policies(checkpoint, n_layers)
    if d_ff == d_model and any(p in BY_WIDTH for p in policies):
        raise UsageError(
            f"--checkpoint {checkpoint} tells the block's matmuls apart by width, and this model's d_ff "
            f"equals its d_model ({d_model}); use selective, full or none"
        )
    return policies


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

"""Activation-checkpoint policies by name, per block (no torch: options are checked before a
model exists). TransformerLM applies them; the memory model counts what each keeps."""

from __future__ import annotations

from lmperf.errors import UsageError

CHECKPOINT_POLICIES = (
    "none",
    "full",
    "selective",
    "selective-mm",
    "selective-mm-out",
    "selective:K",
    "POLICY*N+POLICY*M",
)
BLOCK_POLICIES = ("none", "full", "selective", "selective-mm", "selective-mm-out")
# The selective policies, which ":K" may follow (the last K blocks keep everything instead).
SELECTIVE_POLICIES = ("selective", "selective-mm", "selective-mm-out")


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
    if name in SELECTIVE_POLICIES and kept.isdigit() and int(kept) <= n_layers:
        return [name] * (n_layers - int(kept)) + ["none"] * int(kept)
    raise UsageError(
        f"unknown checkpoint policy {checkpoint!r}; choose from none, full, selective, selective-mm, "
        f"selective-mm-out, or one of the three selective ones with :K, 0 <= K <= {n_layers} "
        "last blocks that keep every activation"
    )


def _counted_policies(checkpoint: str, n_layers: int) -> list[str]:
    policies = []
    for part in checkpoint.split("+"):
        name, _, count = part.partition("*")
        if name not in BLOCK_POLICIES or not count.isdigit():
            raise UsageError(
                f"unknown checkpoint part {part!r} in {checkpoint!r}; write POLICY*N+POLICY*M with POLICY one of "
                f"{', '.join(BLOCK_POLICIES)}"
            )
        policies += [name] * int(count)
    if len(policies) != n_layers:
        raise UsageError(f"--checkpoint {checkpoint} counts {len(policies)} blocks; the model has {n_layers}")
    return policies

"""Activation-checkpoint policies by name, per block (no torch: options are checked before a
model exists). TransformerLM applies them; the memory model counts what each keeps."""

from __future__ import annotations

from lmperf.errors import UsageError

CHECKPOINT_POLICIES = ("none", "full", "selective", "selective-mm", "selective-mm-out", "selective:K")
BLOCK_POLICIES = ("none", "full", "selective", "selective-mm", "selective-mm-out")
# The selective policies, which ":K" may follow (the last K blocks keep everything instead).
SELECTIVE_POLICIES = ("selective", "selective-mm", "selective-mm-out")


def block_policies(checkpoint: str, n_layers: int) -> list[str]:
    """Each block's own policy (one of BLOCK_POLICIES) under a model's `checkpoint`."""
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

"""Activation-checkpoint policies by name, per block (no torch: options are checked before a
model exists). TransformerLM applies them; the memory model counts what each keeps."""

from __future__ import annotations

from lmperf.errors import UsageError

CHECKPOINT_POLICIES = ("none", "full", "selective", "selective-mm", "selective:K")
BLOCK_POLICIES = ("none", "full", "selective", "selective-mm")


def block_policies(checkpoint: str, n_layers: int) -> list[str]:
    """Each block's own policy ("none", "full" or "selective") under a model's `checkpoint`."""
    name, _, kept = checkpoint.partition(":")
    if name in BLOCK_POLICIES and not kept:
        return [name] * n_layers
    if name == "selective" and kept.isdigit() and int(kept) <= n_layers:
        return ["selective"] * (n_layers - int(kept)) + ["none"] * int(kept)
    raise UsageError(
        f"unknown checkpoint policy {checkpoint!r}; choose from none, full, selective, selective-mm, "
        f"or selective:K with 0 <= K <= {n_layers} blocks that keep every activation"
    )

"""Class targets checked before a kernel reads the row each one names: one out of [0, V) would
read outside its row (an index error on a CPU, memory that is not the row's on a GPU)."""

from __future__ import annotations

import torch


def check_targets(targets: torch.Tensor, n_classes: int, ignore_index: int) -> None:
    """A ValueError naming the first target outside [0, n_classes) that is not `ignore_index`."""
    bad = (targets != ignore_index) & ((targets < 0) | (targets >= n_classes))
    if bad.any():
        position = int(bad.nonzero()[0, 0])
        raise ValueError(
            f"target {int(targets[position])} at position {position} is outside [0, {n_classes}) "
            f"and is not the ignore_index {ignore_index}"
        )

"""One parameter group's AdamW settings, shared by lmperf's AdamW and its Triton kernel."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hyperparameters:
    """AdamW's settings as Python floats (kernel arguments)."""

    lr: float
    beta1: float
    beta2: float
    eps: float
    weight_decay: float

    def step_size(self, step: int) -> float:
        """The learning rate over the first moment's bias correction at `step` (from 1)."""
        return self.lr / (1.0 - self.beta1**step)

    def bias_correction2_sqrt(self, step: int) -> float:
        return (1.0 - self.beta2**step) ** 0.5

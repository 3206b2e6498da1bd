"""One configured training-style step of TransformerLM: forward, forward-backward, or train step."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields

import torch
import torch.nn as nn

from lmperf import regions
from lmperf.dtypes import torch_dtype
from lmperf.errors import UsageError
from lmperf.model import ModelConfig, TransformerLM, check_context, preset
from lmperf.model.checkpointing import model_block_policies
from lmperf.model.module_tree import repeated_blocks
from lmperf.model.transformer import LOSSES
from lmperf.model.user import UserModel

MODES = ("forward", "forward-backward", "train-step")
PRECISIONS = ("fp32", "bf16")
# fp32: fp32 master weights, gradients and AdamW state (bf16 compute comes from autocast);
# bf16: the model created in bf16, so its gradients and AdamW state are bf16 too.
PARAM_DTYPES = ("fp32", "bf16")
COMPILE_MODES = ("eager", "compile")
# torch: torch.optim.AdamW (fused on CUDA); lmperf: lmperf.ops.AdamW (one Triton pass per tensor)
OPTIMIZERS = ("torch", "lmperf")


@dataclass(frozen=True)
class StepConfig:
    """One step to run. `preset` names the model (a preset, or a Hugging Face config's name);
    `model` is its shape when that is not the preset's own (a Hugging Face config, explicit
    widths), and `approximations` says what lmperf's block does differently from that model.
    `module` is the user's own module instead of lmperf's model (its attention is OWN_ATTENTION)."""

    preset: str
    seq_len: int
    mode: str
    precision: str = "fp32"
    compile: str = "eager"
    attention: str = "naive"
    batch: int = 4
    model: ModelConfig | None = None
    approximations: str = ""
    param_dtype: str = "fp32"
    loss: str = "eager"
    checkpoint: str = "none"
    module: UserModel | None = None
    optimizer: str = "torch"

    def validate(self) -> "StepConfig":
        for name, value, allowed in (
            ("mode", self.mode, MODES),
            ("precision", self.precision, PRECISIONS),
            ("param dtype", self.param_dtype, PARAM_DTYPES),
            ("compile", self.compile, COMPILE_MODES),
            ("loss", self.loss, LOSSES),
            ("optimizer", self.optimizer, OPTIMIZERS),
        ):
            if value not in allowed:
                raise UsageError(f"unknown {name} {value!r}; choose from {', '.join(allowed)}")
        if self.module is None:
            config = self.model_config()
            check_context(config, self.seq_len)
            model_block_policies(self.checkpoint, config)
        elif self.seq_len <= 0:
            raise UsageError(f"context length must be positive, got {self.seq_len}")
        else:
            if self.checkpoint not in ("none", "full", "selective"):
                raise UsageError(
                    f"a --module model takes --checkpoint none, full or selective, not {self.checkpoint!r}"
                )
            self.module.check(self.loss)
        if self.batch <= 0:
            raise UsageError(f"batch must be positive, got {self.batch}")
        if self.param_dtype == "bf16" and self.precision != "bf16":
            raise UsageError("bf16 parameters need --precisions bf16 (the step computes in bf16)")
        return self

    def model_config(self) -> ModelConfig:
        if self.module is not None:
            raise TypeError(f"{self.preset} is the user's own module: it has no ModelConfig")
        if self.model is None:
            return preset(self.preset, attention=self.attention)
        return self.model.with_(attention=self.attention)

    def to_dict(self) -> dict:
        """Flat fields, with `model` the full shape (without `attention`, a field of its own), or
        `module` the user's module's record."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.module is not None:
            return {**values, "model": None, "module": self.module.record()}
        shape = self.model_config().to_dict()
        del shape["attention"]
        return {**values, "model": shape}

    @classmethod
    def from_dict(cls, values: dict) -> "StepConfig":
        """The configuration a row (or `to_dict`) was written from; rows written before the
        shape was recorded have none, and get their preset's."""
        known = {k: values[k] for k in cls.__dataclass_fields__ if k in values}
        if known.get("model") is not None:
            known["model"] = ModelConfig(**known["model"])
        if known.get("module") is not None:
            known["module"] = UserModel.from_record(known["module"])
        return cls(**known)


def autocast_dtype(precision: str) -> torch.dtype | None:
    """The dtype autocast computes in at `precision`; None for fp32 (no autocast)."""
    return None if precision == "fp32" else torch_dtype(precision, PRECISIONS, "precision")


def autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    dtype = autocast_dtype(precision)
    return contextlib.nullcontext() if dtype is None else torch.autocast(device.type, dtype=dtype)


def compile_blocks(model: nn.Module) -> None:
    """torch.compile each repeated block (regional compilation), or the whole module when it has
    no repeated blocks (lmperf.model.module_tree).

    All blocks share one code object, so dynamo compiles the block once and every layer reuses
    it: compile time stays flat with depth (a 48-layer model compiles like a 1-layer one), while
    each block gets inductor's fusions. Embedding, final norm, LM head and loss stay eager.
    """
    # A fresh cache per model: dynamo keeps at most 8 variants per code object, and a sweep's
    # earlier shapes and precisions would use them up and silently fall back to eager.
    torch._dynamo.reset()
    blocks = repeated_blocks(model)
    for block in blocks or [model]:
        block.compile()


class ModelStep:
    """A model, optimizer and random batch on `device`; calling `run(mode)` executes one step.

    One ModelStep serves all three modes of a configuration so that a compiled model is compiled
    once: the forward mode runs the training forward (autograd on), the same graph the others use.
    A user's module (`config.module`) runs its own batch and loss (lmperf.model.user).
    """

    def __init__(self, config: StepConfig, device: torch.device, seed: int = 0):
        self.config = config.validate()
        self.device = device
        generator = torch.Generator().manual_seed(seed)
        user = config.module
        if user is None:
            with torch.device(device):
                self.model = TransformerLM(config.model_config(), config.checkpoint, config.loss)
        else:
            self.model = user.step_module(device, config.checkpoint)
            self.user_loss = user.step_loss(self.model, config.loss)
            self.batch = user.make_batch(config.batch, config.seq_len, device, generator)
        for param in self.model.parameters():  # rounds the fp32 initial weights; buffers stay as built
            param.data = param.data.to(torch_dtype(config.param_dtype))
        if config.compile == "compile":
            compile_blocks(self.model)
        self.optimizer = self.build_optimizer()
        if user is None:
            shape = (config.batch, config.seq_len + 1)
            data = torch.randint(0, config.model_config().vocab_size, shape, generator=generator).to(device)
            self.inputs, self.targets = data[:, :-1], data[:, 1:]  # next-token prediction

    def build_optimizer(self) -> torch.optim.Optimizer:
        """AdamW over the model's current parameters, PyTorch's (fused on CUDA) or lmperf's (its
        `optimizer`), with the same hyperparameters; its state comes lazily."""
        if self.config.optimizer == "lmperf":
            from lmperf.ops.adamw import AdamW

            return AdamW(self.model.parameters(), lr=1e-4)
        return torch.optim.AdamW(self.model.parameters(), lr=1e-4, fused=self.device.type == "cuda")

    def loss(self) -> torch.Tensor:
        with autocast(self.config.precision, self.device):
            with regions.region(regions.FORWARD):
                if self.config.module is None:
                    return self.model(self.inputs, self.targets)
                return self.user_loss(self.model, self.batch)

    def run(self, mode: str) -> None:
        if mode == "forward":
            self.loss()
            return
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss()
        with regions.region(regions.BACKWARD):
            loss.backward()
        if mode == "train-step":
            with regions.region(regions.OPTIMIZER):
                self.optimizer.step()

    def release_grads(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

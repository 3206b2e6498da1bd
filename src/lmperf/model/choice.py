"""Which model a command runs: lmperf presets, or a Hugging Face config, with explicit fields
(`--d-model`, `--kv-heads`, ...) laid over either; or the user's own module (`--module`, or an
instance from Python: `ModelChoice.of(module)`). The result is the model part of a StepConfig
(name, full shape, approximations; or the module), which the sweep grid then crosses with
everything else."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from lmperf.errors import UsageError
from lmperf.model.config import ModelConfig, preset
from lmperf.model.hf_config import read_hf_config

if TYPE_CHECKING:
    from lmperf.model.step import StepConfig
    from lmperf.model.user import UserModel

SHAPE_FIELDS = tuple(f.name for f in fields(ModelConfig) if f.name != "attention")


@dataclass(frozen=True)
class ModelChoice:
    hf_config: str | None = None
    overrides: tuple[tuple[str, object], ...] = ()  # (ModelConfig field, value), given ones only
    module: str | None = None  # --module PKG.MOD:FACTORY or path/to/file.py:FACTORY
    module_args: str | None = None  # --module-args: the factory's keyword arguments, JSON
    user_model: UserModel | None = None  # a module given from Python (ModelChoice.of)

    @classmethod
    def from_options(
        cls, hf_config: str | None = None, module: str | None = None, module_args: str | None = None, **fields
    ) -> "ModelChoice":
        """From command-line options: `fields` are ModelConfig fields, None where not given."""
        overrides = tuple((k, v) for k, v in fields.items() if v is not None)
        return cls(hf_config, overrides, module, module_args).validate()

    @classmethod
    def of(cls, module, loss=None, batch=None, vocab: int | None = None) -> "ModelChoice":
        """The user's module from Python (lmperf.model.user.UserModel.of: an instance or a function
        that builds one; its own loss and batch functions for a contract other than an LM's)."""
        from lmperf.model.user import UserModel

        return cls(user_model=UserModel.of(module, loss, batch, vocab))

    @property
    def names_own_model(self) -> bool:
        """Whether the model is named here (a Hugging Face config, a module), not by presets."""
        return bool(self.hf_config or self.module or self.user_model)

    def validate(self) -> "ModelChoice":
        unknown = [name for name, _ in self.overrides if name not in SHAPE_FIELDS]
        if unknown:
            raise UsageError(f"unknown model field(s) {', '.join(unknown)}; choose from {', '.join(SHAPE_FIELDS)}")
        if self.module_args is not None and not self.module:
            raise UsageError("--module-args goes with --module")
        if self.module or self.user_model:
            shaped = [name for name, _ in self.overrides if name != "vocab_size"]
            if self.hf_config or shaped:
                raise UsageError(
                    "--module builds its own model: pass its sizes in --module-args, not "
                    + ("--hf-config" if self.hf_config else "shape options")
                )
        return self

    def bases(self, presets: list[str] | None) -> list[StepConfig]:
        """One StepConfig per model (its other fields are placeholders the grid replaces)."""
        self.validate()
        if self.names_own_model and presets:
            raise UsageError(
                f"name the model by presets or by {'--hf-config' if self.hf_config else '--module'}, not both"
            )
        if self.module or self.user_model:
            return [self._user_base()]
        if self.hf_config:
            model = read_hf_config(self.hf_config)
            return [self._base(model.name, model.config, "; ".join(model.approximations))]
        return [self._base(name, preset(name), "") for name in presets or ()]

    def base(self, preset_name: str | None, default: str) -> StepConfig:
        """The one model of a command that runs one: `preset_name`, else the Hugging Face config,
        else the `default` preset."""
        (base,) = self.bases([preset_name] if preset_name else [] if self.names_own_model else [default])
        return base

    def _user_base(self) -> StepConfig:
        from lmperf.model.step import StepConfig
        from lmperf.model.user import OWN_ATTENTION, UserModel

        vocab = dict(self.overrides).get("vocab_size")
        user = self.user_model or UserModel.from_factory(self.module, self.module_args, vocab)
        return StepConfig(user.name, 0, "", attention=OWN_ATTENTION, module=user)

    def _base(self, name: str, config: ModelConfig, approximations: str) -> StepConfig:
        if self.overrides:
            changes = dict(self.overrides)
            if config.n_kv_heads == config.n_heads:  # multi-head stays multi-head with new heads
                changes.setdefault("n_kv_heads", changes.get("n_heads", config.n_heads))
            config = config.with_(**changes)
            name += "+custom"  # the row's `model` holds the shape that ran
        from lmperf.model.step import StepConfig  # torch: only when a sweep is built

        return StepConfig(name, 0, "", model=config.validate(), approximations=approximations)

"""Which model a command runs: lmperf presets, or a Hugging Face config, with explicit fields
(`--d-model`, `--kv-heads`, ...) laid over either. The result is the model part of a StepConfig
(name, full shape, approximations), which the sweep grid then crosses with everything else."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from lmperf.errors import UsageError
from lmperf.model.config import ModelConfig, preset
from lmperf.model.hf_config import read_hf_config

if TYPE_CHECKING:
    from lmperf.model.step import StepConfig

SHAPE_FIELDS = tuple(f.name for f in fields(ModelConfig) if f.name != "attention")


@dataclass(frozen=True)
class ModelChoice:
    hf_config: str | None = None
    overrides: tuple[tuple[str, object], ...] = ()  # (ModelConfig field, value), given ones only

    @classmethod
    def from_options(cls, hf_config: str | None = None, **fields) -> "ModelChoice":
        """From command-line options: `fields` are ModelConfig fields, None where not given."""
        return cls(hf_config, tuple((k, v) for k, v in fields.items() if v is not None)).validate()

    def validate(self) -> "ModelChoice":
        unknown = [name for name, _ in self.overrides if name not in SHAPE_FIELDS]
        if unknown:
            raise UsageError(f"unknown model field(s) {', '.join(unknown)}; choose from {', '.join(SHAPE_FIELDS)}")
        return self

    def bases(self, presets: list[str] | None) -> list[StepConfig]:
        """One StepConfig per model (its other fields are placeholders the grid replaces)."""
        self.validate()
        if self.hf_config and presets:
            raise UsageError("name the model by presets or by --hf-config, not both")
        if self.hf_config:
            model = read_hf_config(self.hf_config)
            return [self._base(model.name, model.config, "; ".join(model.approximations))]
        return [self._base(name, preset(name), "") for name in presets or ()]

    def base(self, preset_name: str | None, default: str) -> StepConfig:
        """The one model of a command that runs one: `preset_name`, else the Hugging Face config,
        else the `default` preset."""
        (base,) = self.bases([preset_name] if preset_name else [] if self.hf_config else [default])
        return base

    def _base(self, name: str, config: ModelConfig, approximations: str) -> StepConfig:
        if self.overrides:
            changes = dict(self.overrides)
            if config.n_kv_heads == config.n_heads:  # multi-head stays multi-head with new heads
                changes.setdefault("n_kv_heads", changes.get("n_heads", config.n_heads))
            config = config.with_(**changes)
            name += "+custom"  # the row's `model` holds the shape that ran
        from lmperf.model.step import StepConfig  # torch: only when a sweep is built

        return StepConfig(name, 0, "", model=config.validate(), approximations=approximations)

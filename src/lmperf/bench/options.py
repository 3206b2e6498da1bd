"""The sweep grid as the commands take it: comma-separated strings, resolved to step configurations.

`bench`, `bench-dist` and `profile` read their grid options into one SweepOptions, so the three
share one set of defaults (tiny at context 128 in fp32 on a CPU; small at 512 in fp32 and bf16 on
a GPU) and one way of turning options into validated StepConfigs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from lmperf.cli_support import split_list
from lmperf.errors import UsageError
from lmperf.model.choice import ModelChoice

if TYPE_CHECKING:  # torch comes with these; the commands import this module before parsing
    from lmperf.bench.sweep import SweepSettings
    from lmperf.model.step import StepConfig


@dataclass(frozen=True)
class SweepOptions:
    """A sweep's options as given on the command line (None: the device's default)."""

    presets: Optional[str] = None
    contexts: Optional[str] = None
    modes: str = "forward,forward-backward,train-step"
    precisions: Optional[str] = None
    compile: str = "eager"
    attention: str = "naive"
    batch: int = 4
    warmup: int = 5
    steps: int = 10
    device: str = "auto"
    peak_tflops: Optional[float] = None
    resume: Optional[Path] = None
    runs_root: Path = Path("runs")
    model: ModelChoice = field(default_factory=ModelChoice)  # --hf-config and explicit shapes
    param_dtypes: str = "fp32"
    losses: str = "eager"
    checkpoints: str = "none"
    leaderboard_warmup_ms: float = 0.0
    leaderboard_rep_ms: float = 0.0

    def configs(self, on_gpu: bool) -> list[StepConfig]:
        """Every configuration of the grid, validated, modes varying fastest."""
        # What runs when not told: tiny at 128 on a CPU (seconds), small at 512 on a GPU.
        preset, context = ("small", 512) if on_gpu else ("tiny", 128)
        # An option given empty (-p '') is refused by split_list, not read as "not given".
        presets = split_list(self.presets, "presets") if self.presets is not None else None
        if not (presets or self.model.hf_config):
            presets = [preset]
        from lmperf.bench.sweep import grid

        return grid(
            self.model.bases(presets),
            split_list(str(context) if self.contexts is None else self.contexts, "contexts", int),
            split_list(self.modes, "modes"),
            split_list(("fp32,bf16" if on_gpu else "fp32") if self.precisions is None else self.precisions, "precisions"),
            split_list(self.compile, "compile"),
            split_list(self.attention, "attention"),
            self.batch,
            split_list(self.param_dtypes, "param-dtype"),
            split_list(self.losses, "loss"),
            split_list(self.checkpoints, "checkpoint"),
        )

    def validate(self) -> "SweepOptions":
        """Bad input fails here, before a run directory is made (needs a resolved --device)."""
        self.settings(self.device)
        self.configs(self.device.startswith("cuda"))
        return self

    def arguments(self) -> dict:
        """What a run directory records (JSON): every option but where the directories are."""
        arguments = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("resume", "runs_root")}
        arguments["model"] = {"hf_config": self.model.hf_config, "overrides": dict(self.model.overrides)}
        return arguments

    def with_arguments(self, arguments: dict) -> "SweepOptions":
        """These options with the recorded `arguments` of a resumed run directory."""
        changes = {name: arguments[name] for name in self.arguments() if name in arguments}
        if "model" in changes:
            recorded = changes["model"]
            changes["model"] = ModelChoice(recorded["hf_config"], tuple(recorded["overrides"].items()))
        return replace(self, **changes)

    def settings(self, device: str) -> SweepSettings:
        """How each configuration is timed on `device` (the resolved --device)."""
        if self.warmup < 0 or self.steps <= 0:
            raise UsageError(f"need --warmup >= 0 and --steps > 0, got {self.warmup} and {self.steps}")
        if self.leaderboard_warmup_ms < 0 or self.leaderboard_rep_ms < 0:
            raise UsageError("--leaderboard-warmup-ms and --leaderboard-rep-ms cannot be negative")
        from lmperf.bench.sweep import SweepSettings

        return SweepSettings(self.warmup, self.steps, device, self.peak_tflops,
                             self.leaderboard_warmup_ms, self.leaderboard_rep_ms)

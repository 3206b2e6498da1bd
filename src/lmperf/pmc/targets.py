"""The programs `lmperf pmc collect` profiles: one step of a model inside one NVTX range.

`python -m lmperf.pmc.targets SPEC.json` builds the model the spec names (an lmperf preset with
overrides, or a Hugging Face config with random weights), runs one warm-up step outside the range
(cuBLAS heuristics, lazy allocations and optimizer state would otherwise pollute the capture),
then exactly one step inside it. It also writes the true configuration (TRUTH.json) so a capture
can be scored against what really ran.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from lmperf.attention_names import ATTENTION_IMPLEMENTATIONS, SDPA_BACKENDS as FUSED_SDPA_BACKENDS
from lmperf.errors import UsageError

MODES = ("forward", "train-step", "generate")
DTYPES = ("fp32", "fp16", "bf16")
# lmperf's names (lmperf.attention_names); a Hugging Face model runs "naive" as its "eager".
# "triton" is lmperf's own FlashAttention kernel, so only lmperf presets run it; "torch" (the
# same algorithm as many small PyTorch kernels per tile) is no attention pmc's inference models.
ATTENTIONS = tuple(name for name in ATTENTION_IMPLEMENTATIONS if name != "torch")
OLD_ATTENTION_NAMES = {"eager": "naive"}  # what specs and truth files written before said
# The SDPA backends PyTorch can be pinned to, as torch.nn.attention.SDPBackend names them (lower
# case): the fused ones of lmperf.attention_names and the math fallback. None lets PyTorch pick,
# as a user's program would.
SDPA_BACKENDS = (*(f"{backend}_attention" for backend in FUSED_SDPA_BACKENDS), "math")
RANGE = "lmperf_pmc_step"


@dataclass(frozen=True)
class Target:
    """What to run: `preset` (lmperf) or `hf_config` (a config.json dict), and how."""

    batch: int = 2
    seq_len: int = 256
    mode: str = "forward"
    dtype: str = "bf16"
    attention: str = "sdpa"
    preset: str | None = None
    overrides: dict = field(default_factory=dict)
    hf_config: dict | None = None
    sdpa_backend: str | None = None
    new_tokens: int = 0  # generate: tokens generated after a prompt of seq_len tokens

    def __post_init__(self) -> None:
        object.__setattr__(self, "attention", OLD_ATTENTION_NAMES.get(self.attention, self.attention))

    def validate(self) -> "Target":
        if (self.preset is None) == (self.hf_config is None):
            raise UsageError("name exactly one target: an lmperf preset or a Hugging Face config")
        for name, value, allowed in (
            ("mode", self.mode, MODES),
            ("precision", self.dtype, DTYPES),
            ("attention", self.attention, ATTENTIONS),
        ):
            if value not in allowed:
                raise UsageError(f"unknown {name} {value!r}; choose from {', '.join(allowed)}")
        if self.sdpa_backend is not None and (self.sdpa_backend not in SDPA_BACKENDS or self.attention != "sdpa"):
            raise UsageError(
                f"sdpa backend {self.sdpa_backend!r} needs --attention sdpa and one of {', '.join(SDPA_BACKENDS)}"
            )
        if self.attention == "triton" and self.preset is None:
            raise UsageError("attention 'triton' (lmperf's kernel) runs only with an lmperf preset")
        if (self.mode == "generate") != (self.new_tokens > 0):
            raise UsageError("mode generate needs new tokens > 0 (and only generate takes them)")
        if self.mode == "generate" and self.hf_config is None:
            raise UsageError("mode generate runs a Hugging Face config (its generate() and KV cache)")
        if self.batch <= 0 or self.seq_len <= 0:
            raise UsageError(f"batch and context must be positive, got {self.batch}, {self.seq_len}")
        if self.hf_config is not None and "model_type" not in self.hf_config:
            raise UsageError("the Hugging Face config has no 'model_type'")
        if self.preset is not None and self.dtype == "fp16":
            raise UsageError("lmperf presets run fp32 or bf16 (autocast), not fp16")
        return self

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

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
# How the step runs besides eager PyTorch, as a served or trained model often does: compiled by
# torch.compile in one of its modes ("reduce-overhead" replays CUDA graphs), and for Hugging Face
# Llama-family models Liger-Kernel's fused RMSNorm, SwiGLU, rotary and linear cross-entropy.
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "reduce-overhead")
KERNEL_SETS = ("liger",)
LIGER_FAMILIES = ("llama", "mistral", "qwen2")
LOSSES = ("eager", "fused")  # lmperf presets' train-step loss: "fused" is lmperf's own


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
    compile: str | None = None  # a torch.compile mode for the whole model, None for eager
    kernels: str | None = None  # "liger": Liger-Kernel's patched Hugging Face model
    loss: str = "eager"
    static_cache: bool = False  # generate with a static KV cache (Hugging Face compiles its decode)

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
        self._validate_runtime()
        if self.preset is not None and self.dtype == "fp16":
            raise UsageError("lmperf presets run fp32 or bf16 (autocast), not fp16")
        return self

    def _validate_runtime(self) -> None:
        """The compile mode, kernel set, loss and cache: each only where it can run."""
        if self.compile is not None and self.compile not in COMPILE_MODES:
            raise UsageError(f"unknown compile mode {self.compile!r}; choose from {', '.join(COMPILE_MODES)}")
        if self.kernels is not None:
            if self.kernels not in KERNEL_SETS:
                raise UsageError(f"unknown kernel set {self.kernels!r}; choose from {', '.join(KERNEL_SETS)}")
            family = (self.hf_config or {}).get("model_type")
            if family not in LIGER_FAMILIES:
                raise UsageError(f"--kernels liger patches Hugging Face {', '.join(LIGER_FAMILIES)} models only")
        if self.loss not in LOSSES:
            raise UsageError(f"unknown loss {self.loss!r}; choose from {', '.join(LOSSES)}")
        if self.loss == "fused" and (self.preset is None or self.mode != "train-step"):
            raise UsageError("--loss fused (lmperf's fused linear cross-entropy) runs an lmperf preset's train-step")
        if self.static_cache and self.mode != "generate":
            raise UsageError("a static KV cache is for mode generate")
        if self.static_cache and self.compile is not None:
            raise UsageError("generate with a static cache compiles its decode itself; give no compile mode")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

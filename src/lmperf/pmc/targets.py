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
LIGER_FAMILIES = ("llama", "mistral", "qwen2", "qwen3")
LOSSES = ("eager", "fused")  # lmperf presets' train-step loss: "fused" is lmperf's own
# What a server may do that pmc must read through (issue 48's limits), each a Hugging Face run:
# padded requests, a draft model (speculative decoding), quantised weights (lmperf.pmc.quantized),
# one rank of tensor parallelism (lmperf.pmc.tensor_parallel).
QUANTIZATIONS = ("fp8", "int8", "int8-weight-only")  # lmperf.pmc.quantized runs them
INT_MM_MIN_ROWS = 16  # torch._int_mm on CUDA takes more rows than this
QUANTIZED_FAMILIES = ("llama", "mistral", "qwen2", "gpt_neox", "opt")  # layers of nn.Linear (GPT-2's are Conv1D)
TP_FAMILIES = ("llama", "mistral", "qwen2")  # configs that take an explicit head_dim
TP_EMULATION = "emulated TP rank (no communication kernels)"
TP_NCCL = "NCCL TP rank (all-reduce after the embedding and each attention and MLP block, logits all-gathered)"


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
    request_lengths: tuple[int, ...] = ()  # each request's true length, left-padded to seq_len
    draft_config: dict | None = None  # generate: a draft model's config.json dict (speculative)
    quantize: str | None = None  # one of QUANTIZATIONS: the decoder's Linear layers in 8 bits
    tensor_parallel: int = 1  # > 1: rank 0's shard of every attention and MLP GEMM
    tp_nccl: bool = False  # the other ranks run too, one GPU each, and the ranks communicate with NCCL

    def __post_init__(self) -> None:
        object.__setattr__(self, "attention", OLD_ATTENTION_NAMES.get(self.attention, self.attention))
        object.__setattr__(self, "request_lengths", tuple(self.request_lengths))  # a JSON list

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
        self._validate_serving()
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

    def serving_limits(self) -> list[str]:
        """The serving limits this target runs (at most one is valid)."""
        return [
            name
            for name, used in (
                ("request lengths", bool(self.request_lengths)),
                ("a draft model", self.draft_config is not None),
                ("quantised weights", self.quantize is not None),
                ("tensor parallelism", self.tensor_parallel != 1 or self.tp_nccl),
            )
            if used
        ]

    def _validate_serving(self) -> None:
        """Padded requests, a draft model, quantised weights, a TP rank: one per target, each an
        eager Hugging Face run where it can run."""
        used = self.serving_limits()
        if not used:
            return
        if len(used) > 1:
            raise UsageError(f"one serving limit per target: {' and '.join(used)} given together")
        if self.hf_config is None or self.compile is not None or self.kernels is not None:
            raise UsageError(
                f"{used[0]}: only with an eager Hugging Face config (no preset, compile mode or kernel set)"
            )
        if self.request_lengths:
            self._validate_padding()
        if self.draft_config is not None:
            self._validate_draft()
        if self.quantize is not None:
            self._validate_quantized()
        if self.tensor_parallel != 1 or self.tp_nccl:
            self._validate_tensor_parallel()

    def _validate_padding(self) -> None:
        lengths = self.request_lengths
        if self.mode == "train-step" or len(lengths) != self.batch:
            raise UsageError(f"request lengths: one per request of the batch ({self.batch}), forward or generate")
        if not all(isinstance(n, int) and 1 <= n <= self.seq_len for n in lengths) or min(lengths) == self.seq_len:
            raise UsageError(f"request lengths must lie in 1..{self.seq_len} (the padded length), one of them shorter")

    def _validate_draft(self) -> None:
        draft = self.draft_config
        if self.mode != "generate" or self.batch != 1 or self.static_cache:
            raise UsageError(
                "a draft model runs Hugging Face's assisted generate: mode generate, batch 1, no static cache"
            )
        if (draft.get("model_type"), draft.get("vocab_size")) != (
            self.hf_config["model_type"],
            self.hf_config.get("vocab_size"),
        ):
            raise UsageError("the draft model must be of the target's family and vocabulary (model_type, vocab_size)")

    def _validate_quantized(self) -> None:
        if self.quantize not in QUANTIZATIONS:
            raise UsageError(f"unknown quantisation {self.quantize!r}; choose from {', '.join(QUANTIZATIONS)}")
        if self.mode != "forward" or self.dtype != "bf16":
            raise UsageError("quantised weights run a bf16 forward (their GEMMs return bf16)")
        if self.quantize == "int8" and self.batch * self.seq_len <= INT_MM_MIN_ROWS:
            raise UsageError(f"int8 W8A8 runs torch._int_mm, which needs more than {INT_MM_MIN_ROWS} token rows")
        if self.hf_config["model_type"] not in QUANTIZED_FAMILIES:
            raise UsageError(f"quantised weights replace nn.Linear layers: {', '.join(QUANTIZED_FAMILIES)} models")

    def _validate_tensor_parallel(self) -> None:
        degree, fields = self.tensor_parallel, self.hf_config
        if not isinstance(degree, int) or degree < 1 or self.mode != "forward":
            raise UsageError(f"tensor parallel degree {degree!r}: a whole number >= 1, for a forward")
        if fields["model_type"] not in TP_FAMILIES:
            raise UsageError(f"a tensor-parallel rank is built for {', '.join(TP_FAMILIES)} configs")
        heads = fields.get("num_attention_heads", 0)
        sizes = (heads, fields.get("num_key_value_heads", heads), fields.get("intermediate_size", 0))
        if not all(size and size % degree == 0 for size in (*sizes, fields.get("vocab_size", 0))):
            raise UsageError(f"tensor parallel degree {degree} must divide heads, K/V heads, d_ff and the vocabulary")
        if self.tp_nccl and degree < 2:
            raise UsageError("NCCL tensor parallelism needs a degree of 2 or more")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

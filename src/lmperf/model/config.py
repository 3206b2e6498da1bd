"""Model configuration and the reference presets."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from lmperf.attention_names import check_implementation
from lmperf.errors import UsageError

MLP_KINDS = ("swiglu", "gelu")  # SwiGLU (Llama: w1, w3, w2) or a two-matrix GELU MLP (GPT-2)


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only Transformer LM: pre-norm RMSNorm blocks, rotary, SwiGLU (or GELU) MLP.

    `n_kv_heads` below `n_heads` is grouped-query attention (1: multi-query): K and V are projected
    to that many heads, each shared by n_heads / n_kv_heads query heads; None means n_heads.
    `tie_embeddings` makes the LM head reuse the embedding matrix.
    """

    d_model: int
    d_ff: int
    n_layers: int
    n_heads: int
    vocab_size: int = 10_000
    max_seq_len: int = 8192
    rope_theta: float = 10_000.0
    norm_eps: float = 1e-5
    attention: str = "naive"
    n_kv_heads: int | None = None
    tie_embeddings: bool = False
    mlp: str = "swiglu"

    def __post_init__(self):
        if self.n_kv_heads is None:  # rows and resume keys carry the resolved number
            object.__setattr__(self, "n_kv_heads", self.n_heads)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_width(self) -> int:
        """Width of the K (and of the V) projection: n_kv_heads · head_dim."""
        return self.n_kv_heads * self.head_dim

    def validate(self) -> "ModelConfig":
        for name in ("d_model", "d_ff", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "max_seq_len"):
            if getattr(self, name) <= 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise UsageError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise UsageError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        if self.head_dim % 2:
            raise UsageError(f"head dimension {self.head_dim} is odd; rotary embeddings need an even one")
        check_implementation(self.attention)
        if self.mlp not in MLP_KINDS:
            raise UsageError(f"unknown mlp {self.mlp!r}; choose from {', '.join(MLP_KINDS)}")
        return self

    def with_(self, **changes) -> "ModelConfig":
        return replace(self, **changes).validate()

    def to_dict(self) -> dict:
        return asdict(self)


# Reference sizes (GPT-2 small ... 2.7B widths); vocabulary 10k as in the notes lmperf started from.
PRESETS: dict[str, dict] = {
    "tiny": dict(d_model=64, d_ff=256, n_layers=2, n_heads=4, vocab_size=512, max_seq_len=1024),
    "small": dict(d_model=768, d_ff=3072, n_layers=12, n_heads=12),
    "medium": dict(d_model=1024, d_ff=4096, n_layers=24, n_heads=16),
    "large": dict(d_model=1280, d_ff=5120, n_layers=36, n_heads=20),
    "xl": dict(d_model=1600, d_ff=6400, n_layers=48, n_heads=25),
    "2.7B": dict(d_model=2560, d_ff=10240, n_layers=32, n_heads=32),
    # Stanford CS336 (2026) assignment 2's leaderboard step: an 8B model at 32k context, and the
    # handout's 10B size.
    "cs336-8b": dict(d_model=4096, d_ff=11008, n_layers=34, n_heads=32, vocab_size=151_936, max_seq_len=32_768),
    "10B": dict(d_model=4608, d_ff=12288, n_layers=50, n_heads=36, vocab_size=10_000, max_seq_len=32_768),
}
REFERENCE_PRESETS = ("small", "medium", "large", "xl", "2.7B")
DEFAULT_BATCH = 4


def preset(name: str, **overrides) -> ModelConfig:
    """The named preset, with any field overridden; unknown names are a UsageError."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    unknown = sorted(set(overrides) - {f.name for f in fields(ModelConfig)})
    if unknown:
        raise UsageError(f"unknown model field(s) {', '.join(unknown)}")
    return ModelConfig(**{**PRESETS[name], **overrides}).validate()


def check_context(config: ModelConfig, seq_len: int) -> None:
    if seq_len <= 0:
        raise UsageError(f"context length must be positive, got {seq_len}")
    if seq_len > config.max_seq_len:
        raise UsageError(f"context length {seq_len} exceeds the model's maximum {config.max_seq_len}")


def mlp_matrices(config: ModelConfig) -> int:
    """Weight matrices of d_model × d_ff in one MLP: w1, w3, w2 for SwiGLU; w1, w2 for GELU."""
    return 3 if config.mlp == "swiglu" else 2


def block_matmul_parameters(config: ModelConfig) -> int:
    """One block's matmul weights: q and o (d×d), k and v (d×kv_width), the MLP's matrices."""
    d = config.d_model
    return 2 * d * d + 2 * d * config.kv_width + mlp_matrices(config) * d * config.d_ff


def parameter_count(config: ModelConfig) -> dict[str, int]:
    """Closed-form parameter counts: embedding, blocks, final norm, LM head (0 when tied)."""
    d = config.d_model
    per_block = block_matmul_parameters(config) + 2 * d  # + two RMSNorm gains
    counts = {
        "embedding": config.vocab_size * d,
        "blocks": config.n_layers * per_block,
        "final_norm": d,
        "lm_head": 0 if config.tie_embeddings else d * config.vocab_size,
    }
    counts["total"] = sum(counts.values())
    return counts

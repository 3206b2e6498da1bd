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
    `head_dim` is the width of one attention head; None means d_model / n_heads. The attention is
    n_heads · head_dim wide (`attention_width`), which need not be d_model (Qwen3-0.6B: 16 heads of
    128 over d_model 1024): the query projection widens to it, the output projection comes back.
    `qk_norm` normalises q and k per head (an RMSNorm over head_dim, a gain each) before rotary.
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
    head_dim: int | None = None
    qk_norm: bool = False

    def __post_init__(self):
        if self.n_kv_heads is None:  # rows and resume keys carry the resolved number
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        # Where d_model / n_heads is no whole number head_dim stays None, for validate to refuse
        if self.head_dim is None and self.n_heads > 0 and self.d_model % self.n_heads == 0:
            object.__setattr__(self, "head_dim", self.d_model // self.n_heads)

    @property
    def attention_width(self) -> int:
        """Width of the query projection and of the attention's output: n_heads · head_dim."""
        return self.n_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Width of the K (and of the V) projection: n_kv_heads · head_dim."""
        return self.n_kv_heads * self.head_dim

    def validate(self) -> "ModelConfig":
        for name in ("d_model", "d_ff", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "max_seq_len"):
            if getattr(self, name) <= 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)}")
        if self.head_dim is None:
            raise UsageError(
                f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}, and no head_dim is given"
            )
        if self.head_dim <= 0:
            raise UsageError(f"head_dim must be positive, got {self.head_dim}")
        if self.n_heads % self.n_kv_heads:
            raise UsageError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        if self.head_dim % 2:
            raise UsageError(f"head dimension {self.head_dim} is odd; rotary embeddings need an even one")
        check_implementation(self.attention)
        if self.mlp not in MLP_KINDS:
            raise UsageError(f"unknown mlp {self.mlp!r}; choose from {', '.join(MLP_KINDS)}")
        return self

    def with_(self, **changes) -> "ModelConfig":
        """This config with `changes`, validated. A head_dim of d_model / n_heads is the derived
        one and follows new widths and heads; any other is the model's own and stays."""
        if self.head_dim is None or self.attention_width == self.d_model:
            changes.setdefault("head_dim", None)
        return replace(self, **changes).validate()

    def to_dict(self) -> dict:
        """The fields; head_dim only where the attention is not d_model wide and qk_norm only where
        on, so that a model without either has the keys, and so the resume key, of rows that
        never name them."""
        values = asdict(self)
        if self.head_dim is not None and self.attention_width == self.d_model:
            del values["head_dim"]
        if not self.qk_norm:
            del values["qk_norm"]
        return values


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
    """One block's matmul weights: q and o (d×attention_width), k and v (d×kv_width), the MLP's
    matrices."""
    d = config.d_model
    return 2 * d * config.attention_width + 2 * d * config.kv_width + mlp_matrices(config) * d * config.d_ff


def parameter_count(config: ModelConfig) -> dict[str, int]:
    """Closed-form parameter counts: embedding, blocks, final norm, LM head (0 when tied)."""
    d = config.d_model
    # + the two RMSNorms' gains, and with qk_norm q's and k's per-head ones
    per_block = block_matmul_parameters(config) + 2 * d + (2 * config.head_dim if config.qk_norm else 0)
    counts = {
        "embedding": config.vocab_size * d,
        "blocks": config.n_layers * per_block,
        "final_norm": d,
        "lm_head": 0 if config.tie_embeddings else d * config.vocab_size,
    }
    counts["total"] = sum(counts.values())
    return counts

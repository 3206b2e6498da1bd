"""The one reader of Hugging Face model configs: a config.json (or a name already in the local
Hugging Face cache) mapped onto lmperf's ModelConfig, with what had to be approximated.

Families and their key names (`model_type`): llama, mistral, qwen2, qwen3 (SwiGLU, rotary,
RMSNorm: lmperf's own block; Qwen3 adds its per-head q and k norms), gpt2, gpt_neox, opt
(two-matrix MLP; lmperf runs it as its GELU MLP). A `head_dim` that differs from hidden_size /
heads (Qwen3-0.6B's 16 heads of 128 over 1024; Mistral-Nemo's 32 of 128 over 5120) makes the
attention that wide; Qwen3 has 128 where its config names none.
Whatever lmperf's block does differently from the family is listed in `approximations`, which
bench writes into each row: learned position tables run as rotary, LayerNorm as RMSNorm, biases
are left out, ReLU runs as GELU. None of these change the matmul FLOPs by more than the biases.

A path on disk is read as plain JSON, so it needs no `transformers`; a name that is not a path
is looked up with `transformers.AutoConfig` in the local cache only (never downloaded).
Missing optional keys take the family's Hugging Face default.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lmperf.errors import UsageError
from lmperf.model.config import ModelConfig


@dataclass(frozen=True)
class Family:
    """Key names and defaults of one Hugging Face family, and how lmperf's block differs."""

    gated: bool  # SwiGLU (gate_proj, up_proj, down_proj) rather than a two-matrix MLP
    tied_default: bool
    positions_default: int
    approximations: tuple[str, ...]
    qk_norm: bool = False  # q_norm and k_norm over each head (Qwen3)
    head_dim_default: int | None = None  # None: hidden_size / heads


_LLAMA_LIKE = dict(gated=True, tied_default=False)
_LAYERNORM = "LayerNorm run as RMSNorm"
_NO_BIASES = "linear biases left out"
FAMILIES: dict[str, Family] = {
    "llama": Family(**_LLAMA_LIKE, positions_default=2048, approximations=()),
    "mistral": Family(**_LLAMA_LIKE, positions_default=32768, approximations=()),
    "qwen2": Family(**_LLAMA_LIKE, positions_default=32768, approximations=("Q/K/V projection biases left out",)),
    "qwen3": Family(**_LLAMA_LIKE, positions_default=32768, approximations=(), qk_norm=True, head_dim_default=128),
    "gpt2": Family(False, True, 1024, ("learned position table run as rotary", _LAYERNORM, _NO_BIASES)),
    "gpt_neox": Family(False, False, 2048, (_LAYERNORM, _NO_BIASES)),
    "opt": Family(
        False, True, 2048, ("learned position table run as rotary", _LAYERNORM, "ReLU run as GELU", _NO_BIASES)
    ),
}


@dataclass(frozen=True)
class HFModel:
    """A Hugging Face config as lmperf runs it: its name, the shape, what was approximated."""

    name: str
    config: ModelConfig
    approximations: tuple[str, ...]


def _first(fields: dict, *keys: str, default=None):
    return next((fields[k] for k in keys if fields.get(k) is not None), default)


def from_fields(fields: dict, name: str = "hf") -> HFModel:
    """ModelConfig of a config.json's fields (`model_type` says the family)."""
    model_type = fields.get("model_type")
    if model_type not in FAMILIES:
        raise UsageError(f"Hugging Face model_type {model_type!r} is not mapped; lmperf reads {', '.join(FAMILIES)}")
    family = FAMILIES[model_type]
    d = _first(fields, "hidden_size", "n_embd")
    heads = _first(fields, "num_attention_heads", "n_head")
    layers = _first(fields, "num_hidden_layers", "n_layer")
    if not (d and heads and layers):
        raise UsageError(f"the {model_type} config lacks hidden size, attention heads or layers")
    # transformers 5 writes rope_theta and the scaling into rope_parameters (a config.json of an
    # older release has them at the top level)
    rope = fields.get("rope_parameters") if isinstance(fields.get("rope_parameters"), dict) else {}
    approximations = list(family.approximations) + _approximations_of(model_type, fields, rope, d)
    config = ModelConfig(
        d_model=d,
        d_ff=_first(fields, "intermediate_size", "ffn_dim", "n_inner", default=4 * d),
        n_layers=layers,
        n_heads=heads,
        n_kv_heads=_first(fields, "num_key_value_heads", default=heads),
        vocab_size=_first(fields, "vocab_size", default=50257),
        max_seq_len=_first(fields, "max_position_embeddings", "n_positions", default=family.positions_default),
        rope_theta=float(_first(fields, "rope_theta", default=rope.get("rope_theta", 10_000.0))),
        norm_eps=float(_first(fields, "rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", default=1e-5)),
        tie_embeddings=bool(_first(fields, "tie_word_embeddings", default=family.tied_default)),
        mlp="swiglu" if family.gated else "gelu",
        head_dim=_first(fields, "head_dim", default=family.head_dim_default),
        qk_norm=family.qk_norm,
    )
    return HFModel(name, config.validate(), tuple(approximations))


def _approximations_of(model_type: str, fields: dict, rope: dict, d_model: int) -> list[str]:
    """What lmperf's block does differently from this config, for the features it turns on."""
    found = []
    if fields.get("rope_scaling") or rope.get("rope_type", "default") != "default":
        found.append("rope scaling left out (it changes no cost)")
    # Qwen2 and Qwen3 name a window they use only when use_sliding_window is set; Mistral uses any it names
    windowed = fields.get("sliding_window") is not None and fields.get("use_sliding_window", model_type == "mistral")
    if model_type in ("mistral", "qwen2", "qwen3") and windowed:
        found.append("sliding-window attention run as full causal attention")
    if model_type in ("llama", "qwen3") and fields.get("attention_bias"):
        found.append("Q/K/V/O projection biases left out")
    if model_type == "gpt_neox":
        rotary = _first(
            fields, "rotary_pct", "partial_rotary_factor", default=rope.get("partial_rotary_factor", 0.25)
        )  # GPT-NeoX's default: a quarter
        if float(rotary) < 1.0:
            found.append("partial rotary run on the whole head")
        if fields.get("use_parallel_residual", True):
            found.append("parallel residual run sequentially")
    if model_type == "opt" and fields.get("word_embed_proj_dim", d_model) != d_model:
        found.append("word embedding projection left out")
    return found


def read_fields(path_or_name: str | Path) -> tuple[dict, str]:
    """(fields, name) of a config.json file, a folder holding one, or a cached Hugging Face name."""
    path = Path(path_or_name)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        try:
            fields = json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise UsageError(f"cannot read {path}: {error.strerror}") from None
        except json.JSONDecodeError as error:
            raise UsageError(f"{path} is not JSON: {error.msg} at line {error.lineno}") from None
        if not isinstance(fields, dict):
            raise UsageError(f"{path} is not a JSON object")
        return fields, path.parent.name if path.name == "config.json" else path.stem
    return _cached_fields(str(path_or_name)), str(path_or_name)


def _cached_fields(name: str) -> dict:
    try:
        from transformers import AutoConfig  # the optional `hf` extra
    except ImportError:
        raise UsageError(
            f"{name!r} is not a config.json on disk; reading a Hugging Face name needs "
            "transformers (pip install -e '.[hf]')"
        ) from None
    try:  # local_files_only: a name must already be in the cache; nothing is downloaded
        return AutoConfig.from_pretrained(name, local_files_only=True).to_dict()
    except (OSError, ValueError) as error:
        raise UsageError(
            f"{name!r} is neither a config.json on disk nor in the local Hugging Face cache "
            f"({str(error).splitlines()[0][:120]})"
        ) from None


def read_hf_config(path_or_name: str | Path) -> HFModel:
    """The model a Hugging Face config describes, as lmperf runs it."""
    fields, name = read_fields(path_or_name)
    return from_fields(fields, name)

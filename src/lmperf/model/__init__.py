"""The Transformer LM, its configuration and presets."""

from lmperf.model.config import (
    DEFAULT_BATCH,
    MLP_KINDS,
    PRESETS,
    REFERENCE_PRESETS,
    ModelConfig,
    check_context,
    parameter_count,
    preset,
)
from lmperf.model.transformer import TransformerLM

__all__ = [
    "DEFAULT_BATCH",
    "MLP_KINDS",
    "PRESETS",
    "REFERENCE_PRESETS",
    "ModelConfig",
    "TransformerLM",
    "check_context",
    "parameter_count",
    "preset",
]

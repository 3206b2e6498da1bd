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


def __getattr__(name: str):
    # TransformerLM (and torch with it) is imported on first use: the CLI reads configurations
    # and presets before it knows whether a command runs a model at all.
    if name == "TransformerLM":
        from lmperf.model.transformer import TransformerLM

        return TransformerLM
    raise AttributeError(f"module 'lmperf.model' has no attribute {name!r}")


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

"""lmperf: measure, explain and speed up the GPU cost of Transformer language models."""

__version__ = "0.1.0"

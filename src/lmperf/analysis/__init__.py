"""Analytic models of the Transformer's cost: FLOPs (flops.py), memory, and GPU peaks (peaks.py)."""

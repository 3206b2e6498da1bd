"""Analytic models of the Transformer's cost: FLOPs (flops.py), memory (memory.py), memory per
rank under data parallelism (sharding.py), and GPU peaks (peaks.py)."""

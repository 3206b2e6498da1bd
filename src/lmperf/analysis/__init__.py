"""Analytic models of the Transformer's cost: FLOPs (flops.py), memory (memory.py), memory per
rank under data parallelism (sharding.py), the collectives' bus bandwidth definitions
(collectives.py), and GPU peaks (peaks.py)."""

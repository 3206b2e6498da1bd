"""The table columns that name a bench row's configuration (lmperf.run.sweep.BenchRow), shared
by bench's and bench-dist's reports: a run's tables show those that vary and say the others once."""

from __future__ import annotations

from lmperf.report import tables

CONFIG_COLUMNS: list[tables.Column] = [
    ("preset", "preset", ""),
    ("ctx", "seq_len", "d"),
    ("mode", "mode", ""),
    ("prec", "precision", ""),
    ("compile", "compile", ""),
    ("attn", "attention", ""),
    ("batch", "batch", "d"),
    ("param dtype", "param_dtype", ""),
    ("loss", "loss", ""),
    ("checkpoint", "checkpoint", ""),
    ("optimizer", "optimizer", ""),
]
IDENTIFYING = tuple(key for _, key, _ in CONFIG_COLUMNS)

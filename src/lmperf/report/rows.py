"""What every result row shares: its status, the error that ended it, and where it was measured.

A row's configuration and figures are its own fields (a dataclass deriving from ResultRow, or a
dict for the nested profile and memory rows); `failure_row` turns an exception into the row's
status and error the same way for all of them, so an out-of-memory is always status "oom".
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import TypeVar

import torch

ERROR_LENGTH = 200  # an error's first line, cut here: a row stays one readable line

Row = TypeVar("Row")


@dataclass(kw_only=True)
class ResultRow:
    status: str = "ok"  # ok | oom | error, and per feature e.g. skipped, unavailable
    error: str = ""
    env: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def is_out_of_memory(error: BaseException) -> bool:
    # Some backends (cuDNN, SDPA kernels) report an allocation failure as a plain RuntimeError.
    return isinstance(error, torch.OutOfMemoryError) or "out of memory" in str(error).lower()


def failure_row(row: Row, error: BaseException, status: str = "error") -> Row:
    """`row` (a ResultRow or a dict) marked as ended by `error`: status "oom" for an
    out-of-memory, otherwise `status` with the error's type; the error's first line either way."""
    first_line = (str(error).splitlines() or [""])[0][:ERROR_LENGTH]
    if is_out_of_memory(error):
        fields = {"status": "oom", "error": first_line}
    else:
        fields = {"status": status, "error": f"{type(error).__name__}: {first_line}"}
    return {**row, **fields} if isinstance(row, dict) else dataclasses.replace(row, **fields)

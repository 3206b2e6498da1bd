"""Run directories: `runs/<timestamp>-<command>/results.jsonl`, one JSON row per line.

Each row is appended and flushed to disk the moment it is finished, so an interrupted sweep
keeps every finished row, and tables or plots can be rebuilt from the file alone.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any, Iterable

from lmperf.errors import UsageError

RESULTS = "results.jsonl"


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path)

    @classmethod
    def create(cls, command: str, root: Path = Path("runs")) -> "RunDir":
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = Path(root) / f"{stamp}-{command}"
        suffix = 1
        while path.exists():  # two runs in the same second must not share a file
            suffix += 1
            path = Path(root) / f"{stamp}-{command}-{suffix}"
        path.mkdir(parents=True)
        return cls(path)

    @classmethod
    def resume(cls, path: Path) -> "RunDir":
        path = Path(path)
        if not (path / RESULTS).is_file():
            raise UsageError(f"cannot resume {path}: no {RESULTS} there")
        return cls(path)

    @property
    def results(self) -> Path:
        return self.path / RESULTS

    def append(self, row: dict[str, Any]) -> None:
        with open(self.results, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def rows(self) -> list[dict[str, Any]]:
        return read_rows(self.results)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a results file; a last line cut short by a crash is skipped, not fatal."""
    rows = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if number != len(lines):
                raise UsageError(f"{path}:{number} is not a JSON row") from None
    return rows


def key_of(row: dict[str, Any], key_fields: tuple[str, ...]) -> tuple:
    """A row's identity over `key_fields`, hashable: a nested value (a model's shape) becomes
    canonical JSON text."""
    return tuple(
        json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v
        for v in (row.get(field) for field in key_fields)
    )


def completed_keys(rows: Iterable[dict[str, Any]], key_fields: tuple[str, ...]) -> set[tuple]:
    return {key_of(row, key_fields) for row in rows}

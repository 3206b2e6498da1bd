"""Files written whole or not at all: a report is rendered into a temporary file beside its
place and renamed over it, so a full disk, a crash or a kill mid-write leaves the previous
version (or none), never a part of one."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable

from lmperf.errors import UsageError


def replace_whole(path: Path, write: Callable[[Path], object]) -> Path:
    """`write(temporary)`, then the temporary file renamed to `path` (atomic on one file system).
    A failure leaves `path` as it was and is a UsageError naming it."""
    path = Path(path)
    temporary = path.with_name(f".{path.stem}.partial{path.suffix}")  # same suffix: savefig reads the format from it
    try:
        write(temporary)
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None
    return path


def write_text_whole(path: Path, text: str) -> Path:
    return replace_whole(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))

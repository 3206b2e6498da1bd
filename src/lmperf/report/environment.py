"""Where a measurement was taken: GPU, driver, library versions, commit, date."""

from __future__ import annotations

import datetime as dt
import functools
import os
import platform
import subprocess
from pathlib import Path
from typing import Sequence

import torch


def _git_commit() -> str:
    # A copy of the tree without .git (e.g. on a lent GPU machine) gets the commit from outside.
    if os.environ.get("LMPERF_COMMIT"):
        return os.environ["LMPERF_COMMIT"]
    repo = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5,
        ).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        )
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "n/a"


def _triton_version() -> str:
    try:
        import triton
    except ImportError:
        return "n/a"
    return triton.__version__


def device_name(device: str | torch.device) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()})"


@functools.lru_cache(maxsize=None)
def environment(device: str = "cpu") -> dict[str, str]:
    """A dict every result row carries (cached: the git and nvidia-smi calls cost ~0.1 s)."""
    is_cuda = torch.device(device).type == "cuda"
    return {
        "device": device_name(device),
        "driver": _driver_version() if is_cuda else "n/a",
        "cuda": torch.version.cuda or "n/a",
        "torch": torch.__version__,
        "triton": _triton_version(),
        "commit": _git_commit(),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": platform.node(),
    }


def measured_on(rows: Sequence[dict]) -> str:
    """The provenance paragraph every report opens with, from the last row that carries an
    environment ("" for a run with none yet)."""
    env = next((row["env"] for row in reversed(rows) if row.get("env")), None)
    if env is None:
        return ""
    return "Measured on {device} (driver {driver}), torch {torch}, triton {triton}, commit {commit}, {date}.\n\n".format(**env)

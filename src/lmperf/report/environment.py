"""Where a measurement was taken: GPU, driver, library versions, commit, date."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Sequence

import torch


PACKAGE = Path(__file__).resolve().parents[1]  # lmperf's own source folder


def source_commit(package: Path = PACKAGE) -> str:
    """The version of lmperf that measured: LMPERF_COMMIT when set (a copy of the tree shipped
    to a lent GPU machine); else the git commit of the checkout that holds `package` (not the
    current directory's repository), "-dirty" with uncommitted changes; else, for a copy
    without .git or an installed wheel, the package version and a hash of its source files."""
    if os.environ.get("LMPERF_COMMIT"):
        return os.environ["LMPERF_COMMIT"]
    return _git_commit(package) or _source_fingerprint(package)


def _git(package: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(package), *args], capture_output=True, text=True, timeout=5)


def _git_commit(package: Path) -> str | None:
    try:
        # The package's files must be tracked there: an installed copy inside some other
        # repository (a virtual environment in a project) is not that repository's commit.
        if _git(package, "ls-files", "--error-unmatch", "__init__.py").returncode != 0:
            return None
        head = _git(package, "rev-parse", "--short", "HEAD")
        dirty = _git(package, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


def _source_fingerprint(package: Path) -> str:
    """`<version>+sources.<12 hex>`: SHA-256 over every .py file's relative path and bytes."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    try:
        version = importlib.metadata.version("lmperf")
    except importlib.metadata.PackageNotFoundError:
        version = "uninstalled"
    return f"{version}+sources.{digest.hexdigest()[:12]}"


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
        "commit": source_commit(),
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

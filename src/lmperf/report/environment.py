"""Where a measurement was taken: GPU, driver, library versions, lmperf's commit and the hash of
the sources that ran, date.

A row's `commit` says which version of lmperf measured; `sources` hashes the .py files that
actually ran, always, and `sources_match_commit` says whether they are that commit's files
(checked with git where the commit is at hand; None where it cannot be checked), so a row made
from a tree that differed from the commit it names (LMPERF_COMMIT set by hand, an edited copy)
says so.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence

import torch


PACKAGE = Path(__file__).resolve().parents[1]  # lmperf's own source folder


def source_commit(package: Path = PACKAGE) -> str:
    """The version of lmperf that measured: LMPERF_COMMIT when set (a copy of the tree shipped
    to a lent GPU machine); else the git commit of the checkout that holds `package` (not the
    current directory's repository), "-dirty" with uncommitted changes; else, for a copy
    without .git or an installed wheel, the package version and a hash of its source files."""
    if os.environ.get("LMPERF_COMMIT"):
        return os.environ["LMPERF_COMMIT"]
    return _git_commit(package) or f"{_version()}+sources.{source_hash(package)}"


def source_hash(package: Path = PACKAGE) -> str:
    """12 hex digits of SHA-256 over every .py file's path (relative to `package`) and bytes."""
    return _digest((path.relative_to(package), path.read_bytes()) for path in package.rglob("*.py"))


def commit_source_hash(commit: str, package: Path = PACKAGE) -> str | None:
    """source_hash of `package` as `commit` has it, read with git; None where git, a checkout
    holding `package` or the commit is not at hand."""
    try:
        if not _tracked(package):
            return None
        listing = _git(package, "ls-tree", "-r", "--name-only", commit, "--", ".")  # relative to package
        names = [name for name in listing.stdout.splitlines() if name.endswith(".py")]
        if listing.returncode != 0 or not names:
            return None
        batch = subprocess.run(
            ["git", "-C", str(package), "cat-file", "--batch"],
            capture_output=True,
            timeout=30,
            input="".join(f"{commit}:./{name}\n" for name in names).encode(),
        )
    except (OSError, subprocess.SubprocessError):
        return None
    contents = _batch_contents(batch.stdout, len(names))
    if batch.returncode != 0 or contents is None:
        return None
    return _digest(zip(map(PurePosixPath, names), contents))


def sources_match_commit(commit: str, package: Path = PACKAGE) -> bool | None:
    """Whether the sources that run are `commit`'s (a "-dirty" suffix ignored: the hash says
    what differs); None where the commit's files cannot be read."""
    committed = commit_source_hash(commit.removesuffix("-dirty"), package)
    return None if committed is None else committed == source_hash(package)


def _digest(files: Iterable[tuple[PurePosixPath, bytes]]) -> str:
    """SHA-256 over (relative path, bytes) pairs in path order."""
    digest = hashlib.sha256()
    for relative, data in sorted(files, key=lambda pair: PurePosixPath(pair[0])):
        digest.update(PurePosixPath(relative).as_posix().encode() + b"\0" + data)
    return digest.hexdigest()[:12]


def _batch_contents(output: bytes, count: int) -> list[bytes] | None:
    """The `count` objects `git cat-file --batch` printed ("<oid> <type> <size>\\n<bytes>\\n"
    each), or None if one is missing."""
    contents, position = [], 0
    for _ in range(count):
        end = output.find(b"\n", position)
        header = output[position:end].split()
        if len(header) != 3 or header[1] != b"blob":
            return None
        size = int(header[2])
        contents.append(output[end + 1 : end + 1 + size])
        position = end + 1 + size + 1
    return contents


def _version() -> str:
    try:
        return importlib.metadata.version("lmperf")
    except importlib.metadata.PackageNotFoundError:
        return "uninstalled"


def _git(package: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(package), *args], capture_output=True, text=True, timeout=5)


def _tracked(package: Path) -> bool:
    """Whether `package` is tracked by the git checkout around it: an installed copy inside some
    other repository (a virtual environment in a project) is not that repository's."""
    return _git(package, "ls-files", "--error-unmatch", "__init__.py").returncode == 0


def _git_commit(package: Path) -> str | None:
    try:
        if not _tracked(package):
            return None
        head = _git(package, "rev-parse", "--short", "HEAD")
        dirty = _git(package, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


def _driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
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
    commit = source_commit()
    return {
        "device": device_name(device),
        "driver": _driver_version() if is_cuda else "n/a",
        "cuda": torch.version.cuda or "n/a",
        "torch": torch.__version__,
        "triton": _triton_version(),
        "commit": commit,
        "sources": source_hash(),
        "sources_match_commit": sources_match_commit(commit),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": platform.node(),
    }


def measured_on(rows: Sequence[dict]) -> str:
    """The provenance paragraph every report opens with, from the last row that carries an
    environment ("" for a run with none yet)."""
    env = next((row["env"] for row in reversed(rows) if row.get("env")), None)
    if env is None:
        return ""
    return (
        "Measured on {device} (driver {driver}), torch {torch}, triton {triton}, commit {commit}".format(**env)
        + _sources_said(env)
        + f", {env['date']}.\n\n"
    )


def _sources_said(env: dict) -> str:
    """' (sources <hash>, as committed)', or 'differing from it', or nothing for a row made
    before sources were recorded."""
    if "sources" not in env:
        return ""
    match = {True: ", as committed", False: ", differing from the commit", None: ""}[env.get("sources_match_commit")]
    return f" (sources {env['sources']}{match})"

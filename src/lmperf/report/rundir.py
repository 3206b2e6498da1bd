"""Run directories: `runs/<timestamp>-<command>/results.jsonl`, one JSON row per line.

Each row is appended and flushed to disk the moment it is finished, so an interrupted sweep
keeps every finished row, and tables or plots can be rebuilt from the file alone.

A directory also records which command made it and that command's arguments (`manifest.json`),
so `--resume DIR` continues exactly that sweep and no command writes into another's directory.
While a command writes, it holds a lock on the directory: a second writer is refused.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from lmperf.errors import UsageError
from lmperf.report.files import write_text_whole

RESULTS = "results.jsonl"
MANIFEST = "manifest.json"
SET_ASIDE = "results.partial.jsonl"  # cut-off last lines, kept for a human to look at
_LOCK = ".lock"
_NAME = re.compile(r"^\d{8}-\d{6}-(?P<command>[a-z-]+?)(-\d+)?$")
# Every command that writes run directories registers itself here, with how to tell its rows in
# a directory made before manifests existed (the ground layer knows no command by name).
_COMMANDS: dict[str, Callable[[dict], bool]] = {}


def register_command(name: str, makes_row: Callable[[dict], bool]) -> None:
    """Let `name`'s run directories be recognised; `makes_row(row)` says whether `name` writes
    such a row (the registered predicates exclude one another)."""
    _COMMANDS[name] = makes_row


def _new_directory(root: Path, name: str) -> Path:
    """root/name, or root/name-2, -3, ... when another run (this process or another) took it:
    mkdir either creates the directory or fails, so two runs never share one."""
    for suffix in itertools.count(1):
        path = root / (name if suffix == 1 else f"{name}-{suffix}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock_file = None

    @classmethod
    def create(cls, command: str, root: Path = Path("runs"), arguments: dict | None = None) -> "RunDir":
        """A new directory for `command`, locked, with its manifest written first."""
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        root = Path(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
            path = _new_directory(root, f"{stamp}-{command}")
        except OSError as error:
            raise UsageError(f"cannot create a run directory under {root}: {error.strerror}") from None
        run_dir = cls(path)
        run_dir._lock()
        run_dir._write_manifest(command, arguments or {})
        run_dir.results.touch()  # resumable from the start, even if no row ever finishes
        return run_dir

    @classmethod
    def resume(cls, path: Path, command: str) -> "RunDir":
        """An existing directory of `command`, locked for writing, its cut-off last row set aside.

        Another command's directory is refused before any file in it is touched."""
        check_resumable(path, command)
        run_dir = cls(path)
        run_dir._lock()
        run_dir._set_aside_cut_off_row()
        return run_dir

    @classmethod
    def attach(cls, path: Path) -> "RunDir":
        """The directory of the launcher that started this process (it holds the lock)."""
        return cls(path)

    @property
    def results(self) -> Path:
        return self.path / RESULTS

    def append(self, row: dict[str, Any]) -> None:
        """Add one row, on disk before this returns. A failed write (a full disk) takes back what
        it wrote, so the rows before it stay whole, and is a UsageError."""
        line = (json.dumps(row, sort_keys=True) + "\n").encode("utf-8")
        descriptor = os.open(self.results, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
        try:
            before = os.lseek(descriptor, 0, os.SEEK_END)
            try:
                _write_all(descriptor, line)
                os.fsync(descriptor)
            except OSError as error:
                with contextlib.suppress(OSError):
                    os.ftruncate(descriptor, before)
                raise UsageError(
                    f"cannot add a row to {self.results}: {error.strerror or error}; "
                    "the rows before it are kept (make room, then --resume)"
                ) from None
        finally:
            os.close(descriptor)

    def rows(self) -> list[dict[str, Any]]:
        return read_rows(self.results)

    def record_arguments(self, command: str, arguments: dict) -> None:
        """Give a directory made before manifests existed the arguments it is resumed with."""
        self._write_manifest(command, arguments)

    def _write_manifest(self, command: str, arguments: dict) -> None:
        manifest = {
            "command": command,
            "arguments": arguments,
            "directory": str(self.path.resolve()),
            "created": dt.datetime.now().isoformat(timespec="seconds"),
        }
        write_text_whole(self.path / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")

    def release(self) -> None:
        """Let another writer in before this process ends."""
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def _lock(self) -> None:
        """An exclusive lock for this process's lifetime; the OS drops it when the process ends."""
        try:
            self._lock_file = open(self.path / _LOCK, "a")
        except OSError as error:
            raise UsageError(f"cannot write in {self.path}: {error.strerror}") from None
        if not _try_lock(self._lock_file):
            self._lock_file.close()
            raise UsageError(f"{self.path} is in use by another lmperf process; wait for it to finish")

    def _set_aside_cut_off_row(self) -> None:
        """A last line a killed writer left unfinished moves to SET_ASIDE; its row runs again."""
        data = self.results.read_bytes()
        body = data.rstrip(b"\n")
        start = body.rfind(b"\n") + 1
        last = body[start:]
        if not last.strip():
            return
        try:
            json.loads(last)
        except ValueError:
            with open(self.path / SET_ASIDE, "ab") as aside:
                aside.write(last + b"\n")
            with open(self.results, "r+b") as f:
                f.truncate(start)
            print(
                f"lmperf: the last row of {self.results} was cut off ({len(last)} bytes); "
                f"kept in {SET_ASIDE}, that configuration runs again",
                file=sys.stderr,
            )
            return
        if not data.endswith(b"\n"):  # a whole row whose newline was lost
            with open(self.results, "ab") as f:
                f.write(b"\n")


def _write_all(descriptor: int, data: bytes) -> None:
    """os.write until every byte is out (one call may write fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def _try_lock(file) -> bool:
    """An exclusive, non-blocking lock on an open file; False when another process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows: msvcrt locks a byte range instead
        import msvcrt

        try:
            msvcrt.locking(file.fileno(), msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@contextlib.contextmanager
def reports_rendered(run_dir: RunDir | None, write_reports: Callable[[Path], list[Path]]) -> Iterator[list[Path]]:
    """Render `run_dir`'s reports from the rows on disk when the block ends, also when it ends
    early (Ctrl-C, SIGTERM, an error), then let another writer in; the list it gives receives the
    paths written. Reports that cannot be written while another error is on its way out do not
    hide that error. None (a process that writes no rows) renders nothing."""
    written: list[Path] = []
    if run_dir is None:
        yield written
        return
    try:
        yield written
    except BaseException:
        with contextlib.suppress(UsageError):
            written += write_reports(run_dir.path)
        raise
    else:
        written += write_reports(run_dir.path)
    finally:
        run_dir.release()  # a caller in the same process may resume it next


def read_manifest(path: Path) -> dict | None:
    """The manifest of a run directory (None: made before manifests); a damaged one is refused."""
    file = Path(path) / MANIFEST
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        raise UsageError(f"{file} is unreadable or not JSON") from None
    if not (
        isinstance(manifest, dict)
        and isinstance(manifest.get("command"), str)
        and isinstance(manifest.get("arguments", {}), dict)
    ):
        raise UsageError(f"{file} is not an lmperf manifest (a JSON object naming a command and its arguments)")
    manifest.setdefault("arguments", {})
    return manifest


def command_of(path: Path) -> str | None:
    """Which command made the run directory: its manifest, else its name, else its rows."""
    manifest = read_manifest(path)
    if manifest is not None:
        return manifest["command"]
    match = _NAME.match(Path(path).name)
    if match and match["command"] in _COMMANDS:
        return match["command"]
    rows = read_rows(Path(path) / RESULTS) if (Path(path) / RESULTS).is_file() else []
    return command_of_row(rows[0]) if rows else None


def command_of_row(row: dict) -> str | None:
    """The one registered command whose rows look like `row` (for directories made before
    manifests), or None."""
    makers = [name for name, makes_row in _COMMANDS.items() if makes_row(row)]
    return makers[0] if len(makers) == 1 else None


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a results file; a last line cut short by a crash is skipped, not fatal."""
    rows = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    while lines and not lines[-1].strip():
        lines.pop()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number != len(lines):
                raise UsageError(f"{path}:{number} is not a JSON row") from None
            continue
        if not isinstance(row, dict):
            raise UsageError(f"{path}:{number} is not a JSON object")
        rows.append(row)
    return rows


def key_of(row: dict[str, Any], key_fields: tuple[str, ...]) -> tuple:
    """A row's identity over `key_fields`, hashable: a nested value (a model's shape) becomes
    canonical JSON text."""
    return tuple(
        json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v
        for v in (row.get(field) for field in key_fields)
    )


def check_resumable(path: Path, command: str) -> None:
    """Refuse a directory that is missing or that another command made (reads only)."""
    path = Path(path)
    if not (path / RESULTS).is_file():
        raise UsageError(f"cannot resume {path}: no {RESULTS} there")
    made_by = command_of(path)
    if made_by is None:
        raise UsageError(
            f"{path} has no {MANIFEST} and its rows do not say which command made it; "
            f"not resuming it as `lmperf {command}`"
        )
    if made_by != command:
        raise UsageError(f"{path} is a run directory of `lmperf {made_by}`, not of `lmperf {command}`")


def open_run_dir(
    command: str,
    arguments: dict,
    resume: Path | None = None,
    root: Path = Path("runs"),
    given: set[str] | None = None,
    flag_of: Callable[[str], str] | None = None,
) -> tuple[RunDir, dict]:
    """A new run directory recording `arguments`, or `resume` continued with its own arguments.

    On resume an argument named in `given` (None: every argument) must equal the recorded one: a
    different value would mix two sweeps in one file. The refusal names the flag as the user types
    it (`flag_of` maps an argument, or a dotted path into a nested one, to its spelling). A
    directory made before manifests existed runs with `arguments`, which it records from then on."""
    if resume is None:
        return RunDir.create(command, root, arguments), dict(arguments)
    check_resumable(resume, command)
    recorded = read_manifest(resume)
    effective = (
        dict(arguments)
        if recorded is None
        else _recorded_arguments(resume, recorded, arguments, given, flag_of or _plain_flag)
    )
    run_dir = RunDir.resume(resume, command)
    if recorded is None:
        run_dir.record_arguments(command, arguments)
    return run_dir, effective


def _plain_flag(argument: str) -> str:
    return "--" + argument.rsplit(".", 1)[-1].replace("_", "-")


def _recorded_arguments(
    path: Path, manifest: dict, arguments: dict, given: set[str] | None, flag_of: Callable[[str], str]
) -> dict:
    recorded = manifest["arguments"]
    for name in sorted(arguments if given is None else given):
        if name not in recorded:
            continue
        for where, then, now in _differences(name, _comparable(recorded[name]), _comparable(arguments.get(name))):
            flag = flag_of(where)
            raise UsageError(
                f"{path} was made with {_shown(flag, then)}, not {_shown(flag, now)}; "
                f"resume it without {flag}, or start a new run"
            )
    return {**arguments, **recorded}


def _differences(where: str, then: Any, now: Any) -> Iterator[tuple[str, Any, Any]]:
    """(dotted path, recorded, given) of every leaf where two JSON values differ."""
    if isinstance(then, dict) and isinstance(now, dict):
        for key in sorted(set(then) | set(now)):
            yield from _differences(f"{where}.{key}", then.get(key), now.get(key))
    elif then != now:
        yield where, then, now


def _shown(flag: str, value: Any) -> str:
    return f"{flag} left out" if value is None else f"{flag} {value}"


def _comparable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))

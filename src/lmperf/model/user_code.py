"""Loading and calling the user's own code: `--module PKG.MOD:FACTORY` or `path/to/file.py:FACTORY`.

Anything the user's code raises becomes a UserCodeError: one line naming what failed, and the
user's traceback (their frames only: lmperf's and torch's are left out), which the CLI shows once
above that line. A name that cannot be found at all is a plain UsageError, with no traceback.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from lmperf.errors import UsageError

SPEC_FORM = "PKG.MOD:FACTORY or path/to/file.py:FACTORY"
LMPERF_FOLDER = str(Path(__file__).resolve().parents[1])


class UserCodeError(UsageError):
    """The user's code raised: `user_traceback` is theirs, shown once before the one-line error."""

    def __init__(self, message: str, error: BaseException):
        super().__init__(f"{message} raised {type(error).__name__}: {_first_line(error)} (traceback above)")
        self.user_traceback = user_traceback(error)


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [""])[0]


def _torch_folder() -> str:
    import torch

    return str(Path(torch.__file__).resolve().parent)


def user_traceback(error: BaseException) -> str:
    """The traceback of `error` with lmperf's and torch's frames left out, marked as the user's."""
    left_out = (LMPERF_FOLDER, _torch_folder())
    frames = [
        f for f in traceback.extract_tb(error.__traceback__) if not str(Path(f.filename).resolve()).startswith(left_out)
    ]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(error), error)
    return "Traceback from your module's code (lmperf's and torch's frames left out):\n" + "".join(lines)


def call_user(what: str, function: Callable, *args, **kwargs) -> Any:
    """`function(*args, **kwargs)`; whatever it raises becomes a UserCodeError about `what`."""
    try:
        return function(*args, **kwargs)
    except UsageError:  # lmperf's own line about the user's input, from a call inside
        raise
    except Exception as error:  # the user's code may raise anything
        raise UserCodeError(what, error) from error


def split_spec(spec: str) -> tuple[str, str]:
    """("pkg.mod" or "path/file.py", "factory") from `spec`."""
    where, _, name = spec.rpartition(":")
    if not where or not name.isidentifier():
        raise UsageError(f"--module takes {SPEC_FORM}, got {spec!r}")
    return where, name


def _is_path(where: str) -> bool:
    return where.endswith(".py") or os.sep in where or "/" in where


def _import_file(where: str) -> Any:
    path = Path(where).resolve()
    if not path.is_file():
        raise UsageError(f"--module: no file {where}")
    name = "lmperf_user_" + hashlib.sha256(str(path).encode()).hexdigest()[:8] + "_" + path.stem
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(path.parent))  # the file imports its neighbours, as `python file.py` would
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # classes defined there pickle and compile by this name
    try:
        call_user(f"--module: importing {where}", spec.loader.exec_module, module)
    except UsageError:
        del sys.modules[name]
        raise
    return module


def _import_name(where: str) -> Any:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` finds modules in the current directory
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as error:
        if error.name and (where == error.name or where.startswith(error.name + ".")):
            raise UsageError(f"--module: cannot import {where} (no module named {error.name!r})") from None
        raise UserCodeError(f"--module: importing {where}", error) from error
    except Exception as error:
        raise UserCodeError(f"--module: importing {where}", error) from error


def load_factory(spec: str) -> Callable:
    """The callable `spec` names, imported (a file by its path, a module as `python -m` would)."""
    where, name = split_spec(spec)
    module = _import_file(where) if _is_path(where) else _import_name(where)
    factory = getattr(module, name, None)
    if factory is None:
        raise UsageError(f"--module: {where} has no {name!r}")
    if not callable(factory):
        raise UsageError(f"--module: {where}:{name} is not callable (an object of type {type(factory).__name__})")
    return factory


def source_hash(objects: list[Any]) -> str:
    """12 hex digits of SHA-256 over the source files that define `objects` (functions, classes),
    torch's own files left out; by content, so a copy of the same files elsewhere hashes the same."""
    torch_folder = _torch_folder()
    files = set()
    for obj in objects:
        try:
            files.add(str(Path(inspect.getsourcefile(obj)).resolve()))
        except (TypeError, OSError):  # built-in or generated: no file of its own
            continue
    digests = sorted(hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files if not f.startswith(torch_folder))
    return hashlib.sha256("".join(digests).encode()).hexdigest()[:12]

"""What every command shares: one-line errors with exit status 2, one line and the rows' reports
when stopped by Ctrl-C or SIGTERM, stderr free of other libraries' chatter, comma-separated lists."""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
from typing import Callable, TypeVar

import typer

from lmperf.errors import UsageError

F = TypeVar("F", bound=Callable)


def console():
    """A rich console as wide as the terminal (or COLUMNS); a file or a pipe gets room for whole
    tables. Every command prints through one of these."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 200)


def fail(message: str) -> None:
    """Print one line on stderr and exit with status 2 (the bad-input contract)."""
    print(f"lmperf: error: {message}", file=sys.stderr)
    raise typer.Exit(2)


class Terminated(BaseException):
    """SIGTERM, raised where the main thread is, as Ctrl-C raises KeyboardInterrupt: the code on
    the way out (reports rendered from the rows on disk, child processes stopped) runs either way."""


def _terminated(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated


def stop_cleanly_on_sigterm() -> None:
    """Make SIGTERM raise Terminated in the main thread (the CLI's entry point calls this)."""
    signal.signal(signal.SIGTERM, _terminated)


def clean_errors(function: F) -> F:
    """Turn UsageError into one stderr line and exit 2; Ctrl-C into one line and exit 130,
    SIGTERM into one line and exit 143 (128 + the signal, as the shell reports it)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except UsageError as error:
            # the user's own code raised (a --module factory): their traceback, once, above the line
            print(getattr(error, "user_traceback", ""), file=sys.stderr, end="")
            fail(str(error))
        except KeyboardInterrupt:
            print("lmperf: interrupted; finished rows are on disk", file=sys.stderr)
            raise typer.Exit(128 + signal.SIGINT)
        except Terminated:
            print("lmperf: terminated; finished rows are on disk", file=sys.stderr)
            raise typer.Exit(128 + signal.SIGTERM)

    return wrapper  # type: ignore[return-value]


VERBOSE = "LMPERF_VERBOSE"  # set by --verbose; child processes (torchrun's workers) inherit it
# What other libraries print on a CPU machine that says nothing about the run: libkineto's
# "gpuGetDeviceCount failed" when a CUDA build of torch starts its profiler without a GPU (level 5
# is above ERROR), and torch.utils.cpp_extension's "No CUDA runtime is found" when CUDA is
# installed but no GPU is present.
_QUIET_ENVIRONMENT = {"KINETO_LOG_LEVEL": "5"}
_QUIET_LOGGERS = ("torch.utils.cpp_extension",)


def verbose() -> bool:
    return os.environ.get(VERBOSE) == "1"


def quiet_other_libraries() -> None:
    """Keep other libraries' notices off stderr (unless --verbose): environment variables that
    the C++ layers read when they start, here and in every child process, and their loggers."""
    if verbose():
        return
    for name, value in _QUIET_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


@functools.cache
def note(message: str) -> None:
    """One line for the user on stderr, said once per process however often it is reached."""
    print(f"lmperf: note: {message}", file=sys.stderr)


def given_options(context: typer.Context) -> set[str]:
    """Names of the options typed on this command line, not left at their defaults."""
    return {
        name
        for name in context.params
        if getattr(context.get_parameter_source(name), "name", "") in ("COMMANDLINE", "ENVIRONMENT")
    }


def split_list(text: str, name: str, convert: Callable = str) -> list:
    """'a,b,c' -> [a, b, c] with `convert` applied; a bad item is a UsageError naming `name`.

    A value given twice is kept once (a second row with the same key would be indistinguishable),
    with a note saying so."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UsageError(f"--{name} needs at least one value")
    try:
        values = [convert(item) for item in items]
    except ValueError:
        raise UsageError(f"--{name}: cannot read {text!r} as a list of {convert.__name__}") from None
    unique = list(dict.fromkeys(values))
    if len(unique) < len(values):
        note(f"--{name} {text} names a value more than once; each runs once: {','.join(map(str, unique))}")
    return unique


def resolve_device(device: str):
    """'auto' picks CUDA when present; asking for CUDA without it is a UsageError."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"device {device!r} asked for, but CUDA is not available on this machine")
    if device != "cpu" and not device.startswith("cuda"):
        raise UsageError(f"unknown device {device!r}; use auto, cpu or cuda")
    return device

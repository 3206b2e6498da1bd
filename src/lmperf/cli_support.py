"""What every command shares: one-line errors with exit status 2, and comma-separated lists."""

from __future__ import annotations

import functools
import os
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


def clean_errors(function: F) -> F:
    """Turn UsageError into one stderr line and exit 2; Ctrl-C into exit 130, no traceback."""

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
            raise typer.Exit(130)

    return wrapper  # type: ignore[return-value]


def given_options(context: typer.Context) -> set[str]:
    """Names of the options typed on this command line, not left at their defaults."""
    return {name for name in context.params
            if getattr(context.get_parameter_source(name), "name", "") in ("COMMANDLINE", "ENVIRONMENT")}


def split_list(text: str, name: str, convert: Callable = str) -> list:
    """'a,b,c' -> [a, b, c] with `convert` applied; a bad item is a UsageError naming `name`."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UsageError(f"--{name} needs at least one value")
    try:
        return [convert(item) for item in items]
    except ValueError:
        raise UsageError(f"--{name}: cannot read {text!r} as a list of {convert.__name__}") from None


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


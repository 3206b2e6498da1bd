"""What every command shares: one-line errors with exit status 2, and comma-separated lists."""

from __future__ import annotations

import functools
import sys
from typing import Callable, TypeVar

import typer

from lmperf.errors import UsageError

F = TypeVar("F", bound=Callable)


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
            fail(str(error))
        except KeyboardInterrupt:
            print("lmperf: interrupted; finished rows are on disk", file=sys.stderr)
            raise typer.Exit(130)

    return wrapper  # type: ignore[return-value]


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


def default_preset_and_context(on_gpu: bool) -> tuple[str, int]:
    """What a command runs when not told: tiny at 128 on a CPU (seconds), small at 512 on a GPU."""
    return ("small", 512) if on_gpu else ("tiny", 128)


def bench_grid(options: dict, on_gpu: bool) -> list:
    """bench's configurations from its comma-separated options, with bench's defaults
    (tiny at context 128 in fp32 on a CPU; small at 512 in fp32 and bf16 on a GPU)."""
    from lmperf.bench.sweep import grid

    preset, context = default_preset_and_context(on_gpu)
    return grid(
        split_list(options["presets"] or preset, "presets"),
        split_list(options["contexts"] or str(context), "contexts", int),
        split_list(options["modes"], "modes"),
        split_list(options["precisions"] or ("fp32,bf16" if on_gpu else "fp32"), "precisions"),
        split_list(options["compile"], "compile"),
        split_list(options["attention"], "attention"),
        options["batch"],
    )

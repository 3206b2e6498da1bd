"""The `lmperf` command line: wiring only. Each area defines its commands in
lmperf/<area>/commands.py and adds them here through its register(app)."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    help="Measure, explain and speed up the GPU cost of Transformer language models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Each area registers its own commands, so the areas can grow without touching one another here.
AREAS = ("bench", "profile", "attention_bench", "pmc", "distributed")
for _area in AREAS:
    importlib.import_module(f"lmperf.{_area}.commands").register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

"""The `lmperf` command line: wiring only. Each area defines its commands in
lmperf/<area>/commands.py and adds them here through its register(app)."""

from __future__ import annotations

import importlib
import sys

import typer

app = typer.Typer(
    help="Measure, explain and speed up the GPU cost of Transformer language models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Each area registers its own commands, so the areas can grow without touching one another here.
AREAS = ("bench", "profile", "attention_bench", "pmc", "distributed", "plan")
for _area in AREAS:
    importlib.import_module(f"lmperf.{_area}.commands").register(app)


def main() -> None:
    """Run the app; a usage error (unknown option, missing value) is one line and exit 2."""
    try:
        status = app(standalone_mode=False)
    except Exception as error:  # typer's usage errors are click's, whose module typer may vendor
        if getattr(error, "exit_code", None) != 2 or not hasattr(error, "format_message"):
            raise
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `lmperf` or `lmperf pmc`: the help
            error.show()
        else:
            print(f"lmperf: error: {error.format_message()}", file=sys.stderr)
        sys.exit(2)
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":
    main()

"""The `lmperf` command line: wiring only. Each area defines its commands in
lmperf/<area>/commands.py and adds them here through its register(app)."""

from __future__ import annotations

import importlib
import os
import sys

import typer

from lmperf.cli_support import VERBOSE, quiet_other_libraries, stop_cleanly_on_sigterm

app = typer.Typer(
    help="Measure, explain and speed up the GPU cost of Transformer language models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # click's help: whole option names at any width, wrapped help texts
)


@app.callback()
def options(
    verbose: bool = typer.Option(
        False,
        "--verbose",
        help="Let other libraries' notices (CUDA probes, "
        "profiler start-up) through to stderr; give it before the command.",
    ),
) -> None:
    """Options of `lmperf` itself, before any command's."""
    if verbose:
        os.environ[VERBOSE] = "1"
    quiet_other_libraries()


# Each area registers its own commands, so the areas can grow without touching one another here.
AREAS = ("bench", "profile", "attention_bench", "pmc", "distributed", "plan")
for _area in AREAS:
    importlib.import_module(f"lmperf.{_area}.commands").register(app)


def main() -> None:
    """Run the app; a usage error (unknown option, missing value) is one line and exit 2."""
    stop_cleanly_on_sigterm()
    try:
        status = app(standalone_mode=False)
    except Exception as error:  # typer's usage errors are click's, whose module typer may vendor
        if getattr(error, "exit_code", None) != 2 or not hasattr(error, "format_message"):
            raise
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `lmperf` or `lmperf pmc`: the help
            print(error.ctx.get_help())
        else:
            print(f"lmperf: error: {error.format_message()}", file=sys.stderr)
        sys.exit(2)
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":
    main()

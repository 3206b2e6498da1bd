"""One word per idea on every command line (README, "What it does"): context, precision, dtype.

Parsed with click's own parser (typer's copy of it) from the real app, nothing run."""

import pytest
import typer.main

from lmperf.cli import app

ROOT = typer.main.get_command(app)


def _commands(group=ROOT, path: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group: `lmperf pmc`
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


COMMANDS = dict(_commands())
# The only options that may say dtype: each names one tensor's element type.
TENSOR_DTYPES = {
    ("comm", "dtype"),
    ("attention", "dtypes"),
    ("bench", "param_dtypes"),
    ("bench-dist", "param_dtypes"),
    ("plan", "param_dtype"),
}


def _primary(param) -> str:
    """The name --help shows first: the option's own word (later names are older spellings)."""
    return next(opt for opt in param.opts if opt.startswith("--"))


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_option_says_context_and_precision(path):
    for param in COMMANDS[path].params:
        if param.param_type_name != "option":
            continue
        primary = _primary(param)
        assert "seq" not in primary, f"{' '.join(path)} {primary}: say context"
        if "dtype" in primary:
            assert (path[-1], param.name) in TENSOR_DTYPES, f"{' '.join(path)} {primary}: say precision"
        if "-t" in param.opts:
            assert primary.startswith("--context"), f"{' '.join(path)} {primary}: -t is context's short name"


# Older spellings that committed scripts and notes use: (command, old args, new args).
OLD_SPELLINGS = [
    (("attention",), ["--seqs", "128,256"], ["--contexts", "128,256"]),
    (("attention",), ["--torch-max-seq", "64"], ["--torch-max-context", "64"]),
    (("pmc", "collect"), ["--seq-len", "77", "--dtype", "fp16"], ["-t", "77", "--precision", "fp16"]),
    (("pmc", "explain"), ["--seq-len", "77", "--seq-lens", "8,16"], ["--context", "77", "--contexts", "8,16"]),
    (("precision",), ["--autocast", "fp16"], ["--precision", "fp16"]),
    (("bench",), ["--max-seq-len", "64"], ["--max-context", "64"]),
]


@pytest.mark.parametrize("path, old, new", OLD_SPELLINGS, ids=lambda value: " ".join(value))
def test_older_spellings_still_parse_to_the_same_values(path, old, new):
    command = COMMANDS[path]
    parsed = [command.make_context(path[-1], list(args)).params for args in (old, new)]
    assert parsed[0] == parsed[1]
    assert parsed[1] != command.make_context(path[-1], []).params  # the values were taken

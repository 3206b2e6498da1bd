"""Every command prints through one console: as wide as COLUMNS says when it is set, whole tables
in a file or a pipe otherwise (bench alone honoured COLUMNS once)."""

from pathlib import Path

import lmperf
from lmperf.cli_support import console


def test_columns_sets_the_width_in_a_pipe(monkeypatch):
    monkeypatch.setenv("COLUMNS", "61")
    assert console().width == 61
    monkeypatch.delenv("COLUMNS")
    assert console().width == 200  # pytest's capture is not a terminal: room for whole tables


def test_no_command_makes_a_console_of_its_own():
    package = Path(lmperf.__file__).parent
    own = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "Console(" in path.read_text(encoding="utf-8") and path.name != "cli_support.py"
    ]
    assert not own, f"print through lmperf.cli_support.console(): {own}"

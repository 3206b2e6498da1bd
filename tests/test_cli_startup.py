"""`lmperf` starts fast and helps: parsing imports no torch, and a bare call shows the commands."""

import subprocess
import sys

COMMANDS = ("bench", "bench-dist", "profile", "memory", "precision", "attention", "pmc", "comm", "dist-report", "plan")


def test_importing_the_cli_does_not_import_torch():
    # torch takes seconds to import; `lmperf --help` and bad flags must not wait for it.
    probe = "import sys, lmperf.cli; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "False"


def test_bare_lmperf_shows_usage_and_every_command():
    result = subprocess.run([sys.executable, "-m", "lmperf.cli"], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stdout + result.stderr
    assert "Usage:" in result.stdout
    assert all(f" {command} " in result.stdout for command in COMMANDS)


def test_the_torch_free_names_are_the_registry():
    from lmperf.attention import IMPLEMENTATIONS
    from lmperf.attention_names import ATTENTION_IMPLEMENTATIONS

    assert tuple(IMPLEMENTATIONS) == ATTENTION_IMPLEMENTATIONS

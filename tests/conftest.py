"""Shared test set-up: GPU tests skip cleanly where CUDA is missing; Triton's CPU interpreter; a
run directory locked by another process."""

import contextlib
import os
import subprocess
import sys

import pytest
import torch


@pytest.fixture(autouse=True)
def _no_terminal_size_from_xdist(monkeypatch):
    """pytest-xdist's workers set COLUMNS=80 and LINES=24; without them a test's console is as
    wide as in a plain pytest run (lmperf.cli_support.console). Tests that want a width set it."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (run on a GPU with `pytest -m gpu`)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def run_interpreted():
    """Runs a pytest file in a subprocess with TRITON_INTERPRET=1 and no GPU; asserts it passed.

    The variable must be set before Triton first compiles a kernel, and it must not leak into the
    other tests of this session (on a GPU machine they use the compiled kernels). Such files have
    no test_ prefix, so they are collected only through this.
    """

    def run(path):
        env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]

    return run


@pytest.fixture
def lock_held_by_another_process():
    """A context manager: while it is open, another process holds `path`'s run-directory lock."""

    @contextlib.contextmanager
    def held(path):
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from lmperf.report.rundir import RunDir; "
                f"d = RunDir.resume({str(path)!r}, 'bench'); print('locked', flush=True); sys.stdin.read()",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout.readline().strip() == "locked"
            yield
        finally:
            holder.communicate("")  # the holder ends, and its lock with it

    return held

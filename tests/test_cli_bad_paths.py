"""Bad paths and silent defaults: one line on stderr, exit 2, never a traceback (in-process where
the command is refused before it runs anything; a subprocess where the entry point matters)."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.report.rundir import MANIFEST, RESULTS

TINY = ["--device", "cpu", "--steps", "1", "--warmup", "0", "-t", "16", "--modes", "forward"]


def one_line_exit_2(result, message):
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("")
    return path


RUN_COMMANDS = [
    ["bench", *TINY],
    ["bench-dist", *TINY, "--nproc", "2"],
    ["comm", "--device", "cpu", "--sizes", "1MB"],
    ["profile", "--device", "cpu", "-t", "16", "--modes", "forward", "--steps", "1", "--warmup", "0"],
    ["pmc", "explain", "--sweep", "--preset", "tiny", "--contexts", "16", "--layers", "1", "--widths", "64"],
]


@pytest.mark.parametrize("args", RUN_COMMANDS, ids=lambda a: a[0] + ("-sweep" if "--sweep" in a else ""))
@pytest.mark.parametrize("under", ["", "/runs"], ids=["runs-is-a-file", "runs-under-a-file"])
def test_runs_that_cannot_hold_directories(a_file, args, under):
    result = CliRunner().invoke(app, [*args, "--runs", f"{a_file}{under}"])
    one_line_exit_2(result, "cannot create a run directory under")


@pytest.mark.parametrize("args", RUN_COMMANDS, ids=lambda a: a[0] + ("-sweep" if "--sweep" in a else ""))
def test_an_unwritable_current_directory(monkeypatch, args):
    monkeypatch.chdir("/proc")  # no one, not even root, makes directories here
    one_line_exit_2(CliRunner().invoke(app, args), "cannot create a run directory under runs")


def _dist_dir(path, command):
    path.mkdir()
    (path / MANIFEST).write_text(json.dumps({"command": command, "arguments": {}}))
    (path / RESULTS).write_text("")
    return path


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "is not a run directory of `lmperf comm` or `lmperf bench-dist`"),
        ("empty", "has no rows yet"),
        ("bench", "is not a run directory of `lmperf comm` or `lmperf bench-dist`"),
    ],
)
def test_dist_report_on_what_is_no_distributed_run(tmp_path, case, message):
    path = tmp_path / case
    if case != "missing":
        _dist_dir(path, "bench-dist" if case == "empty" else "bench")
    one_line_exit_2(CliRunner().invoke(app, ["dist-report", str(path), "--out", str(tmp_path / "page.md")]), message)


def test_dist_report_to_an_unwritable_out(tmp_path, a_file):
    path = _dist_dir(tmp_path / "comm", "comm")
    row = {
        "op": "all-reduce",
        "size_bytes": 1 << 20,
        "dtype": "fp32",
        "nproc": 2,
        "backend": "gloo",
        "status": "ok",
        "warmup": 1,
        "iters": 1,
        "mean_us": 10.0,
        "env": {},
    }
    (path / RESULTS).write_text(json.dumps(row) + "\n")
    one_line_exit_2(CliRunner().invoke(app, ["dist-report", str(path), "--out", f"{a_file}/page.md"]), "cannot write")


@pytest.mark.parametrize(
    "args, message",
    [
        (["bench", "-p", ""], "--presets needs at least one value"),
        (["bench", "-t", ""], "--contexts needs at least one value"),
        (["bench", "--precisions", ""], "--precisions needs at least one value"),
        (["profile", "-t", "0"], "context length must be positive, got 0"),
    ],
)
def test_empty_or_zero_values_are_refused_not_defaulted(tmp_path, args, message):
    one_line_exit_2(CliRunner().invoke(app, [*args, "--device", "cpu", "--runs", str(tmp_path)]), message)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "args, message",
    [
        (["bench", "--no-such-option"], "No such option: --no-such-option"),
        (["bench", "--steps", "many"], "Invalid value for '--steps'"),
        (["no-such-command"], "No such command"),
    ],
)
def test_usage_errors_are_one_line(args, message):
    result = subprocess.run([sys.executable, "-m", "lmperf.cli", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and message in result.stderr


def test_progress_lines_show_rounded_figures(capsys):
    from types import SimpleNamespace

    from lmperf.distributed.worker import log_row

    log_row(SimpleNamespace(op="all-reduce", size_bytes=1048576, status="ok", mean_us=3553.1307249584643))
    assert capsys.readouterr().out == "lmperf row: op=all-reduce size_bytes=1048576 status=ok mean_us=3553\n"


def test_triton_attention_without_triton_installed(monkeypatch, tmp_path):
    # Triton is not a core dependency (a CPU-only install may lack it): where the kernels could
    # run (here Triton's interpreter on a CPU), a missing package is found before anything runs.
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton now fails
    result = CliRunner().invoke(app, ["bench", *TINY, "-p", "tiny", "--attention", "triton", "--runs", str(tmp_path)])
    one_line_exit_2(result, "needs the triton package")
    assert not any(tmp_path.iterdir())

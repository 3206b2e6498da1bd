"""Run directories through the CLI: the README's resume, a killed writer, foreign directories
refused untouched, a second writer refused (real processes, real exit codes)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from lmperf.report.rundir import MANIFEST, RESULTS, SET_ASIDE, read_rows

SWEEP = ["-p", "tiny", "-t", "16,24,32", "--modes", "forward", "--warmup", "0", "--device", "cpu"]


def lmperf(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "lmperf.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def one_line_exit_2(result, message):
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert message in result.stderr, result.stderr


def _killed_after_one_row(root):
    """A sweep SIGKILLed once its first row is on disk, its last row then cut mid-write."""
    writer = subprocess.Popen(
        [sys.executable, "-m", "lmperf.cli", "bench", "--runs", str(root), *SWEEP, "--steps", "20"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while not any(path.stat().st_size for path in root.glob(f"*/{RESULTS}")):
        assert writer.poll() is None, "the sweep ended before it could be killed"
        time.sleep(0.02)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    (run_dir,) = root.iterdir()
    text = (run_dir / RESULTS).read_text()
    (run_dir / RESULTS).write_text(text + text.splitlines()[0][:40])  # a row cut short by the kill
    return run_dir


def test_resume_alone_finishes_the_recorded_sweep_after_a_kill(tmp_path):
    run_dir = _killed_after_one_row(tmp_path)
    result = lmperf("bench", "--resume", run_dir)  # as the README shows it
    assert result.returncode == 0, result.stderr
    assert "cut off" in result.stderr and (run_dir / SET_ASIDE).exists()
    rows = read_rows(run_dir / RESULTS)
    assert sorted(r["seq_len"] for r in rows) == [16, 24, 32]  # every configuration, none twice
    assert {r["steps"] for r in rows} == {20} and {r["warmup"] for r in rows} == {0}
    one_line_exit_2(lmperf("bench", "--resume", run_dir, "--steps", "10"), "was made with --steps 20, not --steps 10")
    assert len(read_rows(run_dir / RESULTS)) == 3


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    result = lmperf(
        "bench",
        "--runs",
        root,
        "-p",
        "tiny",
        "-t",
        "16",
        "--modes",
        "forward",
        "--warmup",
        "0",
        "--steps",
        "1",
        "--device",
        "cpu",
    )
    assert result.returncode == 0, result.stderr
    (run_dir,) = root.iterdir()
    return run_dir


def _files(path):
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


@pytest.mark.parametrize(
    "args, command",
    [
        (["bench-dist", "--resume"], "bench-dist"),
        (["bench", "--nproc", "2", "--resume"], "bench-dist"),
        (["profile", "--rebuild"], "profile"),
        (["memory", "--render"], "memory"),
    ],
)
def test_another_commands_directory_is_refused_untouched(bench_dir, args, command):
    before = _files(bench_dir)
    one_line_exit_2(lmperf(*args, bench_dir), f"run directory of `lmperf bench`, not of `lmperf {command}`")
    assert _files(bench_dir) == before


@pytest.mark.parametrize("made_by", ["comm", "profile"])  # bench-dist's it continues (test_faults.py)
def test_bench_refuses_a_foreign_directory_untouched(tmp_path, made_by):
    (tmp_path / MANIFEST).write_text(json.dumps({"command": made_by, "arguments": {}}))
    (tmp_path / RESULTS).write_text(json.dumps({"mode": "forward", "status": "ok"}) + "\n")
    before = _files(tmp_path)
    one_line_exit_2(lmperf("bench", "--resume", tmp_path), f"of `lmperf {made_by}`, not of `lmperf bench`")
    assert _files(tmp_path) == before


def test_a_second_writer_is_one_line_and_exit_2(bench_dir, lock_held_by_another_process):
    with lock_held_by_another_process(bench_dir):
        one_line_exit_2(lmperf("bench", "--resume", bench_dir), "in use by another lmperf process")


def test_recorded_sweep_options_come_back_whole_model_shape_included():
    from lmperf.run.options import SweepOptions
    from lmperf.model.choice import ModelChoice

    options = SweepOptions(
        "tiny", "16", steps=3, device="cpu", model=ModelChoice.from_options(None, d_model=64, n_layers=1)
    )
    recorded = json.loads(json.dumps(options.arguments()))  # as manifest.json holds them
    assert SweepOptions().with_arguments(recorded) == options

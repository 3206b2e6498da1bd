"""Fault injection: careless input, a full disk, damaged manifests, signals, too many processes.

Each case gives one line on stderr and a known exit status, and leaves the rows already on disk
whole; tests/README.md lists every case with the test that checks it. Real processes (signals,
torchrun) where the case is about processes, in-process calls elsewhere (torch's import costs
seconds a process).
"""

import errno
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.report.rundir import MANIFEST, RESULTS, read_rows

TINY = ["-p", "tiny", "--modes", "forward", "--warmup", "0", "--steps", "1", "--device", "cpu"]


def invoke(*args, env=None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def one_line(result, status, message):
    """`result` (a CliRunner result or a finished process) ended with `status` and one stderr line holding `message`."""
    code = getattr(result, "exit_code", getattr(result, "returncode", None))
    assert code == status, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr, result.stderr[-3000:]


def run_dir_of(root: Path) -> Path:
    (run_dir,) = root.iterdir()
    return run_dir


# ------------------------------------------------------------------ 1. --nproc within the machine


@pytest.fixture
def two_cores(monkeypatch):
    import lmperf.distributed.launch as launch

    monkeypatch.setattr(launch, "usable_cores", lambda: 2)


@pytest.mark.parametrize(
    "command", [["bench", *TINY, "--nproc"], ["bench-dist", *TINY, "--nproc"], ["comm", "--device", "cpu", "--nproc"]]
)
def test_more_processes_than_cores_is_refused_before_any_starts(tmp_path, two_cores, command):
    one_line(invoke(*command, 3, "--runs", tmp_path), 2, "--nproc 3 asks for more processes than the 2 CPU core(s)")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "command, what",
    [
        (["bench", *TINY, "--nproc"], "the analytic peak of tiny at context 128"),
        (["comm", "--device", "cpu", "--nproc"], "the 4 MiB buffers"),
    ],
)
def test_more_processes_than_host_memory_holds_is_refused(tmp_path, two_cores, monkeypatch, command, what):
    import lmperf.run.sweep as sweep

    monkeypatch.setattr(sweep, "device_memory_bytes", lambda device: 10**8)  # 0.1 GB available
    result = invoke(*command, 2, "--runs", tmp_path)
    one_line(result, 2, "--nproc 2 needs about")
    assert what in result.stderr and "more than the 0.1 GB available; not even one process fits" in result.stderr
    assert not any(tmp_path.iterdir())


# --------------------------------------------------------- 2. tables that tell every row apart


@pytest.fixture(scope="module")
def two_losses(tmp_path_factory):
    """One in-process run whose rows differ only in their loss, with a context listed twice."""
    root = tmp_path_factory.mktemp("runs")
    result = invoke("bench", *TINY, "-t", "16,16", "--loss", "eager,fused", "--runs", root)
    assert result.exit_code == 0, result.output
    return result, run_dir_of(root)


def test_a_value_listed_twice_runs_once_with_a_note(two_losses):
    result, run_dir = two_losses
    assert [(r["seq_len"], r["loss"]) for r in read_rows(run_dir / RESULTS)] == [(16, "eager"), (16, "fused")]
    assert result.stderr == "lmperf: note: --contexts 16,16 names a value more than once; each runs once: 16\n"


def test_the_reports_show_what_tells_the_rows_apart(two_losses):
    result, run_dir = two_losses
    markdown = (run_dir / "results.md").read_text()
    assert (
        "Every row: preset tiny, ctx 16, mode forward, prec fp32, compile eager, attn naive, batch 4, "
        "param dtype fp32, checkpoint none, optimizer torch." in markdown
    )
    header = next(line for line in markdown.splitlines() if line.startswith("| "))
    assert header.startswith("| loss | status |") and "MFU" not in header  # MFU: empty on a CPU
    assert "| eager |" in markdown and "| fused |" in markdown and "fused" in result.stdout
    csv_header = (run_dir / "results.csv").read_text().splitlines()[0].split(",")
    assert {"batch", "param dtype", "loss", "checkpoint", "MFU"} <= set(csv_header)  # the CSV keeps every column


def test_help_fits_80_columns_with_every_option_whole():
    from typer.main import get_command

    result = invoke("bench", "--help", env={"COLUMNS": "80"})
    assert result.exit_code == 0 and "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    options = {opt for param in get_command(app).commands["bench"].params for opt in param.opts if opt.startswith("--")}
    assert "--leaderboard-warmup-ms" in options and all(option in result.stdout for option in options)


# ---------------------------------------------------------------- 3. a full disk, damaged manifests


def _disk_full(monkeypatch, path_part: str):
    """Writing a file whose name holds `path_part` writes half of it, then fails as a full disk does."""
    write_text = Path.write_text

    def full(self, data, *args, **kwargs):
        if path_part in self.name:
            write_text(self, data[: len(data) // 2], *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_text(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)


def test_a_full_disk_while_rendering_keeps_the_rows_and_the_old_report(tmp_path, monkeypatch):
    assert invoke("bench", *TINY, "-t", "16", "--runs", tmp_path).exit_code == 0
    run_dir = run_dir_of(tmp_path)
    before = {name: (run_dir / name).read_bytes() for name in (RESULTS, "results.csv")}
    _disk_full(monkeypatch, "results")
    one_line(invoke("bench", "--resume", run_dir), 2, f"cannot write {run_dir / 'results.md'}: No space left on device")
    assert {name: (run_dir / name).read_bytes() for name in before} == before  # whole, not cut to 0 bytes
    assert not list(run_dir.glob(".*partial*"))


def test_a_full_disk_while_adding_a_row_keeps_the_rows_before_it(tmp_path, monkeypatch):
    import lmperf.report.rundir as rundir

    write_all, calls = rundir._write_all, []

    def full_on_the_second_row(descriptor, data):
        calls.append(data)
        if len(calls) == 2:
            os.write(descriptor, data[:10])  # part of the row reaches the disk
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write_all(descriptor, data)

    monkeypatch.setattr(rundir, "_write_all", full_on_the_second_row)
    result = invoke("bench", *TINY, "-t", "16,24", "--runs", tmp_path)
    one_line(result, 2, "No space left on device; the rows before it are kept")
    run_dir = run_dir_of(tmp_path)
    assert (run_dir / RESULTS).read_bytes() == calls[0]  # the first row whole, nothing of the second
    monkeypatch.setattr(rundir, "_write_all", write_all)
    assert invoke("bench", "--resume", run_dir).exit_code == 0
    assert [r["seq_len"] for r in read_rows(run_dir / RESULTS)] == [16, 24]


@pytest.mark.parametrize(
    "manifest, message",
    [
        ("[1, 2]", "is not an lmperf manifest"),
        ({"command": "bench", "arguments": None}, "is not an lmperf manifest"),
        ({"command": "bench", "arguments": {"model": "tiny"}}, "records the model as 'tiny'"),
    ],
)
def test_a_damaged_manifest_is_one_line(tmp_path, manifest, message):
    (tmp_path / MANIFEST).write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    (tmp_path / RESULTS).write_text("")
    one_line(invoke("bench", "--resume", tmp_path), 2, message)


def test_a_manifest_whose_model_has_no_overrides_resumes_with_none():
    from lmperf.run.options import SweepOptions

    assert SweepOptions().with_arguments({"model": {"hf_config": None}}) == SweepOptions()


# ------------------------------------------------------------- 4. what this machine cannot run


@pytest.mark.parametrize("attention", ["triton", "sdpa,triton"])
def test_triton_attention_on_a_cpu_is_refused_before_a_run_directory(tmp_path, monkeypatch, attention):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    one_line(
        invoke("bench", *TINY, "--attention", attention, "--runs", tmp_path),
        2,
        "attention triton needs a CUDA GPU; on a CPU use naive, sdpa, torch",
    )
    assert not any(tmp_path.iterdir())


def test_pmc_collect_without_ncu_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu there
    one_line(
        invoke("pmc", "collect", "--preset", "tiny", "--out", tmp_path / "capture.csv"),
        2,
        "Nsight Compute (ncu) not found on the PATH",
    )
    assert not any(tmp_path.iterdir())


# -------------------------------------------------------------------------------- 5. resuming


def test_a_relative_hf_config_resumes_from_another_directory(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "small-llama.json").write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 32,
                "intermediate_size": 64,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "vocab_size": 100,
                "max_position_embeddings": 64,
            }
        )
    )
    monkeypatch.chdir(tmp_path / "a")
    tiny = [arg for arg in TINY if arg not in ("-p", "tiny")]
    assert invoke("bench", *tiny, "-t", "16,24", "--hf-config", "small-llama.json", "--runs", "runs").exit_code == 0
    run_dir = run_dir_of(tmp_path / "a" / "runs")
    recorded = json.loads((run_dir / MANIFEST).read_text())["arguments"]["model"]["hf_config"]
    assert recorded == str(tmp_path / "a" / "small-llama.json")  # absolute
    rows = (run_dir / RESULTS).read_text().splitlines()
    (run_dir / RESULTS).write_text(rows[0] + "\n")  # as if cut short after its first row
    monkeypatch.chdir(tmp_path)
    result = invoke("bench", "--resume", run_dir)
    assert result.exit_code == 0, result.output
    assert "1 of 2 configurations to run" in result.stdout  # the banner counts what remains
    assert [r["seq_len"] for r in read_rows(run_dir / RESULTS)] == [16, 24]


# ---------------------------------------------------------------------- 6. noise, flagged or kept out


def test_a_noisy_measurement_is_flagged_in_the_row_and_the_table(tmp_path):
    from lmperf.bench.report import write_reports
    from lmperf.run.timing import Stats

    steady, jumpy = Stats.of([10.0, 10.0, 11.0]), Stats.of([1.0, 1.0, 10.0])  # std/mean 0.06 and 1.3
    assert not steady.noisy and jumpy.noisy and jumpy.spread == pytest.approx(5.196 / 4, abs=1e-3)
    row = {
        "preset": "tiny",
        "seq_len": 16,
        "mode": "forward",
        "precision": "fp32",
        "compile": "eager",
        "attention": "naive",
        "status": "ok",
        "params": 1000,
        "mean_ms": 4.0,
        "std_ms": 5.196,
    }
    (tmp_path / RESULTS).write_text(
        json.dumps({**row, "noisy": True, "spread": 1.3})
        + "\n"
        + json.dumps({**row, "mode": "train-step", "noisy": False})
        + "\n"
    )
    write_reports(tmp_path)
    markdown = (tmp_path / "results.md").read_text()
    assert "| forward | ok | noisy | 4.00 | 5.20 | 130% |" in markdown and "| train-step | ok | - |" in markdown
    assert "flag noisy: the measured steps' std is above half their mean" in markdown


def test_rows_record_the_load_average_around_their_measurement(two_losses):
    _, run_dir = two_losses
    for row in read_rows(run_dir / RESULTS):
        assert row["load_start"] >= 0 and row["load_end"] >= 0 and row["spread"] >= 0


def test_a_run_with_no_finished_row_renders_without_warnings(tmp_path):
    from lmperf.bench.report import write_reports

    (tmp_path / RESULTS).write_text(json.dumps({"seq_len": 16, "mode": "forward", "status": "error"}) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warned of a legend with no line
        write_reports(tmp_path)


def test_other_libraries_stay_quiet_unless_verbose(monkeypatch):
    import logging

    from lmperf.cli_support import quiet_other_libraries

    extension = logging.getLogger("torch.utils.cpp_extension")
    monkeypatch.setattr(extension, "level", logging.NOTSET)
    for name in ("KINETO_LOG_LEVEL", "LMPERF_VERBOSE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LMPERF_VERBOSE", "1")
    quiet_other_libraries()
    assert "KINETO_LOG_LEVEL" not in os.environ and extension.level == logging.NOTSET
    monkeypatch.delenv("LMPERF_VERBOSE")
    quiet_other_libraries()
    # libkineto reads it when the profiler starts, here and in torchrun's workers
    assert os.environ["KINETO_LOG_LEVEL"] == "5" and extension.level == logging.ERROR
    assert invoke("--verbose", "bench", "-t", "0").exit_code == 2 and os.environ["LMPERF_VERBOSE"] == "1"


# --------------------------------------------------------------------- 3, 5. signals, real processes


def _lmperf(*args, cwd=None):
    return subprocess.Popen(
        [sys.executable, "-m", "lmperf.cli", *map(str, args)],
        cwd=cwd,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _rows_on_disk(root: Path) -> int:
    return sum(len(read_rows(path)) for path in root.glob(f"*/{RESULTS}"))


def _stopped(process, root: Path, rows: int, stop) -> subprocess.CompletedProcess:
    """`process` stopped by `stop(process)` once `rows` rows are on disk; its outcome."""
    while _rows_on_disk(root) < rows:
        assert process.poll() is None, process.communicate()[1][-3000:]
        time.sleep(0.05)
    stop(process)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _ctrl_c(process):  # what a terminal does: SIGINT to the whole foreground process group
    os.killpg(process.pid, signal.SIGINT)


def _sigterm(process):
    process.send_signal(signal.SIGTERM)


def _sigkill(process):
    process.send_signal(signal.SIGKILL)


def _reports_rendered(run_dir: Path, rows: int) -> None:
    table = [line for line in (run_dir / "results.md").read_text().splitlines() if line.startswith("| ")]
    assert len(table) == 1 + rows  # header and one line per row on disk
    assert len((run_dir / "results.csv").read_text().splitlines()) == 1 + rows


def test_a_newcomers_sweep_stopped_three_ways_and_resumed_has_every_row_once(tmp_path):
    # `lmperf bench` as the README starts it (tiny sizes), stopped by Ctrl-C, SIGTERM and SIGKILL
    # in turn, each time resumed with `--resume DIR` alone.
    contexts = [16, 24, 32, 40]
    sweep = _lmperf("bench", *TINY, "-t", ",".join(map(str, contexts)), "--steps", "3", "--runs", tmp_path)
    one_line(_stopped(sweep, tmp_path, 1, _ctrl_c), 130, "interrupted; finished rows are on disk")
    run_dir = run_dir_of(tmp_path)
    _reports_rendered(run_dir, len(read_rows(run_dir / RESULTS)))
    for stop, status, message in [(_sigterm, 143, "terminated; finished rows are on disk"), (_sigkill, -9, None)]:
        done = len(read_rows(run_dir / RESULTS))
        stopped = _stopped(_lmperf("bench", "--resume", run_dir), tmp_path, done + 1, stop)
        if message:
            one_line(stopped, status, message)
            _reports_rendered(run_dir, len(read_rows(run_dir / RESULTS)))
        else:
            assert stopped.returncode == status
    finished = _lmperf("bench", "--resume", run_dir)
    out, err = finished.communicate(timeout=300)
    assert finished.returncode == 0, err[-3000:]
    assert sorted(r["seq_len"] for r in read_rows(run_dir / RESULTS)) == contexts  # every row once
    _reports_rendered(run_dir, len(contexts))
    assert (run_dir / "time_per_step.png").stat().st_size > 0
    assert all(line.startswith("lmperf: ") for line in err.splitlines())  # nothing but lmperf's own lines


def _workers_left(run_dir: Path) -> list[str]:
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if "lmperf.distributed.worker" in line and str(run_dir) in line]


def test_a_data_parallel_sweep_stops_its_workers_and_resumes_without_nproc(tmp_path):
    contexts = [16, 24, 32, 40, 48]  # Ctrl-C can land after a third row: rows must remain for --resume
    sweep = _lmperf(
        "bench", *TINY, "--nproc", "2", "-t", ",".join(map(str, contexts)), "--steps", "3", "--runs", tmp_path
    )
    one_line(
        _stopped(sweep, tmp_path, 1, _ctrl_c), 130, "interrupted; finished rows are on disk"
    )  # one line, no rank's traceback
    run_dir = run_dir_of(tmp_path)
    assert not _workers_left(run_dir)
    assert "## Steps" in (run_dir / "results.md").read_text()
    before = len(read_rows(run_dir / RESULTS))  # Ctrl-C may have come after a second row
    resumed = _lmperf("bench", "--resume", run_dir)  # no --nproc: the directory's 2 processes
    one_line(_stopped(resumed, tmp_path, before + 1, _sigterm), 143, "terminated; finished rows are on disk")
    assert not _workers_left(run_dir)
    finished = _lmperf("bench", "--resume", run_dir)
    out, err = finished.communicate(timeout=300)
    assert finished.returncode == 0, err[-3000:]
    rows = read_rows(run_dir / RESULTS)
    assert sorted(r["seq_len"] for r in rows) == contexts and {r["nproc"] for r in rows} == {2}
    assert "OMP_NUM_THREADS" not in err  # torchrun's banner

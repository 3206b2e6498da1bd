"""Run directories: manifest, foreign directories refused untouched, lock, cut-off last rows."""

import json

import pytest

import lmperf.cli  # noqa: F401  every command registers how its run directories are recognised
from lmperf.errors import UsageError
from lmperf.report.rundir import MANIFEST, RESULTS, SET_ASIDE, RunDir, command_of, open_run_dir, read_rows

ARGS = {"presets": "tiny", "contexts": "32,64", "steps": 3, "warmup": 0, "device": "cpu"}


def _bench_dir(root, rows=({"preset": "tiny", "mode": "forward", "matmul_flops": 1.0},)):
    run_dir, _ = open_run_dir("bench", ARGS, root=root)
    for row in rows:
        run_dir.append(dict(row))
    run_dir.release()  # as the end of the process would
    return run_dir.path


def _snapshot(path):
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_a_new_directory_records_its_command_and_arguments(tmp_path):
    path = _bench_dir(tmp_path)
    manifest = json.loads((path / MANIFEST).read_text())
    assert manifest["command"] == "bench" and manifest["arguments"] == ARGS


def test_resume_alone_continues_with_the_recorded_arguments(tmp_path):
    path = _bench_dir(tmp_path)
    defaults = {"presets": None, "contexts": None, "steps": 10, "warmup": 5, "device": "cpu"}
    _, arguments = open_run_dir("bench", defaults, resume=path, given=set())
    assert arguments == ARGS


@pytest.mark.parametrize("given", [{"steps"}, None])
def test_a_given_argument_that_differs_is_refused(tmp_path, given):
    path = _bench_dir(tmp_path)
    with pytest.raises(UsageError, match="was made with --steps 3, not --steps 600"):
        open_run_dir("bench", {**ARGS, "steps": 600}, resume=path, given=given)
    _, arguments = open_run_dir("bench", ARGS, resume=path, given={"steps"})  # the same value is fine
    assert arguments == ARGS


@pytest.mark.parametrize("command", ["bench-dist", "comm", "profile", "memory", "attention"])
def test_another_commands_directory_is_refused_untouched(tmp_path, command):
    path = _bench_dir(tmp_path)
    before = _snapshot(path)
    with pytest.raises(UsageError, match=f"run directory of `lmperf bench`, not of `lmperf {command}`"):
        open_run_dir(command, {}, resume=path)
    assert _snapshot(path) == before


@pytest.mark.parametrize(
    "name, row, command",
    [
        ("20250101-120000-comm", {"x": 1}, "comm"),
        ("20250101-120000-bench-dist-2", {"x": 1}, "bench-dist"),
        ("renamed", {"op": "all-reduce", "size_bytes": 1}, "comm"),
        ("renamed", {"mode": "forward", "strategy": "ddp"}, "bench-dist"),
        ("renamed", {"mode": "forward", "matmul_flops": 1.0}, "bench"),
        ("renamed", {"mode": "forward", "warmup": 1}, "profile"),
        ("renamed", {"kind": "peak"}, "memory"),
    ],
)
def test_directories_without_a_manifest_say_their_command_by_name_or_rows(tmp_path, name, row, command):
    path = tmp_path / name
    path.mkdir()
    (path / RESULTS).write_text(json.dumps(row) + "\n")
    assert command_of(path) == command


def test_an_old_directory_resumes_and_records_the_arguments_it_ran_with(tmp_path):
    path = tmp_path / "20250101-120000-bench"
    path.mkdir()
    (path / RESULTS).write_text(json.dumps({"mode": "forward", "matmul_flops": 1.0}) + "\n")
    _, arguments = open_run_dir("bench", ARGS, resume=path, given=set())
    assert arguments == ARGS
    assert json.loads((path / MANIFEST).read_text())["arguments"] == ARGS


def test_an_old_directory_of_unknown_origin_is_refused(tmp_path):
    (tmp_path / RESULTS).write_text(json.dumps({"x": 1}) + "\n")
    with pytest.raises(UsageError, match="do not say which command made it"):
        open_run_dir("bench", ARGS, resume=tmp_path)


def test_resume_needs_a_results_file(tmp_path):
    with pytest.raises(UsageError, match="cannot resume"):
        open_run_dir("bench", ARGS, resume=tmp_path)


def test_a_cut_off_last_row_is_set_aside_and_runs_again(tmp_path, capsys):
    path = _bench_dir(tmp_path, [{"mode": "forward", "matmul_flops": 1.0, "i": i} for i in range(3)])
    text = (path / RESULTS).read_text()
    (path / RESULTS).write_text(text[: text.rindex("\n", 0, len(text) - 1) + 12])  # cut in row 3
    run_dir = RunDir.resume(path, "bench")
    assert "cut off" in capsys.readouterr().err
    assert [row["i"] for row in read_rows(path / RESULTS)] == [0, 1]
    assert (path / SET_ASIDE).read_text().startswith('{"i": 2')
    run_dir.append({"mode": "forward", "matmul_flops": 1.0, "i": 2})  # the re-run row
    run_dir.release()
    RunDir.resume(path, "bench")  # and a second resume finds a whole file
    assert [row["i"] for row in read_rows(path / RESULTS)] == [0, 1, 2]


def test_a_whole_last_row_without_its_newline_is_kept(tmp_path):
    path = _bench_dir(tmp_path, [{"mode": "forward", "matmul_flops": 1.0, "i": 0}])
    (path / RESULTS).write_text((path / RESULTS).read_text().rstrip("\n"))
    RunDir.resume(path, "bench").append({"i": 1})
    assert [row["i"] for row in read_rows(path / RESULTS)] == [0, 1]
    assert not (path / SET_ASIDE).exists()


def test_a_corrupt_middle_row_stays_an_error(tmp_path):
    path = _bench_dir(tmp_path, [{"mode": "forward", "matmul_flops": 1.0, "i": i} for i in range(3)])
    lines = (path / RESULTS).read_text().splitlines()
    lines[1] = lines[1][:10]
    (path / RESULTS).write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError, match=r"results.jsonl:2 is not a JSON row"):
        RunDir.resume(path, "bench").rows()


def test_a_second_writer_is_refused(tmp_path, lock_held_by_another_process):
    path = _bench_dir(tmp_path)
    with lock_held_by_another_process(path):
        with pytest.raises(UsageError, match="in use by another lmperf process"):
            RunDir.resume(path, "bench")
    RunDir.resume(path, "bench")  # released when the holder ended


@pytest.mark.parametrize("root", ["a-file", "a-file/runs"])
def test_runs_root_that_cannot_hold_directories_is_one_error(tmp_path, root):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(UsageError, match="cannot create a run directory under"):
        RunDir.create("bench", tmp_path / root)


def test_runs_started_in_the_same_second_get_directories_of_their_own(tmp_path, monkeypatch):
    import datetime as dt

    from lmperf.report import rundir

    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return dt.datetime(2026, 1, 2, 3, 4, 5)

    monkeypatch.setattr(rundir.dt, "datetime", Frozen)
    (tmp_path / "20260102-030405-bench").mkdir()  # another process took the name a moment ago
    first = RunDir.create("bench", tmp_path)
    second = RunDir.create("bench", tmp_path)
    assert (first.path.name, second.path.name) == ("20260102-030405-bench-2", "20260102-030405-bench-3")


def test_run_directories_import_without_fcntl():
    # fcntl exists on Unix only: importing the package must not need it (Windows locks by msvcrt).
    # In a process of its own: reloading the module here would empty its registry of commands
    # for every test after this one in the same process.
    import subprocess
    import sys

    program = "import sys; sys.modules['fcntl'] = None; import lmperf.report.rundir"
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize(
    "manifest", ["[1, 2]", '{"command": "bench", "arguments": null}', '"bench"', '{"arguments": {}}']
)
def test_a_damaged_manifest_is_one_usage_error(tmp_path, manifest):
    path = _bench_dir(tmp_path)
    (path / MANIFEST).write_text(manifest)
    with pytest.raises(UsageError, match="is not an lmperf manifest"):
        open_run_dir("bench", ARGS, resume=path, given=set())

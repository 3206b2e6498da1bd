"""`lmperf bench-dist` and `lmperf comm` as a user meets them: torchrun, rows, one-line errors."""

import subprocess
import sys

import pytest

from lmperf.report.rundir import read_rows


def lmperf(*args, prelude=""):
    """Run the CLI in a fresh process; `prelude` is Python run first (e.g. to fake the GPU count)."""
    code = f"{prelude}\nimport sys\nfrom lmperf.cli import main\nsys.argv = ['lmperf', *sys.argv[1:]]\nmain()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=180)


def test_bench_dist_runs_ddp_and_fsdp_on_two_processes(tmp_path):
    result = lmperf("bench-dist", "--device", "cpu", "--nproc", "2", "--strategy", "ddp,fsdp", "--bucket-mb", "1,25",
                    "--modes", "train-step", "--contexts", "32", "--warmup", "1", "--steps", "2",
                    "--profile-steps", "1", "--runs", str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = tmp_path.iterdir()
    rows = read_rows(run_dir / "results.jsonl")
    assert [(r["strategy"], r["bucket_mb"], r["reshard"]) for r in rows] == [
        ("ddp", 1.0, None), ("ddp", 25.0, None), ("fsdp", None, True)]
    assert all(r["status"] == "ok" and r["nproc"] == 2 and len(r["mean_ms_ranks"]) == 2 for r in rows)
    markdown = (run_dir / "results.md").read_text()
    assert "## Steps" in markdown and "## Memory per rank" in markdown
    assert (run_dir / "job.json").is_file() and "fsdp" in result.stdout


BAD_INPUTS = [
    (["bench-dist", "--device", "cpu", "--strategy", "zero3"], "", "unknown strategy"),
    (["bench-dist", "--device", "cpu", "--strategy", "none", "--nproc", "2"], "", "needs --nproc 1"),
    (["bench-dist", "--device", "cpu", "--nproc", "0"], "", "at least 1"),
    (["bench-dist", "--device", "cpu", "--strategy", "fsdp", "--reshard", "maybe"], "", "--reshard"),
    (["bench-dist", "--device", "cpu", "--strategy", "fsdp"],
     "import sys, types; sys.modules['torch.distributed.fsdp'] = types.ModuleType('torch.distributed.fsdp')",
     "needs torch.distributed.fsdp.fully_shard"),
    (["bench-dist", "--device", "cuda", "--nproc", "2"],
     "import torch; torch.cuda.is_available = lambda: True; torch.cuda.device_count = lambda: 1",
     "more processes than the 1 GPU(s)"),
    (["comm", "--device", "cuda", "--nproc", "4"],
     "import torch; torch.cuda.is_available = lambda: True; torch.cuda.device_count = lambda: 2",
     "more processes than the 2 GPU(s)"),
    (["comm", "--device", "cpu", "--ops", "all-to-all"], "", "unknown collective"),
    (["comm", "--device", "cpu", "--sizes", "1TB"], "", "cannot read message size"),
]


@pytest.mark.parametrize("args, prelude, message", BAD_INPUTS, ids=[m for _, _, m in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, prelude, message):
    result = lmperf(*args, "--runs", str(tmp_path), prelude=prelude)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr
    assert not any(tmp_path.iterdir())  # refused before anything ran

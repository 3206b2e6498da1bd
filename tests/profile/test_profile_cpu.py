"""`lmperf profile` on the tiny preset on a CPU: files, table columns, categories, region FLOPs
equal to the analytic model, and backward kernels attributed to their forward regions."""

import gzip
import json
import shutil

import pytest
from typer.testing import CliRunner

from lmperf import regions
from lmperf.analysis.flops import region_flops, step_flops
from lmperf.cli import app
from lmperf.model import preset
from lmperf.analysis.kernels import CATEGORIES
from lmperf.profile.run import rebuild_from_traces
from lmperf.profile.tables import KERNEL_COLUMNS, REGION_COLUMNS
from lmperf.report.rundir import read_rows

ARGS = [
    "profile",
    "--preset",
    "tiny",
    "--context",
    "32",
    "--batch",
    "2",
    "--warmup",
    "1",
    "--steps",
    "2",
    "--device",
    "cpu",
    "--top",
    "3",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    result = CliRunner().invoke(app, [*ARGS, "--runs", str(root)])
    assert result.exit_code == 0, result.output
    (run_dir,) = root.iterdir()
    return run_dir, {row["mode"]: row for row in read_rows(run_dir / "results.jsonl")}


def test_writes_tables_plot_and_traces(run):
    run_dir, rows = run
    assert set(rows) == {"forward", "train-step"}
    for name in ("profile.md", "region_time.png", "trace-forward.json.gz", "trace-train-step.json.gz"):
        assert (run_dir / name).stat().st_size > 0
    with gzip.open(run_dir / "trace-train-step.json.gz", "rt") as trace:
        assert json.load(trace)["traceEvents"]  # Perfetto / chrome://tracing format
    text = (run_dir / "profile.md").read_text()
    assert "Matmul share" in text and "| region |" in text


def test_kernel_and_region_rows_have_the_columns(run):
    _, rows = run
    for row in rows.values():
        assert row["status"] == "ok" and row["time_unit"] == "CPU op self time"
        for kernel in row["kernels"]:
            assert {key for _, key, _ in KERNEL_COLUMNS} <= set(kernel)
            assert kernel["category"] in CATEGORIES
        assert {"region", "total_ms", "time_share", "forward_ms", "backward_ms"} <= set(row["regions"][0])
        assert {key for _, key, _ in REGION_COLUMNS} - {"attention_share"} <= set(row["regions"][3])
        assert sum(k["share"] for k in row["kernels"]) == pytest.approx(1.0)
        assert sum(r["time_share"] for r in row["regions"]) == pytest.approx(1.0)
        assert 0 < row["matmul_share"] < 1


def test_region_flops_equal_the_analytic_model(run):
    _, rows = run
    for mode, row in rows.items():
        expected = step_flops(preset("tiny"), 2, 32, mode).by_region
        reported = {r["region"]: r["gflop"] * 1e9 for r in row["regions"] if "gflop" in r}
        assert reported == pytest.approx(expected)


def test_fused_attention_flops_fold_into_one_region():
    fused = region_flops(preset("tiny", attention="sdpa"), 2, 32, "forward")
    naive = step_flops(preset("tiny"), 2, 32, "forward").by_region
    parts = naive[regions.ATTN_SCORES] + naive[regions.ATTN_SOFTMAX] + naive[regions.ATTN_WEIGHTED_SUM]
    assert fused[regions.ATTN_FUSED] == parts and regions.ATTN_SCORES not in fused


def test_backward_kernels_map_to_their_forward_regions(run):
    _, rows = run
    kernels = rows["train-step"]["kernels"]
    backward = [k for k in kernels if k["phase"] == regions.BACKWARD]
    by_region = {r["region"]: r for r in rows["train-step"]["regions"]}
    for region in (
        regions.QKV_PROJ,
        regions.ATTN_SCORES,
        regions.ATTN_SOFTMAX,
        regions.FFN,
        regions.LM_HEAD,
        regions.LOSS,
    ):
        assert by_region[region]["backward_ms"] > 0, region
    assert by_region["backward (other)"]["time_share"] < 0.1
    assert any(k["kernel"] == "_softmax_backward_data" and k["category"] == "softmax" for k in backward)
    optimizer = {k["category"] for k in kernels if k["phase"] == regions.OPTIMIZER}
    assert "optimizer" in optimizer and optimizer <= {"optimizer", "copy/memset"}
    assert rows["forward"]["regions"][-1]["backward_ms"] == 0


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["profile", "--preset", "nope", "--runs", str(tmp_path)])
    assert result.exit_code == 2 and "unknown preset" in result.output


def test_rebuilding_from_the_trace_files_gives_the_same_tables(run, tmp_path):
    run_dir, rows = run
    copy = shutil.copytree(run_dir, tmp_path / "copy")
    rebuilt = {row["mode"]: row for row in rebuild_from_traces(copy)}
    assert (copy / "results-before-rebuild.jsonl").exists()
    for mode, row in rows.items():

        def kernels(r):
            return {(k["phase"], k["name"], k["category"]): k["calls_per_step"] for k in r["kernels"]}

        assert kernels(rebuilt[mode]) == kernels(row)
        assert [r["total_ms"] for r in rebuilt[mode]["regions"]] == pytest.approx(
            [r["total_ms"] for r in row["regions"]], abs=2e-3
        )
        assert rebuilt[mode]["rebuilt_from_trace"]

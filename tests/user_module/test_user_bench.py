"""`lmperf bench --module` on the from-scratch model (tests/user_models/scratch_lm.py) on a CPU: all
three modes, FLOPs and MFU against the arithmetic in scratch_shapes.py, the row's record of the
module, and resume keyed on it."""

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.report.rundir import read_rows
from lmperf.run.sweep import row_key
from scratch_model import MATMUL_PARAMS, PARAMS, SCRATCH, run_cli, step_flops

BATCH, T, PEAK = 2, 24, 0.5  # PEAK: TFLOP/s, given as --peak-tflops (a CPU has no table entry)
ARGS = [
    "bench",
    "--module",
    SCRATCH,
    "-t",
    str(T),
    "--batch",
    str(BATCH),
    "--warmup",
    "1",
    "--steps",
    "2",
    "--device",
    "cpu",
    "--peak-tflops",
    str(PEAK),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_cli(tmp_path_factory.mktemp("runs"), ARGS)


def test_all_three_modes_run(run):
    _, rows = run
    assert set(rows) == {"forward", "forward-backward", "train-step"}
    assert all(row["status"] == "ok" and row["attention"] == "own" and row["model"] is None for row in rows.values())


@pytest.mark.parametrize("mode", ["forward", "forward-backward", "train-step"])
def test_flops_and_mfu_by_hand(run, mode):
    row = run[1][mode]
    assert row["matmul_flops"] == step_flops(BATCH, T, mode)
    seconds = row["mean_ms"] / 1e3
    assert row["tflops"] == pytest.approx(step_flops(BATCH, T, mode) / seconds / 1e12, rel=1e-12)
    assert row["mfu"] == pytest.approx(step_flops(BATCH, T, mode) / seconds / (PEAK * 1e12), rel=1e-12)
    assert row["flop_count"].startswith("FlopCounterMode on meta tensors: one sequence of 24 tokens × batch 2")
    assert "full T×T square" in row["causal_attention"]


def test_six_n_cross_check_is_exact_for_this_model(run):
    """6·N + 12·L·d·T per token (2·N + 4·L·d·T forward) is this model's exact matmul count."""
    for mode, row in run[1].items():
        assert row["flops_over_transformer"] == pytest.approx(1.0, rel=1e-12)
        assert row["transformer_flops"] == step_flops(BATCH, T, mode)


def test_row_records_the_module(run):
    row = run[1]["forward"]
    module = row["module"]
    assert module["factory"] == SCRATCH and module["arguments"] == {}
    assert module["params"] == row["params"] == PARAMS and module["matmul_params"] == MATMUL_PARAMS
    assert (module["vocab_size"], module["blocks"], module["layers"], module["width"], module["head"]) == (
        256,
        "layers",
        2,
        32,
        "lm_head",
    )
    assert len(module["source_hash"]) == 12 and row["env"]["commit"]


def test_resume_keys_on_the_module(run):
    run_dir, rows = run
    result = CliRunner().invoke(app, ["bench", "--resume", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert len(read_rows(run_dir / "results.jsonl")) == 3  # nothing ran again
    row = rows["forward"]
    changed = [
        {**row, "module": {**row["module"], field: value}}
        for field, value in [("source_hash", "0" * 12), ("arguments", {"num_layers": 3}), ("params", 1)]
    ]
    assert len({row_key(r) for r in [row, *changed]}) == 4

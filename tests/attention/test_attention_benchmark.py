"""The attention benchmark's grid, FLOP counts, reports and CLI errors (no GPU needed)."""

import json

import pytest
import torch
from typer.testing import CliRunner

from lmperf.analysis.flops import attention_kernel_flops
from lmperf.attention_bench import report
from lmperf.attention_bench.benchmark import AttentionRow, attention_function, cases
from lmperf.attention_names import BENCHMARK_DEFAULT, BENCHMARK_IMPLEMENTATIONS, SDPA_BACKENDS, TRITON_BACKWARDS
from lmperf.cli import app
from lmperf.errors import UsageError


def test_default_shapes_keep_16k_tokens_and_width_2048():
    grid = cases(["triton", "sdpa-flash"], [1024, 16384], [64, 128], ["bf16"], [True])
    assert len(grid) == 8
    assert {(c.seq, c.batch, c.head_dim, c.heads) for c in grid} == {
        (1024, 16, 64, 32),
        (16384, 1, 64, 32),
        (1024, 16, 128, 16),
        (16384, 1, 128, 16),
    }


@pytest.mark.parametrize("impls, dtypes", [(["flash4"], ["bf16"]), (["triton"], ["fp8"])])
def test_unknown_names_are_usage_errors(impls, dtypes):
    with pytest.raises(UsageError):
        cases(impls, [128], [64], dtypes, [False])


def test_the_benchmark_times_every_implementation_in_each_form_the_registry_names():
    from torch.nn.attention import SDPBackend

    from lmperf.attention.flash_triton import BACKWARDS

    assert set(TRITON_BACKWARDS) == set(BACKWARDS)
    assert {f"{b.upper()}_ATTENTION" for b in SDPA_BACKENDS} <= set(SDPBackend.__members__)
    assert set(BENCHMARK_IMPLEMENTATIONS) == {
        "naive",
        "naive-compiled",
        "sdpa-flash",
        "sdpa-cudnn",
        "sdpa-efficient",
        "flex-compiled",
        "torch-compiled",
        "triton",
        "triton-atomic",
        "triton-ordered",
        "triton-split",
        "triton-no-gluon",
    }
    assert set(BENCHMARK_DEFAULT) == set(BENCHMARK_IMPLEMENTATIONS) - {
        "triton-atomic",
        "triton-ordered",
        "triton-split",
        "triton-no-gluon",
    }
    for impl in BENCHMARK_IMPLEMENTATIONS:  # each name dispatches (compiling waits for a call)
        assert callable(attention_function(impl))


def test_triton_no_gluon_runs_with_the_gluon_forward_switched_off_and_restores_it(monkeypatch):
    flash_triton = pytest.importorskip("lmperf.attention.flash_triton")
    dispatch = pytest.importorskip("lmperf.attention.dispatch")
    seen = []
    monkeypatch.setattr(
        flash_triton.FlashAttention2Triton, "apply", lambda q, k, v, c, *rest: seen.append(dispatch.ENABLED) or q
    )
    monkeypatch.setattr(dispatch, "ENABLED", True)
    q = torch.zeros(1, 1, 4, 64)
    attention_function("triton-no-gluon")(q, q, q, True)
    attention_function("triton")(q, q, q, True)
    assert seen == [False, True] and dispatch.ENABLED


def test_flop_count_follows_flashattention_convention():
    flops = attention_kernel_flops(32, 1024, 1024, 64, is_causal=False)
    assert flops["forward"] == 4 * 32 * 1024 * 1024 * 64
    causal = attention_kernel_flops(32, 1024, 1024, 64, is_causal=True)
    assert causal["forward"] == flops["forward"] / 2
    assert causal["forward_backward"] == 3.5 * causal["forward"]


def test_reports_render_ok_and_oom_rows(tmp_path):
    env = dict(device="H100", driver="1", torch="2", triton="3", commit="abc", date="today", host="h")
    rows = [
        AttentionRow(
            "triton",
            1024,
            64,
            "bf16",
            True,
            16,
            32,
            status="ok",
            fwd_ms=1.0,
            bwd_ms=2.0,
            fwd_bwd_ms=3.0,
            fwd_tflops=100.0,
            bwd_tflops=200.0,
            fwd_bwd_tflops=150.0,
            peak_memory_gb=1.5,
            env=env,
        ),
        AttentionRow("sdpa-flash", 1024, 64, "bf16", True, 16, 32, status="ok", fwd_bwd_tflops=100.0, env=env),
        AttentionRow("naive", 65536, 64, "bf16", True, 1, 32, status="oom", env=env),
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(vars(r)) + "\n" for r in rows))
    md, csv_file, png = report.write_reports(tmp_path)
    text = md.read_text()
    assert "| triton | bf16 | 64 | True | 1024 |" in text and "| oom |" in text and "H100" in text
    assert "| bf16 | 64 | True | 1024 | 100 | 200 | 150 | 100 | - | 1.50 | - |" in text
    assert csv_file.read_text().count("\n") == 4 and png.stat().st_size > 0


@pytest.mark.parametrize(
    "args",
    [["--impls", "flash4"], ["--causal", "sometimes"], ["--contexts", "12x"], ["--dtypes", "fp32", "--device", "cpu"]],
)
def test_cli_bad_input_is_one_line_and_exit_2(args):
    result = CliRunner().invoke(app, ["attention", *args])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1


def test_rounds_interleave_each_points_implementations_reversing_every_other_round():
    from lmperf.attention_bench.benchmark import interleaved

    grid = cases(["triton", "sdpa-cudnn", "sdpa-flash"], [1024, 2048], [64], ["bf16"], [True])
    order = [(round_, case.impl, case.seq) for round_, case in interleaved(grid, 3)]
    forward, backward = ["triton", "sdpa-cudnn", "sdpa-flash"], ["sdpa-flash", "sdpa-cudnn", "triton"]
    expected = [
        (r, impl, seq) for seq in (1024, 2048) for r, impls in enumerate((forward, backward, forward)) for impl in impls
    ]
    assert order == expected
    assert [(r, c.impl) for r, c in interleaved(grid, 1)] == [(0, c.impl) for c in grid]  # one round: as given
    with pytest.raises(UsageError):
        interleaved(grid, 0)


def test_a_sweep_writes_each_round_as_its_own_row(tmp_path, monkeypatch):
    from lmperf.attention_bench import benchmark
    from lmperf.report.rundir import RunDir

    timed = []

    def fake_measure(case, device, rep_ms, torch_max_seq):
        timed.append(case.impl)
        return AttentionRow(**vars(case), status="ok", fwd_bwd_ms=float(len(timed)), env={})

    monkeypatch.setattr(benchmark, "measure", fake_measure)
    run_dir = RunDir.create("attention", tmp_path)
    grid = cases(["triton", "sdpa-cudnn"], [1024], [64], ["bf16"], [False])
    rows = benchmark.run_attention_sweep(grid, run_dir, "cuda", rounds=2)
    written = run_dir.rows()
    assert [(r["impl"], r["round"], r["fwd_bwd_ms"]) for r in written] == [
        ("triton", 0, 1.0),
        ("sdpa-cudnn", 0, 2.0),
        ("sdpa-cudnn", 1, 3.0),
        ("triton", 1, 4.0),
    ]
    assert [r.round for r in rows] == [0, 0, 1, 1]


def test_the_comparison_over_rounds_takes_medians_and_pairs_ratios_by_round(tmp_path):
    env = dict(device="H100", driver="1", torch="2", triton="3", commit="abc", date="today", host="h")

    def row(impl, round_, tflops):
        return AttentionRow(
            impl,
            2048,
            64,
            "bf16",
            True,
            8,
            32,
            status="ok",
            fwd_tflops=tflops,
            bwd_tflops=tflops,
            fwd_bwd_tflops=tflops,
            round=round_,
            env=env,
        )

    # triton 100, 120, 90 against cuDNN 100, 100, 120: per-round ratios 1.00, 1.20, 0.75
    rows = [
        row("triton", 0, 100.0),
        row("sdpa-cudnn", 0, 100.0),
        row("sdpa-cudnn", 1, 100.0),
        row("triton", 1, 120.0),
        row("triton", 2, 90.0),
        row("sdpa-cudnn", 2, 120.0),
    ]
    text = report.comparison([vars(r) for r in rows], against=("sdpa-cudnn",))
    assert "| bf16 | 64 | True | 2048 | 100 | 100 | 100 | 100 | 1.00 (0.75-1.20) |" in text
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(vars(r)) + "\n" for r in rows))
    md, _, png = report.write_reports(tmp_path)
    assert "3 interleaved rounds per point" in md.read_text() and png.stat().st_size > 0


def test_cli_rounds_below_one_is_one_line_and_exit_2():
    result = CliRunner().invoke(app, ["attention", "--rounds", "0"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "rounds" in result.output

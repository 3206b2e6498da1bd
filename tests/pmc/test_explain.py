"""explain: the FLOP model's prediction beside measured counters; the sweep; tile effects."""

import pytest
from typer.testing import CliRunner

from lmperf.analysis.flops import forward_ops, padded_matmul_flops
from lmperf.analysis.tiles import causal_tile_fraction, ceil_div, round_up
from lmperf.cli import app
from lmperf.errors import UsageError
from lmperf.model import preset
from lmperf.pmc import explain as ex
from lmperf.pmc.corpus import corpus
from lmperf.pmc.parse import read_capture
from lmperf.pmc.sweep import sweep_rows

from pmc_fixtures import FIXTURES, capture_path

TARGETS = {name: target for name, target, _ in corpus()}


def _model(name):
    target = TARGETS[name]
    if target.hf_config:
        return ex.from_hf_config(target.hf_config), target
    return ex.from_preset(target.preset, target.overrides), target


@pytest.mark.parametrize("name", ["llama_l4_d512_gqa", "gpt2_l4_d512", "lmperf_small_l2"])
def test_fused_attention_and_unpadded_gemms_match_the_model_exactly(name):
    model, target = _model(name)
    capture = read_capture(FIXTURES / f"{name}.csv.gz")
    rows = {r["op"]: r for r in ex.role_rows(capture, model, target.batch, target.seq_len)}
    # Widths that are whole tiles count exactly; the others only ever count more (padding).
    assert rows["ffn_w1_w3"]["residual"] == pytest.approx(0.0, abs=1e-9)
    assert all(r["residual"] >= -1e-9 for r in rows.values())
    attention = rows.get("attention (fused)") or rows["attn_scores"]
    assert attention["residual"] == pytest.approx(0.0, abs=1e-9)  # causal tiles, or full square


@pytest.mark.parametrize(
    "name",
    ["ah_qwen3_h8_kv2_t96_eager_fp32", "af_qwen3_h8_kv4_t100_eager_fp32", "aa_qwen3_h16_kv4_t100_eager"],
)
def test_qwen3_captures_line_up_with_an_attention_wider_than_d(name):
    """Qwen3's heads of 128 make its attention wider than d (8 x 128 = 1024 over d 640 and 512,
    16 x 128 = 2048 over 1024): the query and output projections are predicted at that width, and
    every role of these H100 captures counts what the model predicts or more by tile padding; at
    whole tiles (the first) exactly. An attention d wide would predict the output projection at
    d / 1024 of what ran."""
    model, target = _model(name)
    assert model.attention_width == model.n_heads * 128 > model.d_model
    capture = read_capture(capture_path(name))
    rows = ex.role_rows(capture, model, target.batch, target.seq_len)
    assert ex.implausible(rows + ex.class_rows(capture, model, target.batch, target.seq_len)) == []
    assert all(row["residual"] >= 0 for row in rows)
    if name.startswith("ah_"):
        by_op = {row["op"]: row for row in rows}
        assert by_op["qkv_proj"]["residual"] == by_op["out_proj"]["residual"] == 0.0


def test_class_rows_cover_gemm_and_attention():
    model, target = _model("llama_l4_d512_gqa")
    rows = ex.class_rows(read_capture(FIXTURES / "llama_l4_d512_gqa.csv.gz"), model, target.batch, target.seq_len)
    by_class = {r["kernel_class"]: r for r in rows}
    assert by_class["attention"]["residual"] == pytest.approx(0.0, abs=1e-9)
    assert 0 < by_class["matmul"]["residual"] < 0.05  # a few padded widths


def test_ceil_div_counts_pieces_that_cover():
    assert ceil_div(0, 64) == 0
    assert ceil_div(128, 64) == 2  # an exact multiple adds no piece
    assert ceil_div(129, 64) == 3  # one over opens a third
    assert ceil_div(100, 64) == 2
    assert ceil_div(2**53 + 1, 1) == 2**53 + 1  # integers: a float division would round to 2**53


def test_round_up_pads_to_whole_multiples():
    assert round_up(0, 8) == 0
    assert round_up(104, 8) == 104  # pad_mm leaves a multiple of 8 as it is
    assert round_up(105, 8) == 112
    assert round_up(100, 64) == 128
    assert round_up(1120, 64) == 1152  # k = 1120 in K-steps of 64


def test_causal_tile_fraction_counts_whole_tiles():
    assert causal_tile_fraction(256, 64, 64) == 10 / 16  # 4 tiles: 1+2+3+4 of 16
    assert causal_tile_fraction(256, 128, 128) == 3 / 4
    assert causal_tile_fraction(100, 128, 128) == 128 * 128 / 100**2  # one padded tile


def test_padded_matmul_flops_rounds_output_tiles_up():
    out_proj = next(op for op in forward_ops(preset("small"), 2, 256) if op.name == "out_proj")
    assert padded_matmul_flops(out_proj) == out_proj.forward_flops
    assert padded_matmul_flops(out_proj, 64, 48 * 4) / out_proj.forward_flops == pytest.approx(1.0)
    assert padded_matmul_flops(out_proj, 64, 500) / out_proj.forward_flops == pytest.approx(1000 / 768)


def test_forward_ops_models_grouped_query_and_two_matrix_mlp():
    config = preset("small", n_kv_heads=4, mlp="gelu")
    ops = {op.name: op for op in forward_ops(config, 1, 128)}
    assert ops["qkv_proj"].shape == (128, 768, 768 + 2 * 4 * 64)
    assert ops["ffn_w1_w3"].shape == (128, 768, config.d_ff)


def test_sweep_counted_flops_grow_with_every_axis():
    model, _ = _model("lmperf_small_l2")
    rows = sweep_rows(model, 2, [128, 256, 512], [2, 4], [256, 512], 256)
    for axis in ("seq_len", "n_layers", "d_model"):
        counted = [r["counted"] for r in rows if r["axis"] == axis]
        assert counted == sorted(counted)
    assert all(r["half"] <= r["counted"] <= r["full"] for r in rows)


def test_hf_config_without_shapes_is_a_usage_error():
    with pytest.raises(UsageError):
        ex.from_hf_config({"model_type": "gpt2"})


@pytest.mark.parametrize(
    "args",
    [
        ["pmc", "explain", "x.csv"],  # no known model
        ["pmc", "explain", "--preset", "small"],  # no capture, no sweep
        ["pmc", "explain", "/no/such.csv", "--preset", "small"],
        ["pmc", "explain", "--sweep", "--preset", "nope"],
    ],
)
def test_explain_bad_input_is_one_line_and_exit_2(args):
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2, out.output
    assert len(out.stderr.strip().splitlines()) == 1


def test_explain_cli_prints_both_tables(tmp_path):
    out = CliRunner().invoke(
        app,
        [
            "pmc",
            "explain",
            str(FIXTURES / "opt_l4_d512.csv.gz"),
            "--hf-config",
            str(_write_config(tmp_path)),
            "--batch",
            "4",
            "--context",
            "128",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "residual" in out.stdout and "ffn_w2" in out.stdout and "attn_scores" in out.stdout


def test_sweep_cli_writes_rows_table_and_png(tmp_path):
    out = CliRunner().invoke(
        app,
        [
            "pmc",
            "explain",
            "--sweep",
            "--preset",
            "small",
            "--contexts",
            "128,256",
            "--layers",
            "2,4",
            "--widths",
            "256,512",
            "--runs",
            str(tmp_path),
        ],
    )
    assert out.exit_code == 0, out.output
    run = next(tmp_path.iterdir())
    assert {"results.jsonl", "sweep.md", "sweep.png"} <= {p.name for p in run.iterdir()}


def _write_config(tmp_path):
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(TARGETS["opt_l4_d512"].hf_config))
    return path

"""Inference on every committed capture: structural fields against the configuration that ran."""

import json
import re

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.pmc.infer import infer_file
from lmperf.pmc.result import FIELDS

from pmc_fixtures import FIXTURES, MODEL_CAPTURES, truth

EXACT = ("mode", "dtype", "batch", "seq_len", "n_layers", "d_model", "n_heads", "n_kv_heads",
         "head_dim", "d_ff", "mlp")


@pytest.mark.parametrize("name", MODEL_CAPTURES)
def test_structural_fields_match_the_configuration_that_ran(name):
    result, expected = infer_file(FIXTURES / f"{name}.csv.gz"), truth(name)
    for field in EXACT:
        assert result.values[field] == expected[field], (field, result.evidence.get(field))
    assert result.values["params_blocks"] == pytest.approx(expected["params_blocks"], rel=0.01)
    if expected["mode"] == "train_step":  # the loss's log-softmax pins the vocabulary
        assert result.values["vocab_size"] == expected["vocab_size"]
    else:  # only bounded: the LM head's tiles (up to 256 wide) round it up
        assert expected["vocab_size"] <= result.values["vocab_size"] <= expected["vocab_size"] + 256


@pytest.mark.parametrize("name", MODEL_CAPTURES)
def test_every_field_has_a_confidence_and_evidence(name):
    result = infer_file(FIXTURES / f"{name}.csv.gz")
    for field in FIELDS:
        assert 0.0 < result.confidence[field] <= 1.0
        assert result.evidence[field]


def test_a_capture_that_is_no_language_model_reports_what_is_missing():
    result = infer_file(FIXTURES / "cli_cmd_matmul.csv.gz")  # one 512x512 fp32 matmul
    assert result.values["n_layers"] is None and result.values["d_model"] is None
    assert result.missing
    assert result.values["dtype"] == "fp32"


def test_cli_json_prints_one_object_with_every_key():
    out = CliRunner().invoke(app, ["pmc", "infer", str(FIXTURES / "llama_l4_d512_gqa.csv.gz"), "--json"])
    assert out.exit_code == 0
    payload = json.loads(out.stdout)
    assert set(FIELDS) | {"confidence", "evidence"} <= set(payload)
    assert payload["n_kv_heads"] == 2 and payload["mlp"] == "gated"


def test_cli_report_is_readable():
    out = CliRunner().invoke(app, ["pmc", "infer", str(FIXTURES / "gpt2_l4_d512.csv.gz")])
    assert out.exit_code == 0 and "n_layers" in out.stdout and "Assumptions" in out.stdout


@pytest.mark.parametrize("args", [["pmc", "infer", "/no/such.csv"], ["pmc", "infer", __file__]])
def test_cli_bad_input_is_one_line_and_exit_2(args):
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name, extent", [
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x256x8_stage3_warpsize2x4x1", 256),
    ("nvjet_sm90_tst_64x40_64x16_1x4_h_bz_NNT", 64),
    ("void cutlass::Kernel2<cutlass_75_tensorop_f16_s1688gemm_f16_128x128_tn_align8>(T1::Params)", 128),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", None),
])
def test_tile_extent_bounds_the_padding_of_a_width(name, extent):
    from lmperf.pmc.gemms import tile_extent
    assert tile_extent(name) == extent


@pytest.mark.parametrize("name", [n for n in MODEL_CAPTURES if truth(n)["mode"] == "forward"])
def test_a_forward_only_vocabulary_is_reported_as_an_interval_that_holds_the_truth(name):
    result = infer_file(FIXTURES / f"{name}.csv.gz")
    expected = truth(name)["vocab_size"]
    if result.confidence["vocab_size"] >= 0.9:  # pinned by a loss (lmperf's own forward has one)
        assert result.values["vocab_size"] == expected
        return
    low, high = map(int, re.search(r"V is in \[(\d+), (\d+)\]", result.evidence["vocab_size"]).groups())
    assert low <= expected <= high == result.values["vocab_size"]

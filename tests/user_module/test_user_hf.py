"""A Hugging Face Llama instance (random weights, from a config) as `--module`: its output's
`logits` are the logits, its count falls back to a real sequence (its mask code calls .item(),
which meta tensors cannot), and its FLOPs equal 6·N + attention exactly, grouped K/V included."""

import json

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.report.rundir import read_rows
from scratch_model import HF_LLAMA

pytest.importorskip("transformers")

V, D, F, L, H, KV = 500, 64, 128, 2, 4, 2
WIDTHS = {
    "vocab_size": V,
    "hidden_size": D,
    "intermediate_size": F,
    "num_hidden_layers": L,
    "num_attention_heads": H,
    "num_key_value_heads": KV,
}
BATCH, T = 2, 16


def test_bench_a_hugging_face_llama(tmp_path):
    args = [
        "bench",
        "--module",
        HF_LLAMA,
        "--module-args",
        json.dumps(WIDTHS),
        "-t",
        str(T),
        "--batch",
        str(BATCH),
        "--modes",
        "forward,train-step",
        "--loss",
        "eager,fused",
        "--warmup",
        "0",
        "--steps",
        "1",
        "--device",
        "cpu",
        "--runs",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = read_rows(next(tmp_path.iterdir()) / "results.jsonl")
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok"}
    module = rows[0]["module"]
    assert (module["blocks"], module["head"], module["vocab_size"], module["width"]) == (
        "model.layers",
        "lm_head",
        V,
        D,
    )
    # q and o d×d, k and v d×(KV·d/H), gate, up and down d×F per layer; the untied head d×V
    assert module["matmul_params"] == L * (2 * D * D + 2 * D * KV * D // H + 3 * D * F) + D * V
    for row in rows:
        assert row["flop_count"].startswith("FlopCounterMode on cpu tensors")
        assert row["flops_over_transformer"] == pytest.approx(1.0, rel=1e-12)

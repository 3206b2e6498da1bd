"""One Hugging Face config reader: families mapped onto ModelConfig, bench --hf-config on a CPU."""

import dataclasses
import gzip
import json
import os
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.errors import UsageError
from lmperf.model import TransformerLM, parameter_count
from lmperf.model.choice import ModelChoice
from lmperf.model.hf_config import from_fields, read_hf_config
from lmperf.model.step import StepConfig
from lmperf.report.rundir import read_rows
from lmperf.run.sweep import row_key

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
CONFIGS = BENCHMARKS / "configs"
TINY = [
    "--d-model",
    "64",
    "--d-ff",
    "96",
    "--layers",
    "2",
    "--heads",
    "4",
    "--vocab",
    "300",
    "-t",
    "24",
    "--batch",
    "2",
    "--warmup",
    "0",
    "--steps",
    "1",
    "--modes",
    "train-step",
]


def test_llama_gqa_config_maps_exactly_and_counts_the_published_parameters():
    model = read_hf_config(CONFIGS / "llama-1b-gqa.json")
    config = model.config
    assert (model.name, model.approximations) == ("llama-1b-gqa", ())
    assert (config.d_model, config.d_ff, config.n_layers, config.n_heads, config.n_kv_heads) == (2048, 8192, 16, 32, 8)
    assert (config.vocab_size, config.max_seq_len, config.tie_embeddings, config.mlp) == (
        128256,
        131072,
        True,
        "swiglu",
    )
    assert config.rope_theta == 500000.0
    # Llama-3.2-1B's model card: 1,235,814,400 parameters (tied head counted once).
    assert parameter_count(config)["total"] == 1_235_814_400


def test_gpt2_config_runs_as_a_gelu_mlp_and_says_what_is_approximated():
    model = read_hf_config(CONFIGS / "gpt2.json")
    config = model.config
    assert (config.d_model, config.d_ff, config.n_heads, config.n_kv_heads) == (768, 3072, 12, 12)
    assert (config.mlp, config.tie_embeddings, config.max_seq_len) == ("gelu", True, 1024)
    assert "learned position table run as rotary" in model.approximations
    # GPT-2 small has 124,439,808 parameters. lmperf lacks, by hand: per block the linear biases
    # (3d + d + 4d + d) and two LayerNorm shifts (2d); the final LayerNorm's shift (d); the
    # 1024 x d position table.
    d = 768
    missing = 12 * (3 * d + d + 4 * d + d + 2 * d) + d + 1024 * d
    assert parameter_count(config)["total"] == 124_439_808 - missing


@pytest.mark.parametrize(
    "fields, expected",
    [
        (
            {
                "model_type": "opt",
                "hidden_size": 512,
                "ffn_dim": 2048,
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "vocab_size": 50272,
            },
            dict(d_ff=2048, mlp="gelu", tie_embeddings=True, max_seq_len=2048),
        ),
        (
            {
                "model_type": "gpt_neox",
                "hidden_size": 512,
                "intermediate_size": 2048,
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "vocab_size": 32000,
            },
            dict(d_ff=2048, mlp="gelu", tie_embeddings=False, n_kv_heads=8),
        ),
        (
            {
                "model_type": "qwen2",
                "hidden_size": 896,
                "intermediate_size": 4864,
                "num_hidden_layers": 2,
                "num_attention_heads": 14,
                "num_key_value_heads": 2,
                "vocab_size": 151936,
                "tie_word_embeddings": True,
            },
            dict(n_kv_heads=2, mlp="swiglu", tie_embeddings=True),
        ),
        (
            {
                "model_type": "mistral",
                "hidden_size": 512,
                "intermediate_size": 1536,
                "num_hidden_layers": 3,
                "num_attention_heads": 8,
                "num_key_value_heads": 2,
                "vocab_size": 32000,
            },
            dict(n_kv_heads=2, max_seq_len=32768),
        ),
    ],
)
def test_families_map_onto_model_config(fields, expected):
    config = from_fields(fields).config
    assert {k: getattr(config, k) for k in expected} == expected


LLAMA_FIELDS = {
    "model_type": "llama",
    "hidden_size": 512,
    "intermediate_size": 1536,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
}


@pytest.mark.parametrize(
    "rope, theta, scaled",
    [
        ({"rope_theta": 500000.0}, 500000.0, False),  # a config.json as older transformers wrote it
        ({"rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"}}, 500000.0, False),  # transformers 5
        ({"rope_parameters": {"rope_theta": 500000.0, "rope_type": "llama3", "factor": 32.0}}, 500000.0, True),
        ({"rope_theta": 20000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 20000.0, True),
        ({}, 10000.0, False),
    ],
)
def test_rope_theta_and_scaling_read_from_either_layout(rope, theta, scaled):
    model = from_fields({**LLAMA_FIELDS, **rope})
    assert model.config.rope_theta == theta
    assert ("rope scaling left out (it changes no cost)" in model.approximations) == scaled


# A tiny shape, no head_dim named: d 128, 4 heads (of 32 derived, of 128 as Qwen3's default), 2 K/V heads.
QWEN3_TINY = {
    "hidden_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "intermediate_size": 192,
    "vocab_size": 500,
}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"model_type": "bert", "hidden_size": 64}, "not mapped"),
        ({"model_type": "gpt2"}, "lacks"),
        ({"model_type": "qwen3", **QWEN3_TINY, "head_dim": 63}, "head dimension 63 is odd"),
        ({"model_type": "qwen3", **QWEN3_TINY, "head_dim": 0}, "head_dim must be positive, got 0"),
        ({"model_type": "llama", **QWEN3_TINY, "head_dim": -64}, "head_dim must be positive, got -64"),
        (
            {
                "model_type": "llama",
                "hidden_size": 512,
                "num_attention_heads": 8,
                "num_key_value_heads": 3,
                "num_hidden_layers": 2,
                "intermediate_size": 8,
            },
            "multiple",
        ),
    ],
)
def test_configs_lmperf_cannot_run_are_usage_errors(fields, message):
    with pytest.raises(UsageError, match=message):
        from_fields(fields)


def test_a_name_that_is_no_file_needs_transformers(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed
    with pytest.raises(UsageError, match="needs transformers"):
        read_hf_config("meta-llama/Llama-3.2-1B")


def test_a_file_that_is_not_json_is_a_usage_error(tmp_path):
    (tmp_path / "config.json").write_text("{nope")
    with pytest.raises(UsageError, match="not JSON"):
        read_hf_config(tmp_path)  # a folder reads its config.json


@pytest.mark.parametrize("name", ["llama-1b-gqa", "gpt2", "qwen3-0.6b"])
def test_bench_hf_config_runs_on_a_cpu_with_tiny_widths(tmp_path, name):
    args = ["bench", "--hf-config", str(CONFIGS / f"{name}.json"), *TINY, "--runs", str(tmp_path)]
    if name != "gpt2":  # the config's 8 K/V heads do not divide the new 4 query heads
        args += ["--kv-heads", "2"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    (row,) = read_rows(next(tmp_path.iterdir()) / "results.jsonl")
    assert row["status"] == "ok" and row["preset"] == f"{name}+custom"
    shape = row["model"]
    assert (shape["d_model"], shape["n_layers"], shape["vocab_size"], shape["tie_embeddings"]) == (64, 2, 300, True)
    if name == "gpt2":
        assert shape["mlp"] == "gelu" and "rotary" in row["approximations"]
    else:
        assert shape["n_kv_heads"] == 2 and row["approximations"] == ""
    if name == "qwen3-0.6b":  # its heads of 128 stay: 4 x 128 = 512 wide over d 64, with the q and k norms
        assert (shape["head_dim"], shape["qk_norm"]) == (128, True)
        # per block q and o 64 x 512, k and v 64 x 256, SwiGLU 3 x 64 x 96, norms 2 x 64 + 2 x 128
        block = 2 * 64 * 512 + 2 * 64 * 256 + 3 * 64 * 96 + 2 * 64 + 2 * 128
        assert row["params"] == 300 * 64 + 2 * block + 64 == 253_504  # tied: the embedding once
    else:  # a head_dim of d_model / heads (Llama's 64 = 2048 / 32 follows --d-model) is no key of the row
        assert "head_dim" not in shape and "qk_norm" not in shape


def test_resume_keys_on_the_model_shape(tmp_path):
    runner = CliRunner()
    first = ["bench", "-p", "tiny", *TINY[6:], "--runs", str(tmp_path)]
    assert runner.invoke(app, first).exit_code == 0
    run_dir = next(tmp_path.iterdir())
    same = ["bench", "-p", "tiny", *TINY[6:], "--resume", str(run_dir)]
    assert runner.invoke(app, same).exit_code == 0
    assert len(read_rows(run_dir / "results.jsonl")) == 1  # same shape: nothing to do
    grouped = same + ["--kv-heads", "2"]  # another shape is another sweep: refused, not mixed in
    refused = runner.invoke(app, grouped)
    assert refused.exit_code == 2 and "was made with --kv-heads left out, not --kv-heads 2" in refused.stderr
    assert len(read_rows(run_dir / "results.jsonl")) == 1


@pytest.mark.parametrize(
    "extra",
    [
        ["--hf-config", str(CONFIGS / "gpt2.json"), "-p", "tiny"],
        ["--hf-config", "/no/such/config.json"],
        ["-p", "tiny", "--kv-heads", "3"],
        ["-p", "tiny", "--head-dim", "7"],
        ["-p", "tiny", "--head-dim", "0"],
        ["-p", "tiny", "--heads", "3"],  # 64 / 3 heads, and no head_dim
    ],
)
def test_bad_model_options_are_one_line_and_exit_2(tmp_path, extra):
    out = CliRunner().invoke(app, ["bench", *extra, "--runs", str(tmp_path)])
    assert out.exit_code == 2, out.output
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("head_dim, message", [(127, "head dimension 127 is odd"), (0, "head_dim must be positive")])
def test_a_config_with_a_head_dim_lmperf_cannot_run_is_one_line_and_exit_2(tmp_path, head_dim, message):
    fields = json.loads((CONFIGS / "qwen3-0.6b.json").read_text())
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({**fields, "head_dim": head_dim}))
    out = CliRunner().invoke(app, ["bench", "--hf-config", str(bad), *TINY, "--runs", str(tmp_path / "runs")])
    assert out.exit_code == 2, out.output
    assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr
    assert not (tmp_path / "runs").exists()  # refused before a run directory


TINY_SHAPE = [*TINY[:10], "--kv-heads", "2"]  # the widths alone, grouped-query


def test_profile_takes_the_same_model_options(tmp_path):
    out = CliRunner().invoke(
        app,
        [
            "profile",
            "--hf-config",
            str(CONFIGS / "llama-1b-gqa.json"),
            *TINY_SHAPE,
            "-t",
            "16",
            "--modes",
            "forward",
            "--warmup",
            "1",
            "--steps",
            "1",
            "--runs",
            str(tmp_path),
        ],
    )
    assert out.exit_code == 0, out.output
    (row,) = read_rows(next(tmp_path.iterdir()) / "results.jsonl")
    assert row["status"] == "ok"
    assert (row["model"]["d_model"], row["model"]["n_heads"], row["model"]["n_kv_heads"]) == (64, 4, 2)


def test_bench_dist_takes_the_same_model_options(tmp_path):
    import subprocess

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lmperf.cli",
            "bench-dist",
            "--device",
            "cpu",
            "--nproc",
            "2",
            "--strategy",
            "ddp",
            "--hf-config",
            str(CONFIGS / "llama-1b-gqa.json"),
            *TINY_SHAPE,
            "-t",
            "16",
            "--modes",
            "train-step",
            "--warmup",
            "0",
            "--steps",
            "1",
            "--runs",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (row,) = read_rows(next(tmp_path.iterdir()) / "results.jsonl")
    assert row["status"] == "ok" and row["nproc"] == 2
    assert (row["model"]["d_model"], row["model"]["n_kv_heads"], row["model"]["vocab_size"]) == (64, 2, 300)


def _fake_hub_cache(root: Path, name: str, config: Path) -> dict:
    """A Hugging Face hub cache laid out as huggingface_hub writes it (models--ORG--NAME, refs/main
    naming a snapshot, snapshots/<commit>/config.json) holding `name`, and the environment that
    points a process at it with the hub switched offline."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / "hub" / ("models--" + name.replace("/", "--"))
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit / "config.json").write_bytes(config.read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    return {
        **env,
        "HF_HOME": str(root),
        "HF_HUB_CACHE": str(root / "hub"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(Path(__file__).parents[1] / "src"),
    }


def test_bench_reads_a_name_from_the_local_hugging_face_cache(tmp_path):
    """`--hf-config ORG/NAME` through transformers.AutoConfig from the local cache, nothing
    downloaded; an unknown name is one line and exit 2, at once."""
    pytest.importorskip("transformers")
    import subprocess
    import time

    env = _fake_hub_cache(tmp_path / "hf", "acme/tiny-llama", CONFIGS / "llama-1b-gqa.json")
    runs = tmp_path / "runs"

    def lmperf(*args):
        return subprocess.run(
            [sys.executable, "-m", "lmperf.cli", "bench", *args, "--runs", str(runs)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    done = lmperf("--hf-config", "acme/tiny-llama", *TINY, "--kv-heads", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = read_rows(next(runs.iterdir()) / "results.jsonl")
    assert row["status"] == "ok" and row["preset"] == "acme/tiny-llama+custom"
    shape = row["model"]
    assert (shape["d_model"], shape["d_ff"], shape["n_heads"], shape["n_kv_heads"], shape["vocab_size"]) == (
        64,
        96,
        4,
        2,
        300,
    )
    # what the overrides leave alone comes from the cached config.json
    assert (shape["tie_embeddings"], shape["max_seq_len"], shape["rope_theta"], shape["mlp"]) == (
        True,
        131072,
        500000.0,
        "swiglu",
    )
    started = time.monotonic()
    unknown = lmperf("--hf-config", "acme/no-such-model", *TINY)
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1, unknown.stderr
    assert "'acme/no-such-model' is neither a config.json on disk nor in the local Hugging Face cache" in unknown.stderr
    assert time.monotonic() - started < 60  # no network wait (a timeout would take minutes)
    assert len(list(runs.iterdir())) == 1  # the refused name left no run directory


@pytest.mark.parametrize(
    "fields, approximation, expected",
    [
        ({"model_type": "mistral", "sliding_window": None}, "sliding-window", False),
        ({"model_type": "mistral", "sliding_window": 4096}, "sliding-window", True),
        ({"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": False}, "sliding-window", False),
        ({"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": True}, "sliding-window", True),
        ({"model_type": "gpt_neox", "rotary_pct": 1.0}, "partial rotary", False),
        ({"model_type": "gpt_neox", "rotary_pct": 0.25}, "partial rotary", True),
        ({"model_type": "gpt_neox"}, "partial rotary", True),  # GPT-NeoX's default is a quarter of the head
        ({"model_type": "gpt_neox", "partial_rotary_factor": 1.0}, "partial rotary", False),
        ({"model_type": "gpt_neox", "use_parallel_residual": False}, "parallel residual", False),
        ({"model_type": "gpt_neox"}, "parallel residual", True),
        ({"model_type": "qwen3", "sliding_window": 4096, "use_sliding_window": False}, "sliding-window", False),
        ({"model_type": "qwen3", "sliding_window": 4096, "use_sliding_window": True}, "sliding-window", True),
        ({"model_type": "qwen3", "attention_bias": False}, "Q/K/V/O projection biases", False),
        ({"model_type": "qwen3", "attention_bias": True}, "Q/K/V/O projection biases", True),
        ({"model_type": "llama", "attention_bias": True}, "Q/K/V/O projection biases", True),
    ],
)
def test_an_approximation_is_written_only_where_the_config_uses_the_feature(fields, approximation, expected):
    shape = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128}
    model = from_fields({**shape, **fields})
    assert any(approximation in a for a in model.approximations) == expected, model.approximations


def test_qwen3_config_maps_every_field():
    """Qwen3-0.6B's config.json: 16 query heads of 128 over d 1024 (an attention 2048 wide), 8 K/V
    heads, the per-head q and k norms, tied embeddings. Its model card says 0.44B parameters
    besides the embedding, 0.6B in all; counted by hand here."""
    model = read_hf_config(CONFIGS / "qwen3-0.6b.json")
    assert (model.name, model.approximations) == ("qwen3-0.6b", ())
    assert dataclasses.asdict(model.config) == dict(
        d_model=1024,
        d_ff=3072,
        n_layers=28,
        n_heads=16,
        vocab_size=151936,
        max_seq_len=40960,
        rope_theta=1_000_000.0,
        norm_eps=1e-6,
        attention="naive",
        n_kv_heads=8,
        tie_embeddings=True,
        mlp="swiglu",
        head_dim=128,
        qk_norm=True,
    )
    assert (model.config.attention_width, model.config.kv_width) == (2048, 1024)
    # a block: q and o 1024 x 2048, k and v 1024 x 1024, SwiGLU 3 x 1024 x 3072, two norms of
    # 1024 and the q and k norms of 128
    block = 2 * 1024 * 2048 + 2 * 1024 * 1024 + 3 * 1024 * 3072 + 2 * 1024 + 2 * 128
    counts = parameter_count(model.config)
    assert counts["blocks"] + counts["final_norm"] == 28 * block + 1024 == 440_467_456
    assert counts["total"] == 440_467_456 + 151936 * 1024 == 596_049_920


def test_qwen3_fields_left_out_take_qwen3s_defaults():
    """transformers' Qwen3Config: head_dim 128 whatever hidden_size / heads is (32 here), untied,
    32768 positions; the per-head norms are Qwen3's own, always on. (The parameter test below
    builds these fields with transformers itself.)"""
    config = from_fields({"model_type": "qwen3", **QWEN3_TINY}).config
    assert (config.head_dim, config.attention_width, config.tie_embeddings, config.max_seq_len) == (
        128,
        512,
        False,
        32768,
    )
    assert config.qk_norm and not from_fields({"model_type": "qwen2", **QWEN3_TINY}).config.qk_norm


def test_a_head_dim_other_than_hidden_size_over_heads_is_read():
    """Mistral-Nemo's 32 heads of 128 over d 5120: an attention 4096 wide. A Llama config naming
    the head_dim hidden_size / heads gives the model, and the row, it gives without naming it."""
    nemo = from_fields(
        {
            "model_type": "mistral",
            "hidden_size": 5120,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "num_hidden_layers": 40,
            "intermediate_size": 14336,
            "vocab_size": 131072,
        }
    ).config
    assert (nemo.head_dim, nemo.attention_width, nemo.kv_width, nemo.qk_norm) == (128, 4096, 1024, False)
    named = from_fields({**LLAMA_FIELDS, "head_dim": 64}).config  # 512 / 8 heads
    assert named == from_fields(LLAMA_FIELDS).config
    assert named.to_dict() == from_fields(LLAMA_FIELDS).config.to_dict() and "head_dim" not in named.to_dict()


QWEN3_4B = {
    "model_type": "qwen3",
    "hidden_size": 2560,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_hidden_layers": 36,
    "intermediate_size": 9728,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}
QWEN3_8B = {**QWEN3_4B, "hidden_size": 4096, "intermediate_size": 12288, "tie_word_embeddings": False}


@pytest.mark.parametrize(
    "fields",
    [
        json.loads((CONFIGS / "qwen3-0.6b.json").read_text()),
        QWEN3_4B,  # 32 heads of 128 over d 2560, tied
        QWEN3_8B,  # 32 heads of 128 over d 4096, untied
        {"model_type": "qwen3", **QWEN3_TINY},  # head_dim left out: Qwen3's 128
        {"model_type": "mistral", **QWEN3_TINY, "head_dim": 48},  # Mistral-Nemo-like: no q/k norms
    ],
    ids=["qwen3-0.6b", "qwen3-4b", "qwen3-8b", "qwen3-tiny", "mistral-head-dim"],
)
def test_parameters_are_those_of_transformers_own_model(fields):
    """transformers builds the same config as its own model (on the meta device); its parameters,
    the tied matrix counted once, are lmperf's closed form and lmperf's modules."""
    transformers = pytest.importorskip("transformers")
    config = from_fields(fields).config
    hf_fields = {k: v for k, v in fields.items() if not k.startswith("_") and k != "model_type"}
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(fields["model_type"], **hf_fields)
        )
        ours = TransformerLM(config)
    expected = sum(p.numel() for p in theirs.parameters())
    assert parameter_count(config)["total"] == sum(p.numel() for p in ours.parameters()) == expected


def _model_with(config_path: Path, **overrides):
    """The model `--hf-config config_path` with these fields given on top runs."""
    (base,) = ModelChoice.from_options(str(config_path), **overrides).bases(None)
    return base.model_config()


@pytest.mark.parametrize(
    "overrides, head_dim",
    [
        (dict(d_model=64, n_heads=4, n_kv_heads=2), 128),
        (dict(d_model=100), 128),  # 16 heads of 128 over d 100: no need to divide it
        (dict(n_heads=12, n_kv_heads=4), 128),
        (dict(d_model=64, n_heads=4, n_kv_heads=2, head_dim=32), 32),  # --head-dim sets it
    ],
)
def test_overrides_keep_a_head_dim_of_the_models_own(overrides, head_dim):
    """Qwen3-0.6B's heads of 128 are not d_model / heads (1024 / 16 = 64): --d-model and --heads
    leave them as they are, so the attention is --heads x 128 wide, the q and k norms on."""
    config = _model_with(CONFIGS / "qwen3-0.6b.json", **overrides)
    assert (config.head_dim, config.attention_width, config.qk_norm) == (head_dim, config.n_heads * head_dim, True)
    assert {k: getattr(config, k) for k in overrides} == overrides


def test_overrides_move_a_head_dim_of_d_model_over_heads(tmp_path):
    """A head_dim of d_model / heads is the derived one: Llama-3.2-1B's 64 (2048 / 32) and
    Qwen3-8B's 128 (4096 / 32) follow --d-model and --heads, as in a config that names none;
    --head-dim keeps them."""
    qwen3_8b = tmp_path / "qwen3-8b.json"
    qwen3_8b.write_text(json.dumps(QWEN3_8B))
    for path in (CONFIGS / "llama-1b-gqa.json", qwen3_8b):
        assert _model_with(path, d_model=64, n_heads=4, n_kv_heads=2).head_dim == 16
        assert _model_with(path, d_model=256).head_dim == 8
        assert _model_with(path, d_model=64, n_heads=4, n_kv_heads=2, head_dim=128).head_dim == 128
    assert _model_with(qwen3_8b, d_model=64, n_heads=4, n_kv_heads=2).qk_norm


def test_qk_norm_flag_turns_the_norms_off_a_qwen3_and_on_a_llama():
    """--no-qk-norm drops Qwen3's q and k norms (their 2 x 128 gains a layer go from the count);
    --qk-norm adds them to a config that has none."""
    qwen3 = CONFIGS / "qwen3-0.6b.json"
    with_norms, without = _model_with(qwen3), _model_with(qwen3, qk_norm=False)
    assert with_norms.qk_norm and not without.qk_norm and without.head_dim == 128
    assert parameter_count(with_norms)["total"] - parameter_count(without)["total"] == 28 * 2 * 128
    assert _model_with(CONFIGS / "llama-1b-gqa.json", qk_norm=True).qk_norm


OLD_SHAPE_KEYS = {
    "d_model",
    "d_ff",
    "n_layers",
    "n_heads",
    "vocab_size",
    "max_seq_len",
    "rope_theta",
    "norm_eps",
    "n_kv_heads",
    "tie_embeddings",
    "mlp",
}


def test_committed_rows_keep_their_resume_keys():
    """Rows on disk name no head_dim or qk_norm. Each committed bench row's shape reads back to the
    same dict, and the config the reader now makes of llama-1b-gqa.json (which names its head_dim,
    64 = 2048 / 32) keys as its committed rows do: resuming their run directory finds them done."""
    with gzip.open(BENCHMARKS / "rows" / "bench-h100.jsonl.gz", "rt") as rows:
        shaped = [row for row in map(json.loads, rows) if isinstance(row.get("model"), dict)]
    assert shaped and all(set(row["model"]) == OLD_SHAPE_KEYS for row in shaped)
    for row in shaped:
        assert StepConfig.from_dict(row).to_dict()["model"] == row["model"]
    llama = read_hf_config(CONFIGS / "llama-1b-gqa.json").config
    committed = [row for row in shaped if row["preset"] == "llama-1b-gqa"]
    assert committed
    for row in committed:
        rerun = dataclasses.replace(StepConfig.from_dict(row), model=llama)
        assert row_key(rerun.to_dict()) == row_key(row)


@pytest.mark.parametrize("model", [["-p", "tiny"], ["--hf-config", str(CONFIGS / "qwen3-0.6b.json"), *TINY[:10]]])
def test_a_run_resumes_with_nothing_to_do(tmp_path, model):
    """A tiny preset's rows carry the keys rows always carried; a Qwen3 run's carry head_dim and
    qk_norm too. Either run directory, resumed, has nothing left to run; asking for another head
    width is another sweep, refused."""
    runner = CliRunner()
    extra = ["--kv-heads", "2"] if "--hf-config" in model else []
    assert runner.invoke(app, ["bench", *model, *extra, *TINY[10:], "--runs", str(tmp_path)]).exit_code == 0
    run_dir = next(tmp_path.iterdir())
    (row,) = read_rows(run_dir / "results.jsonl")
    qwen3 = "--hf-config" in model
    assert set(row["model"]) == OLD_SHAPE_KEYS | ({"head_dim", "qk_norm"} if qwen3 else set())
    assert runner.invoke(app, ["bench", "--resume", str(run_dir)]).exit_code == 0
    assert len(read_rows(run_dir / "results.jsonl")) == 1
    refused = runner.invoke(app, ["bench", "--resume", str(run_dir), "--head-dim", "32"])
    assert refused.exit_code == 2 and "was made with" in refused.stderr and refused.stderr.count("\n") == 1
    assert len(read_rows(run_dir / "results.jsonl")) == 1

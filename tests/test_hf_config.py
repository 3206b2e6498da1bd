"""One Hugging Face config reader: families mapped onto ModelConfig, bench --hf-config on a CPU."""

import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.errors import UsageError
from lmperf.model import parameter_count
from lmperf.model.hf_config import from_fields, read_hf_config
from lmperf.report.rundir import read_rows

CONFIGS = Path(__file__).parents[1] / "benchmarks" / "configs"
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


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"model_type": "bert", "hidden_size": 64}, "not mapped"),
        ({"model_type": "gpt2"}, "lacks"),
        (
            {
                "model_type": "llama",
                "hidden_size": 512,
                "num_attention_heads": 4,
                "num_hidden_layers": 2,
                "head_dim": 64,
                "intermediate_size": 8,
            },
            "head_dim",
        ),
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


@pytest.mark.parametrize("name", ["llama-1b-gqa", "gpt2"])
def test_bench_hf_config_runs_on_a_cpu_with_tiny_widths(tmp_path, name):
    args = ["bench", "--hf-config", str(CONFIGS / f"{name}.json"), *TINY, "--runs", str(tmp_path)]
    if name == "llama-1b-gqa":  # the config's 8 K/V heads do not divide the new 4 query heads
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
    ],
)
def test_bad_model_options_are_one_line_and_exit_2(tmp_path, extra):
    out = CliRunner().invoke(app, ["bench", *extra, "--runs", str(tmp_path)])
    assert out.exit_code == 2, out.output
    assert len(out.stderr.strip().splitlines()) == 1


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
    ],
)
def test_an_approximation_is_written_only_where_the_config_uses_the_feature(fields, approximation, expected):
    shape = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128}
    model = from_fields({**shape, **fields})
    assert any(approximation in a for a in model.approximations) == expected, model.approximations

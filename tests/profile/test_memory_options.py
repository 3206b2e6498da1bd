"""`lmperf memory` takes bench's model options: the parts that need no GPU (parsing, the shape
each configuration gets, the analytic model of that shape, the rows and memory.md rendered from
them, old run directories rendered again)."""

import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from lmperf.analysis.memory import memory_model
from lmperf.cli import app
from lmperf.model.choice import ModelChoice
from lmperf.profile.memory import MemorySettings, peak_rows
from lmperf.profile.memory_report import write_memory_report
from lmperf.report.rundir import RunDir

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
LLAMA = str(BENCHMARKS / "configs" / "llama-1b-gqa.json")
ENV = {"device": "test", "driver": "n/a", "torch": "t", "triton": "t", "commit": "abc1234", "date": "today"}


def _invoke(*args):
    return CliRunner().invoke(app, ["memory", *args])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_model_options_parse_then_need_cuda(tmp_path):
    out = _invoke("--hf-config", LLAMA, "--layers", "2", "--kv-heads", "4", "-t", "64", "--runs", str(tmp_path))
    assert out.exit_code == 2 and out.stderr.strip().count("\n") == 0 and "needs a CUDA GPU" in out.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "args, message",
    [
        (["-p", "tiny", "--kv-heads", "3"], "not a multiple of n_kv_heads"),
        (["-p", "tiny", "--hf-config", LLAMA], "not both"),
        (["--hf-config", "/no/such/config.json"], "/no/such/config.json"),
        (["-p", "tiny", "--mlp", "relu"], "unknown mlp"),
    ],
)
def test_bad_model_options_are_one_line_and_exit_2_before_the_cuda_check(tmp_path, args, message):
    out = _invoke(*args, "--runs", str(tmp_path))
    assert out.exit_code == 2 and out.stderr.strip().count("\n") == 0 and message in out.stderr, out.output
    assert not any(tmp_path.iterdir())


def test_settings_lay_the_options_over_the_config():
    model = ModelChoice.from_options(LLAMA, n_layers=2, vocab_size=1000)
    configs = MemorySettings(None, (64, 128), ("bf16",), 2, "sdpa", model=model).configs()
    assert [(c.seq_len, c.precision, c.attention, c.batch) for c in configs] == [
        (64, "bf16", "sdpa", 2),
        (128, "bf16", "sdpa", 2),
    ]
    shape = configs[0].model_config()
    # the config's own GQA, widths and tied embeddings; the two fields given on top
    assert (shape.d_model, shape.d_ff, shape.n_heads, shape.n_kv_heads, shape.tie_embeddings) == (
        2048,
        8192,
        32,
        8,
        True,
    )
    assert (shape.n_layers, shape.vocab_size, configs[0].preset) == (2, 1000, "llama-1b-gqa+custom")
    assert MemorySettings().configs()[0].preset == "small"  # nothing given: the small preset
    grouped = MemorySettings("tiny", (16,), ("fp32",), model=ModelChoice.from_options(n_kv_heads=1)).configs()
    assert grouped[0].model_config().n_kv_heads == 1 and grouped[0].preset == "tiny+custom"


def test_rows_and_memory_md_carry_the_shape_and_its_analytic_model(tmp_path):
    model = ModelChoice.from_options(LLAMA, n_layers=2, vocab_size=1000)
    (config,) = MemorySettings(None, (64,), ("bf16",), 2, "sdpa", model=model).configs()
    measured = {
        "parameters": 10**8,
        "saved_by_forward": 10**7,
        "peak_forward": 2 * 10**8,
        "optimizer_state": 2 * 10**8,
        "peak_train-step": 6 * 10**8,
    }
    run_dir = RunDir.create("memory", tmp_path)
    for row in peak_rows(config, measured, ENV):
        run_dir.append(row)
    rows = run_dir.rows()
    assert rows[0]["model"]["n_kv_heads"] == 8 and rows[0]["model"]["tie_embeddings"] is True
    shape = config.model_config()
    analytic = memory_model(shape, 2, 64, "bf16")
    untied_mha = memory_model(shape.with_(n_kv_heads=32, tie_embeddings=False), 2, 64, "bf16")
    assert analytic.peak("forward") < untied_mha.peak("forward")  # the shape reaches the model
    assert rows[0]["analytic_peak_gb"] == analytic.peak("forward") / 1e9
    write_memory_report(run_dir.path)
    text = (run_dir.path / "memory.md").read_text()
    assert "Model llama-1b-gqa+custom: d_model 2048, d_ff 8192 (swiglu), 2 layers, 32 heads (8 K/V heads)" in text
    assert "vocabulary 1,000" in text and "tied embeddings" in text and "commit abc1234" in text
    assert f"| {analytic.peak('forward') / 1e9:.2f} |" in text


def test_the_model_line_names_heads_of_their_own_width_and_the_qk_norms():
    from lmperf.model import preset
    from lmperf.model.step import StepConfig
    from lmperf.profile.memory_report import model_line

    qwen3 = StepConfig("qwen3", 64, "forward", model=preset("tiny", head_dim=32, n_kv_heads=2, qk_norm=True))
    assert "2 layers, 4 heads of 32 (2 K/V heads), q/k norms, vocabulary 512" in model_line(qwen3.to_dict())
    assert "2 layers, 4 heads, vocabulary 512" in model_line(StepConfig("tiny", 64, "forward").to_dict())


def test_committed_memory_runs_render_again(tmp_path):
    """Rows measured before the shape was recorded get their preset's, and keep their figures."""
    committed = BENCHMARKS / "profile-h100" / "memory-2.7B"
    copy = tmp_path / "memory-2.7B"
    shutil.copytree(committed, copy)
    (copy / "memory.md").unlink()
    out = _invoke("--render", str(copy))
    assert out.exit_code == 0, out.output
    text = (copy / "memory.md").read_text()
    assert "Model 2.7B: d_model 2560, d_ff 10240 (swiglu), 32 layers, 32 heads, vocabulary 10,000" in text
    assert "| 2.7B | 512 | 4 | bf16 | naive | train-step | ok | 65.14 |" in text  # the measured peak

"""`lmperf memory` without CUDA, snapshot parsing, the dtype table under CPU autocast, the
accumulation demo, and the nsys command."""

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.model.step import StepConfig
from lmperf.profile import snapshot as snap
from lmperf.profile.nsys import nsys_command, run_nsys
from lmperf.profile.precision import accumulation_demo, dtype_table


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_memory_without_cuda_is_one_line_and_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["memory", "--runs", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "needs a CUDA GPU" in result.output
    assert not any(tmp_path.iterdir())


def _event(action, size, filename="/x/lmperf/model/transformer.py", line=10, name="forward"):
    return {
        "action": action,
        "size": size,
        "frames": [
            {"filename": "/site/torch/nn/modules/module.py", "line": 1, "name": "_call_impl"},
            {"filename": filename, "line": line, "name": name},
        ],
    }


def test_snapshot_timeline_and_largest_allocations():
    events = [
        _event("alloc", 100),
        _event("alloc", 100),
        _event("segment_alloc", 10**9),
        _event("free_requested", 100),
        _event("free_completed", 100),
        {"action": "alloc", "size": 300, "frames": []},
        _event("alloc", 50, "/u/train.py", 7, "main"),
    ]
    assert snap.allocated_over_time(events, start_bytes=1000) == [1100, 1200, 1200, 1200, 1100, 1400, 1450]
    largest = snap.largest_allocations(events, {"forward": 0, "backward": 5}, top=2)
    assert [(a.size_mb * 1e6, a.count, a.phase, a.line) for a in largest] == [
        (300, 1, "backward", "-"),
        (100, 2, "forward", "transformer.py:10 in forward"),
    ]
    assert snap.python_line(events[-1]["frames"]) == "train.py:7 in main"


def test_dtype_table_under_cpu_bf16_autocast():
    rows, loss_dtype = dtype_table(StepConfig("tiny", 16, "forward"), "bf16", "cpu")
    by_module = {row["module"]: row for row in rows}
    linear = by_module["blocks.0.attn.qkv_proj"]
    assert (linear["param_dtype"], linear["output_dtype"], linear["param_grad_dtype"]) == (
        "float32",
        "bfloat16",
        "float32",
    )
    assert linear["output_grad_dtype"] == "bfloat16"
    assert by_module["blocks.0.attn_norm"]["output_dtype"] == "float32"  # RMSNorm normalises in fp32
    assert by_module["embedding"]["output_dtype"] == "float32"
    assert by_module["lm_head"]["output_dtype"] == "bfloat16" and loss_dtype == "float32"
    assert "blocks" not in by_module  # a ModuleList is never called


def test_accumulation_errors_order():
    fp32, fp16, mixed = accumulation_demo()
    assert fp16.result == 9.953125  # fp16 spacing near 10 is 2^-7: each +0.01 rounds
    assert fp32.abs_error < mixed.abs_error < fp16.abs_error
    assert mixed.result == pytest.approx(1000 * float(torch.tensor(0.01, dtype=torch.float16)), rel=1e-6)


def test_nsys_command_captures_the_measured_range(monkeypatch):
    command = nsys_command(["python", "-m", "lmperf.cli", "profile", "--under-nsys"], "out/profile", 2)
    assert command[:2] == ["nsys", "profile"]
    assert "--capture-range=nvtx" in command and "--nvtx-capture=lmperf_measured" in command
    assert "--capture-range-end=repeat-shutdown:2" in command and command[-1] == "--under-nsys"
    monkeypatch.setenv("PATH", "")
    assert run_nsys(command) is None


def test_precision_takes_the_model_options():
    gpt2 = str(Path(__file__).parents[2] / "benchmarks" / "configs" / "gpt2.json")
    out = CliRunner().invoke(
        app,
        [
            "precision",
            "--hf-config",
            gpt2,
            "--d-model",
            "64",
            "--d-ff",
            "128",
            "--layers",
            "1",
            "--heads",
            "4",
            "--vocab",
            "300",
            "--device",
            "cpu",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "gpt2+custom under bf16 autocast" in out.output and "blocks.0.ffn.w2" in out.output
    assert "blocks.0.ffn.w3" not in out.output and "blocks.1." not in out.output  # GELU MLP, one layer
    refused = CliRunner().invoke(app, ["precision", "-p", "tiny", "--hf-config", gpt2])
    assert refused.exit_code == 2 and "not both" in refused.stderr

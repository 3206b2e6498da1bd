"""`lmperf memory` and `lmperf precision` with `--module` on a CPU: the from-scratch model's
parameter, gradient and AdamW lines equal bytes worked out by hand, checkpointing its blocks keeps
less for the backward, and the dtype table names its modules."""

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from scratch_model import PARAM_TENSORS, PARAMS, SCRATCH, run_cli

FP32 = 4
ARGS = [
    "memory",
    "--module",
    SCRATCH,
    "-t",
    "16",
    "--batch",
    "2",
    "--precisions",
    "fp32,bf16",
    "--checkpoint",
    "none,full",
]


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    run_dir, rows = run_cli(
        tmp_path_factory.mktemp("runs"), ARGS, key=lambda row: (row["precision"], row["checkpoint"])
    )
    assert "parameters MB" in (run_dir / "memory.md").read_text()
    return rows


def test_parameter_gradient_and_adamw_bytes_by_hand(rows):
    """fp32 parameters and gradients, 4 bytes each; AdamW keeps two fp32 moments per parameter
    and one fp32 step count per parameter tensor. Autocast and checkpointing change none of them."""
    assert len(rows) == 4
    for row in rows.values():
        parts = row["parts"]
        assert row["kind"] == "breakdown" and row["status"] == "ok"
        assert parts["parameters"] == PARAMS * FP32 == 148_096
        assert parts["gradients"] == PARAMS * FP32
        assert parts["optimizer_state"] == 2 * PARAMS * FP32 + PARAM_TENSORS * FP32 == 296_276


def test_checkpointing_keeps_less_for_the_backward(rows):
    for precision in ("fp32", "bf16"):
        assert 0 < rows[(precision, "full")]["parts"]["activations"] < rows[(precision, "none")]["parts"]["activations"]


def test_precision_table_names_the_modules_and_their_dtypes():
    result = CliRunner().invoke(app, ["precision", "--module", SCRATCH, "--device", "cpu"])
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") > 3}
    q_proj = [cell.strip() for cell in lines["layers.0.attn.q_proj"].split("│")[1:-1]]
    assert q_proj == ["layers.0.attn.q_proj", "Linear", "float32", "bfloat16", "bfloat16", "float32"]
    assert lines["layers.1.ln2"].split("│")[4].strip() == "float32"  # this RMSNorm returns its input's dtype


def test_the_peak_replay_counts_whole_allocator_blocks():
    # The caching allocator counts 512-byte blocks (max_memory_allocated does too): a 4-byte
    # optimizer step takes one block, 1000 bytes take two. The replay peaks at the second event:
    # 1024 bytes before the trace, + 512 + 1024.
    from lmperf.profile.breakdown import ALLOC, FREED, _replay_to_peak

    events = [
        {"action": ALLOC, "addr": 1, "size": 4},
        {"action": ALLOC, "addr": 2, "size": 1000},
        {"action": FREED, "addr": 1, "size": 4},
        {"action": FREED, "addr": 9, "size": 512},
    ]
    replay = _replay_to_peak(events, start=1024)
    assert replay.peak_index == 1
    assert replay.live == {1: (512, 0), 2: (1024, 1)} and replay.freed_before == 0


def test_a_temporary_whose_address_a_later_gradient_takes_is_no_gradient():
    # At the peak (event 2) a 256 KiB temporary of the backward lives at address 7; it is freed
    # after the peak and a 1 KiB gradient is allocated at the same address. Only that gradient's
    # address matches a .grad after the step, and it was not alive at the peak: no gradient
    # bytes at the peak, the temporary counts as a temporary.
    from types import SimpleNamespace

    from lmperf.profile.breakdown import ALLOC, FREED, gradient_blocks, _replay_to_peak

    events = [
        {"action": ALLOC, "addr": 3, "size": 4096},  # forward activation
        {"action": ALLOC, "addr": 7, "size": 262144},  # backward temporary
        {"action": ALLOC, "addr": 8, "size": 1024},  # a gradient, alive at the peak
        {"action": FREED, "addr": 7, "size": 262144},
        {"action": ALLOC, "addr": 7, "size": 1024},  # a gradient allocated after the peak
    ]
    grads = [SimpleNamespace(grad=SimpleNamespace(data_ptr=lambda addr=addr: addr)) for addr in (7, 8)]
    step = SimpleNamespace(model=SimpleNamespace(parameters=lambda: grads))
    replay = _replay_to_peak(events, start=0)
    assert replay.peak_index == 2
    assert gradient_blocks(events, replay, backward_starts=1, step=step) == {8: (1024, 2)}

"""The rows and computed figures of benchmarks/leaderboard-h200x2.md (its tables: pages.py): the
CS336 8B step's rows, and what lmperf's analytic models say beside them (FLOPs per kernel
category, MFU by the causal PaLM count, memory per rank).

The rows are lmperf's bench-dist rows (one set per run) and torchtitan's rows from
benchmarks/scripts/torchtitan_step.py. Times are `median_ms` (the statistic rule); the headline
is `leaderboard_ms`, the leaderboard's own procedure.
"""

from __future__ import annotations

import statistics

import figures as F
from lmperf.analysis.flops import attention_kernel_flops, forward_ops
from lmperf.analysis.sharding import DataParallel, state_memory, train_step_peak
from lmperf.model.config import ModelConfig

PAGE = "leaderboard-h200x2"
PEAK_TFLOPS = 989.0  # an H200's dense bf16 tensor-core peak (datasheet)
GOAL_MS, MOONSHOT_MS = 4500.0, 3837.0  # issue 46's goal; the board's best entry (two B200s)
ATTENTION_MATMULS = ("attn_scores", "attn_weighted_sum")  # counted by attention_kernel_flops instead
# What each set's run changed, in the order the page adds the changes, and the sets that show them.
CHANGES = [
    ("step-83e214f", "sdpa", "selective", "baseline: SDPA, its outputs kept"),
    ("step-83e214f", "triton", "selective", "lmperf's attention, an operator selective keeps"),
    ("step-83e214f", "triton", "selective:8", "+ the last 8 blocks keep everything"),
    ("step-83e214f", "triton", "selective:14", "+ the last 14 blocks"),
    ("k18-83e214f", "triton", "selective:18", "+ the last 18 blocks"),
    ("k20-39b5797", "triton", "selective:20", "+ the last 20 blocks"),
    ("mm-39b5797", "triton", "selective-mm", "selective-mm instead: every block keeps QKV, gate, up"),
]


# ----------------------------------------------------------------------------------------- rows


def step(set_name: str, **where) -> dict:
    (row,) = F.of_set(PAGE, set_name, **where)
    return row


def headline() -> dict:
    return step("mm-39b5797")


def profiled() -> dict:
    return step("mm-profile-39b5797")


def titan(checkpoint: str) -> dict:
    return step("torchtitan-83e214f", activation_checkpoint=checkpoint)


def run_stamp(row: dict) -> str:
    """The start time (UTC) of the run directory a row came from: rows with one stamp ran in one
    pair of processes, one after another."""
    folder = row["source"].split("/")[-2]  # YYYYMMDD-HHMMSS-bench-dist
    clock = folder.split("-")[1]
    return f"{clock[:2]}:{clock[2:4]}:{clock[4:]}"


# ------------------------------------------------------------------------------------- analysis


def model_of(row: dict) -> ModelConfig:
    return ModelConfig(**row["model"], attention=row.get("attention", "naive"))


def tokens_per_gpu(row: dict) -> int:
    return row.get("batch", row.get("batch_per_rank")) * row["seq_len"]


def palm_flops(row: dict) -> float:
    """FLOPs per GPU per step by the causal PaLM count: tokens x (6 N + 6 L d T)."""
    model = row["model"]
    per_token = 6 * row["params"] + 6 * model["n_layers"] * model["d_model"] * row["seq_len"]
    return tokens_per_gpu(row) * per_token


def mfu(row: dict, ms: float) -> float:
    return palm_flops(row) / (ms / 1e3) / (PEAK_TFLOPS * 1e12)


def attention_flops(row: dict) -> float:
    """The step's attention FLOPs per GPU: FlashAttention's count (causal: half the square; the
    backward 2.5x the forward) per layer; selective checkpointing keeps attention, so no rerun."""
    config = model_of(row)
    one = attention_kernel_flops(row["batch"] * config.n_heads, row["seq_len"], row["seq_len"], config.head_dim, True)
    return config.n_layers * one["forward_backward"]


def recomputed_matmul_flops(row: dict) -> float:
    """The matmul FLOPs selective-mm runs again in the backward: the output projection's forward
    once per block (no backward needs the down projection's output; tests/test_step_options.py
    counts the recomputed matmuls)."""
    if row["checkpoint"] != "selective-mm":
        raise ValueError(f"the recomputed matmuls of {row['checkpoint']!r} are not counted here")
    return sum(
        op.total_forward for op in forward_ops(model_of(row), row["batch"], row["seq_len"]) if op.name == "out_proj"
    )


def matmul_flops(row: dict) -> float:
    """The step's matmul FLOPs per GPU besides attention's under selective-mm: QKV, output,
    gate/up and down projections and the LM head, forward and backward (3x the forward), and the
    recomputed output projections."""
    ops = forward_ops(model_of(row), row["batch"], row["seq_len"])
    step_flops = 3 * sum(op.total_forward for op in ops if op.is_matmul and op.name not in ATTENTION_MATMULS)
    return step_flops + recomputed_matmul_flops(row)


def category_flops(row: dict) -> dict[str, float]:
    return {"attention": attention_flops(row), "matmul": matmul_flops(row)}


def tflops(flops: float, ms: float) -> float:
    return flops / (ms / 1e3) / 1e12


def layout(row: dict) -> DataParallel:
    return DataParallel(row["strategy"], row["nproc"], bool(row["reshard"]))


def model_between_steps_gb(row: dict) -> float:
    return state_memory(model_of(row), layout(row), row["precision"], row["param_dtype"]).persistent / 1e9


def model_peak_gb(row: dict) -> float:
    config, args = model_of(row), (row["batch"], row["seq_len"], row["precision"], layout(row))
    return train_step_peak(config, *args, row["param_dtype"], row["checkpoint"], row["loss"]) / 1e9


def standalone_attention_tflops() -> float:
    """lmperf's attention alone, forward+backward, at the longest causal head_dim-128 point of
    attention-h100.md's sweep (an H100: the H200's SMs and clocks), from the median time."""
    rows = F.of_set("attention-h100", "sweep-1f651d0", impl="triton", head_dim=128, causal=True, seq=16384)
    first = rows[0]
    flops = attention_kernel_flops(first["batch"] * first["heads"], first["seq"], first["seq"], 128, True)
    return tflops(flops["forward_backward"], statistics.median(r["fwd_bwd_ms"] for r in rows))


def change_rows() -> list[dict]:
    """The rows of CHANGES, in its order."""
    return [
        step(set_name, attention=attention, checkpoint=checkpoint) for set_name, attention, checkpoint, _ in CHANGES
    ]


def memory_rows() -> list[dict]:
    return change_rows() + [step("fp32-master-83e214f")]


def fp32_master_pair() -> tuple[dict, dict]:
    """(bf16, fp32) parameters, both with lmperf's attention and selective:8."""
    return step("step-83e214f", checkpoint="selective:8"), step("fp32-master-83e214f")

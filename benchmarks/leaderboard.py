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
from lmperf.distributed import kernel_table
from lmperf.analysis.sharding import DataParallel, state_memory, train_step_peak
from lmperf.model.checkpointing import BY_WIDTH, block_policies
from lmperf.model.config import ModelConfig

PAGE = "leaderboard-h200x2"
PEAK_TFLOPS = 989.0  # an H200's dense bf16 tensor-core peak (datasheet)
GOAL_MS, MOONSHOT_MS = 4500.0, 3837.0  # issue 46's goal; the board's best entry (two B200s)
ATTENTION_MATMULS = ("attn_scores", "attn_weighted_sum")  # counted by attention_kernel_flops instead
# What each set's run changed, in the order the page adds the changes, and the sets that show them
# (set, attention, checkpointing, optimizer: None where the rows predate the choice, what changed).
OUT12, OUT20 = "selective-mm-out*12+selective-mm*22", "selective-mm-out*20+selective-mm*14"
CHANGES = [
    ("step-83e214f", "sdpa", "selective", None, "baseline: SDPA, its outputs kept"),
    ("step-83e214f", "triton", "selective", None, "lmperf's attention, an operator selective keeps"),
    ("step-83e214f", "triton", "selective:8", None, "+ the last 8 blocks keep everything"),
    ("step-83e214f", "triton", "selective:14", None, "+ the last 14 blocks"),
    ("k18-83e214f", "triton", "selective:18", None, "+ the last 18 blocks"),
    ("k20-39b5797", "triton", "selective:20", None, "+ the last 20 blocks"),
    ("mm-39b5797", "triton", "selective-mm", None, "selective-mm instead: every block keeps QKV, gate, up"),
    ("mm-adamw-58126b9", "triton", "selective-mm", "torch", "the same on a 2 x H200 machine"),
    ("mm-adamw-58126b9", "triton", "selective-mm", "lmperf", "+ lmperf's AdamW instead of PyTorch's fused one"),
    ("out-adamw-58126b9", "triton", OUT12, "lmperf", "+ the first 12 blocks keep the output projection's output"),
    ("out-adamw-58126b9", "triton", OUT20, "lmperf", "+ the first 20 blocks instead"),
]
# The tries of the headline's call that did not help, each beside its own baseline run of the call.
# The headline: 12 blocks of selective-mm-out with lmperf's AdamW, torchtitan after it in the same
# call on the same two GPUs (a 2 x H200 machine).
HEADLINE, SAME_CALL_TITAN = "head-9a55b2b", "torchtitan-9a55b2b"
# The earlier headline, selective-mm, its profiled step and torchtitan in the same call (4 x H200).
EARLIER_HEADLINE, PROFILED, EARLIER_TITAN = "mm-06e1beb", "mm-profile-06e1beb", "torchtitan-06e1beb"
KERNELS = "kernels-06e1beb"  # the profiled step's per-kernel rows
# A later call: selective-mm-out beside selective-mm on GPUs 0,1 (rows from the runs' logs),
# torchtitan and then the profiled selective-mm-out step on GPUs 2,3, every GPU's clock logged.
LATER_CALL, LATER_PROFILED, LATER_TITAN = "out-92a73be", "out-profile-92a73be", "torchtitan-92a73be"
CLOCK_SETS = ("clocks-92a73be", "clocks-6bd415b", "clocks-58126b9", "clocks-9a55b2b")
ADAMW_ALONE = "adamw-alone-58126b9"  # benchmarks/scripts/adamw_alone.py over one rank's shards


# ----------------------------------------------------------------------------------------- rows


def step(set_name: str, **where) -> dict:
    (row,) = F.of_set(PAGE, set_name, **where)
    return row


def headline() -> dict:
    return step(HEADLINE)


def earlier_headline() -> dict:
    """selective-mm with PyTorch's AdamW, the configuration of the profiled step."""
    return step(EARLIER_HEADLINE)


def profiled() -> dict:
    return step(PROFILED)


def titan(checkpoint: str, set_name: str = "torchtitan-83e214f") -> dict:
    return step(set_name, activation_checkpoint=checkpoint)


def titan_same_call(set_name: str = SAME_CALL_TITAN) -> dict:
    """torchtitan's per-op step in the headline's call (or another), with the leaderboard's own do_bench."""
    return titan("selective:op", set_name)


def later_call(checkpoint: str) -> dict:
    """lmperf's step of the later call (from its log: mean, std and memory only) by policy."""
    return step(LATER_CALL, checkpoint=checkpoint)


def clocks(window: str | None = None) -> list[dict]:
    """nvidia-smi's SM clock and power while busy, one row per run window of the two calls."""
    rows = [r for s in CLOCK_SETS for r in F.of_set(PAGE, s)]
    return [r for r in rows if window is None or r["window"] == window]


def attention_layouts() -> dict[str, dict[str, float]]:
    """lmperf's attention alone at the step's shape by input layout (attention_step_views.py, one
    H200, four rounds in alternating order): median and lowest forward and backward ms."""
    rows = F.of_set(PAGE, "attention-views-6bd415b")
    out = {}
    for layout in ("contiguous", "step", "step views"):
        mine = [r for r in rows if r["layout"] == layout]
        out[layout] = {
            f"{pass_}_{stat.__name__}": stat(r[f"{pass_}_ms"] for r in mine)
            for pass_ in ("fwd", "bwd")
            for stat in (statistics.median, min)
        }
        out[layout]["rounds"] = len(mine)
    return out


def kernel_rows(category: str) -> list[dict]:
    """The profiled step's kernels of one category (rank 0, one step)."""
    return F.of_set(PAGE, KERNELS, row="kernel", category=category)


def gemm_shapes() -> list[dict]:
    """The profiled step's GEMMs with a shape, one row per distinct GEMM (kernel_table's summary:
    calls, time and TFLOP/s in the step and alone, share of its time beside NCCL)."""
    summary = kernel_table.gemm_summary(F.of_set(PAGE, KERNELS, row="kernel"))
    return [g for g in summary if g["m"] is not None]


def per_layer_ms(name: str | None = None, m: int | None = None, n: int | None = None) -> list[float]:
    """Durations in launch order of the profiled step's forward kernels of one kind: an attention
    kernel by name, or a GEMM by shape (its forward launches: the first one per layer)."""
    if name:
        return [r["duration_ms"] for r in kernel_rows("attention") if r["name"] == name]
    rows = [r for r in kernel_rows("matmul") if (r.get("m"), r.get("n")) == (m, n)]
    return [r["duration_ms"] for r in rows]


def attention_beside_alone() -> list[dict]:
    """lmperf's attention forward and backward in the profiled step (launches, mean ms) beside
    the same kernels alone at the step's shape and cuDNN's, medians over the rounds."""
    in_step = {a["name"]: a for a in kernel_table.attention_summary(F.of_set(PAGE, KERNELS, row="kernel"))}
    alone = {impl: attention_alone(impl) for impl in ("triton", "sdpa-cudnn")}
    return [
        {
            "what": what,
            "launches": in_step[name]["count"],
            "step_ms": in_step[name]["mean_ms"],
            "alone_ms": statistics.median(r[field] for r in alone["triton"]),
            "cudnn_ms": statistics.median(r[field] for r in alone["sdpa-cudnn"]),
        }
        for name, field, what in (("_fwd_kernel", "fwd_ms", "forward"), ("_bwd_kernel", "bwd_ms", "backward"))
    ]


def attention_alone(impl: str = "triton") -> list[dict]:
    """lmperf's attention (or cuDNN's) alone at the step's shape: one sequence, 32 heads of 128,
    32,768 keys, causal, bf16, on one H200 (three rounds)."""
    return F.of_set(PAGE, "attention-alone-06bde5a", impl=impl, seq=32768)


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
    once per block (no backward needs the down projection's output); selective-mm-out runs none
    again (tests/test_step_options.py counts the recomputed matmuls)."""
    config = model_of(row)
    policies = block_policies(row["checkpoint"], config.n_layers)
    if not set(policies) <= set(BY_WIDTH):
        raise ValueError(f"the recomputed matmuls of {row['checkpoint']!r} are not counted here")
    out_proj = sum(
        op.total_forward for op in forward_ops(config, row["batch"], row["seq_len"]) if op.name == "out_proj"
    )
    return out_proj * policies.count("selective-mm") / config.n_layers  # out_proj: every layer's


def matmul_flops(row: dict) -> float:
    """The step's matmul FLOPs per GPU besides attention's under selective-mm(-out): QKV, output,
    gate/up and down projections and the LM head, forward and backward (3x the forward), and the
    recomputed output projections."""
    ops = forward_ops(model_of(row), row["batch"], row["seq_len"])
    step_flops = 3 * sum(op.total_forward for op in ops if op.is_matmul and op.name not in ATTENTION_MATMULS)
    return step_flops + recomputed_matmul_flops(row)


def matmul_tflops(row: dict) -> float:
    """A profiled step's matmul rate: the model's matmul FLOPs over the matmul kernels' time."""
    return tflops(matmul_flops(row), row["kernel_ms_by_category"]["matmul"])


def recomputed_matmul_ms(row: dict) -> float:
    """The time of the matmuls the backward runs again, at the profiled step's matmul rate."""
    return recomputed_matmul_flops(row) / (matmul_tflops(row) * 1e12) * 1e3


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
    """lmperf's attention alone at the step's own shape (one sequence, 32 heads of 128, 32,768
    keys, causal, bf16, one H200), forward and backward, from the median of its rounds."""
    rows = attention_alone()
    first = rows[0]
    flops = attention_kernel_flops(first["batch"] * first["heads"], first["seq"], first["seq"], 128, True)
    return tflops(flops["forward_backward"], statistics.median(r["fwd_bwd_ms"] for r in rows))


def change_rows() -> list[dict]:
    """The rows of CHANGES, in its order."""
    return [
        step(set_name, attention=attention, checkpoint=checkpoint, **({"optimizer": optimizer} if optimizer else {}))
        for set_name, attention, checkpoint, optimizer, _ in CHANGES
    ]


def adamw_alone() -> list[dict]:
    """Each AdamW's step alone over one rank's shards of cs336-8b (bf16, 2 ranks): the median of
    its rounds' medians, its lowest round, the bytes it moves per second, and the others' time
    over lmperf's, in the script's order."""
    rows = F.of_set(PAGE, ADAMW_ALONE)
    names = list(dict.fromkeys(r["optimizer"] for r in rows))
    medians = {n: statistics.median(r["median_ms"] for r in rows if r["optimizer"] == n) for n in names}
    return [
        {
            "optimizer": name,
            "median_ms": medians[name],
            "lowest_ms": min(r["median_ms"] for r in rows if r["optimizer"] == name),
            "rounds": sum(r["optimizer"] == name for r in rows),
            "tb_per_s": statistics.median(r["tb_per_s"] for r in rows if r["optimizer"] == name),
            "over_lmperf": medians[name] / medians["lmperf"],
            "params": rows[0]["params"],
            "tensors": rows[0]["tensors"],
        }
        for name in names
    ]


def memory_rows() -> list[dict]:
    """One row per checkpointing configuration of CHANGES (the first of a set's repeats), then fp32
    master weights."""
    first: dict[tuple, dict] = {}
    for row in change_rows():
        first.setdefault((row["attention"], row["checkpoint"]), row)
    return list(first.values()) + [step("fp32-master-83e214f")]


def fp32_master_pair() -> tuple[dict, dict]:
    """(bf16, fp32) parameters, both with lmperf's attention and selective:8."""
    return step("step-83e214f", checkpoint="selective:8"), step("fp32-master-83e214f")

"""torchtitan's Llama 3 at lmperf's cs336-8b widths: one training step, timed, one JSON row.

Usage (from the repository root, PYTHONPATH=src, torchtitan 0.2.2 installed):
  torchrun --nproc-per-node 2 benchmarks/scripts/torchtitan_step.py OUT.jsonl [--ac op|full]
      [--layers 34] [--seq-len 32768] [--warmup 2] [--steps 5]
      [--leaderboard-warmup-ms 2000 --leaderboard-rep-ms 8000]

The model, its parallelization and the step are torchtitan's own pieces, called in the order its
trainer (torchtitan/train.py) calls them: the Transformer built on the meta device in bf16
(`training.dtype = "bfloat16"`: parameters, gradients and AdamW state in bf16, as lmperf's
`--param-dtype bf16` row), `parallelize_llama` (activation checkpointing, then torch.compile of
each block, then FSDP2 per block), `to_empty` + `init_weights`, torchtitan's fused AdamW and its
compiled cross-entropy (sum over tokens, divided by the global token count). Only the data is
ours: random tokens, a different draw per rank, since torchtitan's loaders need a tokenizer and
a data set that the GPU machines cannot download. No gradient clipping (lmperf's step has none).

Widths come from lmperf's preset (`--preset`, default cs336-8b): d_model, heads (as many K/V
heads), d_ff (torchtitan derives it from d_model; the script checks that it comes out equal),
vocabulary, untied head, RMSNorm eps and the plain rotary of that theta (torchtitan's Llama 3.1
frequency scaling set to the identity). The parameter count must equal lmperf's closed form.

Timing is lmperf's (lmperf.run.timing): the cold step alone, warm-up steps, then CUDA events
around each measured step on rank 0, and each rank's mean; with --leaderboard-rep-ms the
leaderboard's do_bench procedure as lmperf runs it. Peak memory is each rank's
max_memory_allocated over all steps.
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import torch.distributed as dist

import torchtitan
from torchtitan.components.loss import build_cross_entropy_loss
from torchtitan.components.optimizer import build_optimizers
from torchtitan.config import TORCH_DTYPE_MAP, JobConfig
from torchtitan.distributed import ParallelDims
from torchtitan.distributed import utils as dist_utils
from torchtitan.models.llama3 import Transformer, TransformerModelArgs, parallelize_llama
from torchtitan.models.llama3.model.args import RoPEScalingArgs
from torchtitan.tools import utils as titan_utils
from torchtitan.tools.logging import init_logger

from lmperf.analysis.flops import step_flops
from lmperf.analysis.peaks import peak_tflops
from lmperf.model.config import ModelConfig, parameter_count, preset
from lmperf.report.environment import environment
from lmperf.run.timing import do_bench_ms, time_steps

# torchtitan's Llama 3.1 rotary rescales long wavelengths; factor 1 with these bands leaves every
# frequency as theta^(-2i/d), the rotary lmperf's model uses.
PLAIN_ROPE = RoPEScalingArgs(scaling_factor=1.0, low_freq_factor=1.0, high_freq_factor=4.0)
AC_MODES = {"op": ("selective", "op"), "full": ("full", "op")}  # --ac: (mode, selective_ac_option)


def job_config(ac: str, seq_len: int, dump_folder: str) -> JobConfig:
    """torchtitan's defaults with the settings of its llama3_8b.toml that concern speed."""
    config = JobConfig()
    config.job.dump_folder = dump_folder
    config.training.seq_len = seq_len
    config.training.local_batch_size = 1
    config.training.dtype = "bfloat16"
    config.training.mixed_precision_param = "bfloat16"
    config.parallelism.data_parallel_shard_degree = -1
    config.activation_checkpoint.mode, config.activation_checkpoint.selective_ac_option = AC_MODES[ac]
    config.compile.enable = True
    config.compile.components = ["model", "loss"]
    return config


def model_args(config: ModelConfig, seq_len: int) -> TransformerModelArgs:
    return TransformerModelArgs(
        dim=config.d_model,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        n_kv_heads=config.n_kv_heads,
        vocab_size=config.vocab_size,
        norm_eps=config.norm_eps,
        rope_theta=config.rope_theta,
        rope_scaling_args=PLAIN_ROPE,
        max_seq_len=seq_len,
        attn_type="sdpa",
    )


def check_widths(model: Transformer, config: ModelConfig) -> int:
    """The parameter count, after checking the model against lmperf's shape of it."""
    d_ff = model.layers["0"].feed_forward.w1.out_features
    if d_ff != config.d_ff:
        raise SystemExit(f"torchtitan's FFN width is {d_ff}, lmperf's preset says {config.d_ff}")
    if config.tie_embeddings or config.mlp != "swiglu":
        raise SystemExit("torchtitan's Llama 3 has an untied head and a SwiGLU MLP only")
    count = sum(p.numel() for p in model.parameters())
    expected = parameter_count(config)["total"]
    if count != expected:
        raise SystemExit(f"torchtitan's model has {count:,} parameters, lmperf's closed form {expected:,}")
    return count


class TitanStep:
    """torchtitan's model, optimizer and loss on this rank, with one random sequence per step."""

    def __init__(self, job: JobConfig, config: ModelConfig, device: torch.device):
        self.device = device
        world_size = dist_utils.init_distributed(job.comm, base_folder=job.job.dump_folder)
        self.world_size = world_size
        dims = ParallelDims(dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1, world_size=world_size)
        dist_utils.set_determinism(dims, device, job.debug, distinct_seed_mesh_dims=["pp"])
        self.gc = titan_utils.GarbageCollection(gc_freq=job.training.gc_freq)  # as the trainer: gc off
        args = model_args(config, job.training.seq_len)
        args.update_from_config(job)
        with torch.device("meta"), titan_utils.set_default_dtype(TORCH_DTYPE_MAP[job.training.dtype]):
            model = Transformer(args)
        self.params = check_widths(model, config)
        model = parallelize_llama(model, dims, job)
        model.to_empty(device=device)
        with torch.no_grad():
            model.init_weights(buffer_device=None)
        model.train()
        self.model = model
        self.optimizers = build_optimizers([model], job.optimizer, dims)
        self.loss_fn = build_cross_entropy_loss(job)
        self.amp = dist_utils.maybe_enable_amp(dims, job.training.mixed_precision_param, device.type)
        self.train_context = dist_utils.get_train_context(False)
        generator = torch.Generator().manual_seed(dist.get_rank())
        tokens = torch.randint(0, config.vocab_size, (1, job.training.seq_len + 1), generator=generator)
        self.inputs, self.labels = tokens[:, :-1].to(device), tokens[:, 1:].to(device)
        self.global_tokens = self.labels.numel() * world_size

    def run(self) -> None:
        """torchtitan's train_step without clipping: zero_grad, forward, loss, backward, AdamW."""
        self.optimizers.zero_grad()
        with self.train_context(), self.amp:
            pred = self.model(self.inputs)
            loss = self.loss_fn(pred, self.labels) / self.global_tokens
            del pred  # as the trainer: the logits go before the backward
        loss.backward()
        self.optimizers.step()


def measure(step: TitanStep, args: argparse.Namespace, config: ModelConfig, job: JobConfig) -> dict:
    device = step.device
    torch.cuda.reset_peak_memory_stats(device)
    times = time_steps(step.run, args.warmup, args.steps, device)
    stats = times.stats
    row = {
        "what": "torchtitan train step",
        "status": "ok",
        "preset": args.preset,
        **settings(args, config, job, step),
        "cold_ms": times.cold_ms,
        "warmup_ms": times.warmup_ms,
        "step_ms": times.measured_ms,
        "mean_ms": stats.mean,
        "median_ms": stats.median,
        "std_ms": stats.std,
        "min_ms": stats.min,
        "max_ms": stats.max,
    }
    if args.leaderboard_rep_ms:
        bench = do_bench_ms(step.run, args.leaderboard_warmup_ms, args.leaderboard_rep_ms, device)
        row.update(
            leaderboard_ms=bench.mean_ms,
            leaderboard_calls=bench.calls,
            leaderboard_warmup_ms=args.leaderboard_warmup_ms,
            leaderboard_rep_ms=args.leaderboard_rep_ms,
        )
    matmul = step_flops(config.with_(attention="sdpa"), 1, args.seq_len, "train-step").matmul
    row["tokens_per_s"] = args.seq_len / (stats.mean / 1e3)
    row["tflops"] = matmul / (stats.mean / 1e3) / 1e12
    peak = peak_tflops(torch.cuda.get_device_name(device), "bf16")
    row["mfu"] = row["tflops"] / peak if peak else None
    ranks = [None] * step.world_size
    dist.all_gather_object(
        ranks, (stats.mean, torch.cuda.max_memory_allocated(device) / 1e9, torch.cuda.max_memory_reserved(device) / 1e9)
    )
    row["mean_ms_ranks"] = [r[0] for r in ranks]
    row["peak_memory_gb_ranks"] = [r[1] for r in ranks]
    row["peak_memory_gb"] = max(row["peak_memory_gb_ranks"])
    row["peak_reserved_gb_ranks"] = [r[2] for r in ranks]
    return row


def settings(args: argparse.Namespace, config: ModelConfig, job: JobConfig, step: TitanStep) -> dict:
    opt = job.optimizer
    return {
        "nproc": step.world_size,
        "seq_len": args.seq_len,
        "batch_per_rank": 1,
        "params": step.params,
        "model": {
            k: getattr(config, k)
            for k in (
                "d_model",
                "d_ff",
                "n_layers",
                "n_heads",
                "n_kv_heads",
                "vocab_size",
                "rope_theta",
                "norm_eps",
                "tie_embeddings",
            )
        },
        "training_dtype": job.training.dtype,
        "fsdp_param_dtype": job.training.mixed_precision_param,
        "fsdp_reduce_dtype": job.training.mixed_precision_reduce,
        "fsdp_reshard_after_forward": job.parallelism.fsdp_reshard_after_forward,
        "activation_checkpoint": f"{job.activation_checkpoint.mode}"
        + (
            f":{job.activation_checkpoint.selective_ac_option}" if job.activation_checkpoint.mode == "selective" else ""
        ),
        "compile": {"enable": job.compile.enable, "components": job.compile.components, "backend": job.compile.backend},
        "attention": "sdpa",
        "loss": "torchtitan cross_entropy_loss",
        "optimizer": {
            "name": opt.name,
            "implementation": opt.implementation,
            "lr": opt.lr,
            "betas": [opt.beta1, opt.beta2],
            "weight_decay": opt.weight_decay,
        },
        "grad_clip": None,
        "warmup": args.warmup,
        "steps": args.steps,
        "alloc_conf": os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON-lines file that rank 0 appends the row to")
    parser.add_argument("--preset", default="cs336-8b")
    parser.add_argument("--layers", type=int, help="override the preset's layer count")
    parser.add_argument("--seq-len", type=int, default=32_768)
    parser.add_argument(
        "--ac",
        choices=sorted(AC_MODES),
        default="op",
        help="op: selective per-op (llama3_8b.toml); full: every block recomputed",
    )
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--leaderboard-warmup-ms", type=float, default=0.0)
    parser.add_argument("--leaderboard-rep-ms", type=float, default=0.0, help="0 skips the do_bench figure")
    parser.add_argument("--dump-folder", default="/tmp/torchtitan-step")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    init_logger()  # torchtitan's own log lines: what it applied (AC, compile, FSDP) and compiled
    overrides = {"n_layers": args.layers} if args.layers else {}
    config = preset(args.preset, **overrides)
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(device)
    job = job_config(args.ac, args.seq_len, args.dump_folder)
    step = TitanStep(job, config, device)
    env = {**environment(str(device)), "torchtitan": torchtitan.__version__}
    try:
        row = measure(step, args, config, job)
    except torch.OutOfMemoryError as error:  # this rank's row, then torchrun ends the others
        _append(
            args.out,
            {
                "what": "torchtitan train step",
                "status": "oom",
                "rank": dist.get_rank(),
                "error": str(error),
                "preset": args.preset,
                **settings(args, config, job, step),
                "peak_memory_gb": torch.cuda.max_memory_allocated(device) / 1e9,
                "env": env,
            },
        )
        raise
    if dist.get_rank() == 0:
        _append(args.out, {**row, "env": env})
    dist.destroy_process_group()


def _append(path: str, row: dict) -> None:
    with open(path, "a") as out:
        out.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

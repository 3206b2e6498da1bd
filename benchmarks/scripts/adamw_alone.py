"""AdamW's step alone on one GPU over one rank's shards of a preset's parameters (issue 46: the
8B step's optimizer phase takes 43.5 ms on rank 0, where moving each bf16 parameter's 14 bytes
once would take about 12 ms at the H200's 4.8 TB/s).

PyTorch's fused and foreach AdamW and lmperf's Triton AdamW (lmperf.ops.AdamW) step the same
parameters and gradients (dim 0 split as FSDP2 splits it over --nproc ranks), each with its own
moments, rounds in alternating order; a step is timed with CUDA events, --steps per round.
Usage (a GPU machine, repository root): `PYTHONPATH=src python benchmarks/scripts/adamw_alone.py
OUT.jsonl [--preset cs336-8b --nproc 2 --rounds 4]`; one JSON row per optimizer and round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch

BYTES_PER_PARAM = {torch.bfloat16: 14, torch.float32: 28}  # read p, g, m, v; write p, m, v


def rank_shards(preset_name: str, nproc: int, dtype: torch.dtype) -> list[torch.nn.Parameter]:
    """One rank's shards of the preset's parameters, with random gradients."""
    from lmperf.model import TransformerLM, preset

    with torch.device("meta"):
        shapes = [p.shape for p in TransformerLM(preset(preset_name)).parameters()]
    shards = []
    for shape in shapes:
        shard = torch.nn.Parameter(torch.randn(-(-shape[0] // nproc), *shape[1:], device="cuda").to(dtype) * 0.02)
        shard.grad = torch.randn_like(shard) * 1e-3
        shards.append(shard)
    return shards


def optimizers(params: list[torch.nn.Parameter]) -> dict[str, torch.optim.Optimizer]:
    from lmperf.ops import AdamW

    return {
        "torch fused": torch.optim.AdamW(params, lr=1e-4, fused=True),
        "torch foreach": torch.optim.AdamW(params, lr=1e-4, foreach=True),
        "lmperf": AdamW(params, lr=1e-4),
    }


def time_steps(optimizer: torch.optim.Optimizer, steps: int) -> list[float]:
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(steps)]
    for start, end in events:
        start.record()
        optimizer.step()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in events]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSONL file the rows are appended to")
    parser.add_argument("--preset", default="cs336-8b")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("adamw_alone.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    if args.nproc < 1 or args.rounds < 1 or args.steps < 1:
        print("adamw_alone.py: --nproc, --rounds and --steps must be at least 1", file=sys.stderr)
        return 2
    from lmperf.report.environment import environment

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    params = rank_shards(args.preset, args.nproc, dtype)
    count = sum(p.numel() for p in params)
    by_name = optimizers(params)
    for optimizer in by_name.values():
        time_steps(optimizer, 2)  # the moments come lazily; Triton compiles
    env = environment("cuda")
    with open(args.out, "a", encoding="utf-8") as out:
        for round_ in range(args.rounds):
            names = list(by_name) if round_ % 2 == 0 else list(reversed(by_name))
            for name in names:
                times = time_steps(by_name[name], args.steps)
                median = statistics.median(times)
                row = {"what": "adamw alone", "optimizer": name, "round": round_, "preset": args.preset}
                row.update(nproc=args.nproc, dtype=args.dtype, params=count, tensors=len(params), steps=args.steps)
                row.update(median_ms=median, min_ms=min(times), step_ms=times)
                row.update(tb_per_s=count * BYTES_PER_PARAM[dtype] / median / 1e9, env=env)
                out.write(json.dumps(row) + "\n")
                print(f"{name:14s} round {round_}: {median:7.2f} ms ({row['tb_per_s']:.2f} TB/s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Cross-check lmperf's per-step time against two independent timers on the same step.

Usage (on a GPU): PYTHONPATH=src python3 benchmarks/scripts/bench_agreement.py OUT.json
"""

import functools
import json
import sys

import torch
import torch.utils.benchmark as torch_benchmark
import triton.testing

from lmperf.model.step import ModelStep, StepConfig
from lmperf.run.timing import time_steps
from lmperf.report.environment import environment

CONFIGS = [
    StepConfig("small", 512, "train-step", "bf16"),
    StepConfig("small", 512, "forward", "fp32"),
    StepConfig("medium", 1024, "forward-backward", "bf16"),
]


def main(out_path: str) -> None:
    device = torch.device("cuda")
    results = []
    for config in CONFIGS:
        step = ModelStep(config, device)
        run = functools.partial(step.run, config.mode)
        lmperf_stats = time_steps(run, warmup=5, steps=30, device=device).stats
        do_bench_ms = triton.testing.do_bench(run, warmup=200, rep=2000, return_mode="median")
        timer = torch_benchmark.Timer("run()", globals={"run": run})
        torch_ms = timer.blocked_autorange(min_run_time=2.0).median * 1e3
        row = {
            **config.to_dict(),
            "lmperf_mean_ms": lmperf_stats.mean,
            "lmperf_median_ms": lmperf_stats.median,
            "do_bench_median_ms": do_bench_ms,
            "torch_benchmark_median_ms": torch_ms,
            "diff_vs_do_bench": lmperf_stats.median / do_bench_ms - 1,
            "diff_vs_torch_benchmark": lmperf_stats.median / torch_ms - 1,
            "env": environment("cuda"),
        }
        print(json.dumps({k: v for k, v in row.items() if k != "env"}))
        results.append(row)
        del step
        torch.cuda.empty_cache()
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])

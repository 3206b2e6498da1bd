"""Where DDP's train-step peak memory goes, phase by phase (run under torchrun, CUDA).

    torchrun --nproc-per-node 2 benchmarks/scripts/ddp_memory_probe.py [PRESET] [CONTEXT]

For no wrapper, DDP with gradient-as-bucket-view, and DDP without it, prints rank 0's allocated
memory after each phase of the first four train steps and the peak inside each phase, in units of
one fp32 gradient copy (4 bytes x parameters), so a bucket or a gradient copy reads as 1.0.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from lmperf.model.step import ModelStep, StepConfig
from lmperf.model import parameter_count


def probe(variant: str, config: StepConfig, device: torch.device) -> list[str]:
    step = ModelStep(config, device)
    grad_bytes = 4 * parameter_count(config.model_config())["total"]
    if variant != "none":
        step.model = DistributedDataParallel(
            step.model, device_ids=[device.index], broadcast_buffers=False,
            gradient_as_bucket_view=variant == "ddp-bucket-view")
        step.optimizer = step.build_optimizer()
    lines = []

    def mark(name: str) -> None:
        torch.cuda.synchronize(device)
        now = torch.cuda.memory_allocated(device) / grad_bytes
        peak = torch.cuda.max_memory_allocated(device) / grad_bytes
        lines.append(f"{variant:16} {name:18} allocated {now:6.2f}  phase peak {peak:6.2f}")
        torch.cuda.reset_peak_memory_stats(device)

    mark("built")
    for i in range(1, 5):
        step.optimizer.zero_grad(set_to_none=True)
        mark(f"step {i} zero_grad")
        loss = step.loss()
        mark(f"step {i} forward")
        loss.backward()
        del loss
        mark(f"step {i} backward")
        step.optimizer.step()
        mark(f"step {i} optimizer")
    del step
    torch.cuda.empty_cache()
    return lines


def main() -> None:
    preset = sys.argv[1] if len(sys.argv) > 1 else "small"
    context = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    config = StepConfig(preset, context, "train-step", precision="bf16")
    if rank == 0:
        params = parameter_count(config.model_config())["total"]
        print(f"{preset} ctx {context} bf16: one fp32 gradient copy = {4 * params / 1e9:.3f} GB")
    for variant in ("none", "ddp-bucket-view", "ddp-copy"):
        lines = probe(variant, config, device)
        if rank == 0:
            print("\n".join(lines), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

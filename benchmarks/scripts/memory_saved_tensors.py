"""Every tensor autograd saves in one forward of the tiny preset, beside the analytic memory model.

Usage: python benchmarks/scripts/memory_saved_tensors.py [cpu|cuda] [fp32|bf16]

The same accounting as tests/profile/test_memory_model.py (distinct storages; parameters, buffers,
int64 indices and the weights' bf16 casts left out), printed tensor by tensor with the op that
saved it, so a gap between the model and the measurement can be traced to its term.
"""

from __future__ import annotations

import sys

import torch

from lmperf.analysis.memory import memory_model
from lmperf.model import TransformerLM, preset
from lmperf.model.transformer import lm_loss


def main(device: str, precision: str) -> None:
    config = preset("tiny")
    torch.manual_seed(0)
    with torch.device(device):
        model = TransformerLM(config)
    data = torch.randint(0, config.vocab_size, (2, 9), device=device)
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    weight_shapes = {s for p in model.parameters() if p.dim() == 2 for s in (tuple(p.shape), tuple(p.shape)[::-1])}
    seen: dict[int, tuple] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        is_weight_cast = tensor.dtype == torch.bfloat16 and tuple(tensor.shape) in weight_shapes
        key = storage.data_ptr()
        if key not in own and tensor.dtype != torch.int64 and not is_weight_cast and key not in seen:
            seen[key] = (tuple(tensor.shape), str(tensor.dtype).removeprefix("torch."), storage.nbytes())
        return tensor

    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), autocast:
        lm_loss(model(data[:, :-1]), data[:, 1:])
    for shape, dtype, nbytes in seen.values():
        print(f"saved {nbytes:>8} B  {dtype:<9} {shape}")
    measured = sum(nbytes for _, _, nbytes in seen.values())
    analytic = memory_model(config, 2, 8, precision)
    print(f"measured {measured} B; analytic activations {analytic.activations} + head "
          f"{analytic.head_activations} (+4 B loss scalar) = {analytic.activations + analytic.head_activations + 4} B; "
          f"per layer {analytic.activations_per_layer} B; difference {measured - analytic.activations - analytic.head_activations - 4} B")


if __name__ == "__main__":
    main(*(sys.argv[1:] or ["cuda", "bf16"]))

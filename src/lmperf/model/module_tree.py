"""The structure of any nn.Module as lmperf uses it: its repeated blocks, module paths with the
repeated index collapsed (`layers.3.attn` -> `layers.*.attn`), a named region per module while a
profiler listens, and activation checkpointing of the repeated blocks.

The repeated blocks are the children of the module's largest ModuleList (most parameters, then
most children): a Transformer's layers, whatever their attribute is called (`blocks`, `layers`,
`h`, `model.layers`). They are the unit that compile, checkpointing and FSDP2 work on.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
import torch.nn as nn
import torch.utils.checkpoint

from lmperf import regions

MODULE_REGION = "module:"  # a module's region is this prefix and its path
ROOT = "(model)"  # the path of the module itself


def _parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def repeated_blocks_path(model: nn.Module) -> str | None:
    """The path of the model's largest ModuleList, or None when it has none."""
    lists = [(name, m) for name, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m)]
    if not lists:
        return None
    name, _ = max(lists, key=lambda item: (_parameter_count(item[1]), len(item[1])))
    return name


def repeated_blocks(model: nn.Module) -> list[nn.Module]:
    """The children of the model's largest ModuleList (none when it has no ModuleList)."""
    path = repeated_blocks_path(model)
    return [] if path is None else list(model.get_submodule(path))


def repeated_containers(model: nn.Module) -> list[str]:
    """Paths of every ModuleList whose children are all of one class: the repeated structure
    that region tables collapse."""
    return [
        name
        for name, m in model.named_modules()
        if isinstance(m, nn.ModuleList) and len(m) > 1 and len({type(c) for c in m}) == 1
    ]


def collapse(path: str, containers: list[str]) -> str:
    """`layers.3.attn` -> `layers.*.attn` when `layers` is a repeated container."""
    for container in containers:
        prefix = container + "."
        if path.startswith(prefix):
            index, _, rest = path[len(prefix) :].partition(".")
            if index.isdigit():
                return prefix + "*" + ("." + rest if rest else "")
    return path


def region_of_path(path: str) -> str:
    return MODULE_REGION + (path or ROOT)


def is_module_region(name: str) -> bool:
    return name.startswith(MODULE_REGION)


def path_of_region(name: str) -> str:
    return name[len(MODULE_REGION) :]


@contextlib.contextmanager
def module_regions(model: nn.Module) -> Iterator[None]:
    """While open, every module's forward runs inside the region `module:<path>` (lmperf.regions:
    a record_function under torch's profiler, an NVTX range under Nsight; nothing otherwise).
    Inside a compiled module the hooks do nothing, as lmperf's own regions."""
    handles = []
    for path, module in model.named_modules():
        opened: list = []

        def enter(module, args, name=region_of_path(path), opened=opened):
            if not torch.compiler.is_compiling():
                region = regions.region(name)
                region.__enter__()
                opened.append(region)

        def leave(module, args, output, opened=opened):
            if not torch.compiler.is_compiling() and opened:
                opened.pop().__exit__(None, None, None)

        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave, always_call=True))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def checkpoint_blocks(blocks: list[nn.Module], options: dict) -> None:
    """Each block's forward runs under torch.utils.checkpoint (non-reentrant; `options` such as a
    selective policy's context_fn): the block keeps its input and recomputes the rest in the
    backward. The forward is replaced on the instance, so module paths stay as they were."""
    for block in blocks:
        block.forward = _checkpointed(block.forward, options)


def _checkpointed(forward, options: dict):
    # A plain function, not a functools.partial: dynamo traces it into a compiled block.
    def checkpointed_forward(*args, **kwargs):
        return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **options, **kwargs)

    return checkpointed_forward

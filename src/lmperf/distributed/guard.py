"""Every rank learns, after each guarded phase, whether any rank failed in it.

A rank that runs out of memory (or hits another RuntimeError) must not leave the others waiting
in the next collective. Each guarded phase ends with a small all-reduce of one status code per
rank; if any is non-zero, every rank raises the same error (torch.OutOfMemoryError when a rank ran
out of memory), which the sweep records as one row and moves on. A failure in the middle of a
phase's own collectives (a DDP bucket, an FSDP all-gather) can still leave ranks in mismatched
collectives: the process group's timeout ends those, and the launcher writes the row.
"""

from __future__ import annotations

import sys
from typing import Callable, TypeVar

import torch
import torch.distributed as dist

from lmperf.distributed.launch import World

T = TypeVar("T")
OK, ERROR, OOM = 0, 1, 2


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}"


def on_all_ranks(phase: Callable[[], T], world: World) -> T:
    """Run `phase` on this rank; raise on every rank if it failed on any."""
    code, message, result = OK, "", None
    try:
        result = phase()
    except torch.OutOfMemoryError as error:
        code, message = OOM, _first_line(error)
    except RuntimeError as error:
        code, message = ERROR, _first_line(error)
    if code:  # if the others are stuck in a collective of this phase, the log still says why
        print(f"lmperf: rank {world.rank}: {message}", file=sys.stderr, flush=True)
    codes = torch.zeros(world.size, dtype=torch.int32, device=world.device)
    codes[world.rank] = code
    dist.all_reduce(codes)  # a one-hot sum: every rank sees every rank's code
    codes_list = codes.tolist()
    if not any(codes_list):
        return result  # type: ignore[return-value]
    messages: list[str] = [""] * world.size
    dist.all_gather_object(messages, message)
    summary = "; ".join(f"rank {r}: {m}" for r, m in enumerate(messages) if codes_list[r])
    if OOM in codes_list:
        raise torch.OutOfMemoryError(summary)
    raise RuntimeError(summary)

"""Start a real Gloo world on 127.0.0.1 in spawned processes, as torchrun would set it up."""

from __future__ import annotations

import os
from typing import Callable

import torch.multiprocessing as mp

from lmperf.distributed.launch import free_port


def _enter(rank: int, nproc: int, port: int, body: Callable, args: tuple) -> None:
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(nproc),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        OMP_NUM_THREADS="1",
    )
    body(*args)


def spawn_world(body: Callable, nproc: int, *args) -> None:
    """Run body(*args) in `nproc` ranks; a rank's exception fails the call."""
    mp.spawn(_enter, args=(nproc, free_port(), body, args), nprocs=nproc, join=True)

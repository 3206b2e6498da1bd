"""One process per GPU through torchrun, or joining a launch that already exists.

A command run outside a launch starts its workers under `torchrun --nproc-per-node N` on
127.0.0.1 and a free port; run inside torchrun (or any multi-node launcher that sets the env://
variables) it joins that launch's world as it is.
"""

from __future__ import annotations

import datetime as dt
import gc
import os
import signal
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch
import torch.distributed as dist

from lmperf.errors import UsageError

_LAUNCH_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def launched() -> bool:
    """True inside torchrun or another launcher that set the env:// rendezvous variables."""
    return all(name in os.environ for name in _LAUNCH_VARIABLES)


def usable_cores() -> int:
    """CPU cores this process may run on: its affinity mask where the system has one."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity mask
        return os.cpu_count() or 1


def check_nproc(nproc: int, device: str) -> None:
    """One process per GPU, or on a CPU per core: more processes would share one and measure
    nothing real (and on a CPU each holds its own copy of torch and the model)."""
    if nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {nproc}")
    if device.startswith("cuda") and nproc > torch.cuda.device_count():
        raise UsageError(
            f"--nproc {nproc} asks for more processes than the {torch.cuda.device_count()} GPU(s) "
            "on this machine (one process per GPU)"
        )
    if device == "cpu" and nproc > usable_cores():
        raise UsageError(
            f"--nproc {nproc} asks for more processes than the {usable_cores()} CPU core(s) "
            f"this process may use (one process per core); use --nproc {usable_cores()} or fewer"
        )


def check_host_memory(nproc: int, per_process: float, what: str) -> None:
    """On a CPU every process holds what it computes on in host memory: `nproc` times `per_process`
    bytes (the analytic need of `what`) plus an interpreter with torch each (as large as this one),
    against the memory available now. Refused when it cannot fit, before any process starts: the
    kernel's out-of-memory killer would end the launch (and maybe other programs) instead."""
    from lmperf.run.sweep import device_memory_bytes

    available = device_memory_bytes(torch.device("cpu"))
    if available is None:
        return
    each = per_process + _resident_bytes()
    if nproc * each <= available:
        return
    fits = int(available // each)
    advice = f"use --nproc {fits} or fewer" if fits else "not even one process fits"
    raise UsageError(
        f"--nproc {nproc} needs about {nproc * each / 1e9:,.1f} GB of host memory ({nproc} x "
        f"{each / 1e9:,.2f} GB: {what}, and torch itself), more than the {available / 1e9:,.1f} GB "
        f"available; {advice}"
    )


def _resident_bytes() -> int:
    """This process's resident memory (Linux; 0 elsewhere): what a worker's interpreter with torch costs."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def check_backend(device: str) -> None:
    if not dist.is_available():
        raise UsageError("this torch build has no torch.distributed")
    if device.startswith("cuda") and not dist.is_nccl_available():
        raise UsageError("NCCL is not available in this torch build; use --device cpu (gloo)")
    if device == "cpu" and not dist.is_gloo_available():
        raise UsageError("Gloo is not available in this torch build; CPU runs need it")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Nodes:
    """Where this node stands in a launch over several machines (torchrun's static rendezvous:
    node 0 serves the rendezvous at `endpoint`, host:port, which every node names)."""

    count: int = 1
    rank: int = 0
    endpoint: str | None = None

    def validate(self) -> "Nodes":
        if self.count < 1 or not 0 <= self.rank < self.count:
            raise UsageError(f"need --nnodes >= 1 and 0 <= --node-rank < --nnodes, got {self.count} and {self.rank}")
        if self.count > 1 and not self.endpoint:
            raise UsageError("--nnodes above 1 needs --rdzv-endpoint host:port (node 0's address)")
        if self.endpoint is not None:
            host, _, port = self.endpoint.rpartition(":")
            if not host or not port.isdigit():
                raise UsageError(f"--rdzv-endpoint must be host:port, got {self.endpoint!r}")
        return self

    def rendezvous(self) -> list[str]:
        if self.endpoint is None:
            return ["--master-addr=127.0.0.1", f"--master-port={free_port()}"]
        host, _, port = self.endpoint.rpartition(":")
        return [f"--master-addr={host}", f"--master-port={port}"]


def torchrun_command(nproc: int, module: str, args: Sequence[str], nodes: Nodes = Nodes()) -> list[str]:
    """`python -m torch.distributed.run ... -m <module> <args>`: by default one node on a free
    local port."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nnodes={nodes.count}",
        f"--node-rank={nodes.rank}",
        f"--nproc-per-node={nproc}",
        "--max-restarts=0",
        *nodes.rendezvous(),
        "-m",
        module,
        *args,
    ]


# How long torchrun gets to stop its workers after SIGTERM before it is killed (it waits up to
# 30 s for them itself, then kills them)
STOP_GRACE_S = 40.0


def run_torchrun(nproc: int, module: str, args: Sequence[str], nodes: Nodes = Nodes()) -> int:
    """Run `python -m module args` in `nproc` processes per node under torchrun; its exit status.

    torchrun runs in a session of its own, so a terminal's Ctrl-C reaches this process alone
    (torchrun would pass SIGINT on, and every rank would print a KeyboardInterrupt traceback).
    Interrupted (Ctrl-C, or SIGTERM made an exception by the CLI), this process stops torchrun with
    SIGTERM, which torchrun passes to its workers, and lets the interruption go on once they are
    gone. torchrun's stderr (its workers' too) is passed through until then; what it prints while
    it shuts down (its warnings and its own traceback of the signal) is dropped."""
    environment = dict(os.environ)
    if nproc > 1:  # torchrun's own choice, made here so that torchrun does not announce it
        environment.setdefault("OMP_NUM_THREADS", "1")
    torchrun = subprocess.Popen(
        torchrun_command(nproc, module, args, nodes), env=environment, stderr=subprocess.PIPE, start_new_session=True
    )
    relay = _Relay(torchrun.stderr)
    try:
        return torchrun.wait()
    except BaseException:
        relay.muted = True
        _stop(torchrun)
        raise
    finally:
        relay.join(STOP_GRACE_S)


class _Relay(threading.Thread):
    """Copies a child's stderr to this process's, line by line, until muted."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.muted = pipe, False
        self.start()

    def run(self) -> None:
        for line in iter(self.pipe.readline, b""):
            if not self.muted:
                sys.stderr.write(line.decode("utf-8", errors="replace"))
                sys.stderr.flush()


def _stop(torchrun: subprocess.Popen) -> None:
    """SIGTERM to torchrun and, after STOP_GRACE_S, SIGKILL to what is left of its session."""
    if torchrun.poll() is not None:
        return
    torchrun.terminate()
    try:
        torchrun.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(torchrun.pid, signal.SIGKILL)
        torchrun.wait()


@dataclass(frozen=True)
class World:
    rank: int
    size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


@contextmanager
def joined_world(device: str, timeout_s: float) -> Iterator[World]:
    """Join the launch's process group (NCCL on GPUs, Gloo on CPUs); leave it on exit.

    The timeout bounds every collective: a rank that died or hangs makes the others fail after
    `timeout_s` instead of waiting forever (NCCL's watchdog then ends the process).
    """
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if device.startswith("cuda"):
        here = torch.device("cuda", local_rank)
        torch.cuda.set_device(here)
        dist.init_process_group("nccl", timeout=dt.timedelta(seconds=timeout_s), device_id=here)
    else:
        here = torch.device("cpu")
        dist.init_process_group("gloo", timeout=dt.timedelta(seconds=timeout_s))
    try:
        yield World(rank, size, local_rank, here)
        dist.barrier()  # no rank tears its group down while a peer is still in a collective
    finally:
        # A DDP or FSDP wrapper still referenced holds the group; freeing it now joins Gloo's
        # threads while the interpreter is whole, not during its teardown, where a rank aborted
        # after its work was done ("terminate called without an active exception", seen in CI).
        gc.collect()
        dist.destroy_process_group()

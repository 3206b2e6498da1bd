"""Running Nsight Compute (`ncu`) on one NVTX range of a program and keeping its raw CSV.

The command is always the same shape: fixed clocks off (`--clock-control none`, so counters see
the clocks the program really runs at), only the kernels inside one push/pop NVTX range, and the
raw page in base units, so the parser never has to guess a unit.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lmperf.errors import UsageError
from lmperf.pmc.parse import write_text

# The counters the inference reads; launch statistics (grid, block, registers) come with the raw
# page. Tensor-pipe counters count the work of whole tiles, FFMA the fp32 GEMMs without tensor cores.
METRICS = (
    "gpu__time_duration.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp8.sum",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
    # Bytes requested by global stores: exactly N·V·bytes for an LM head that stores with st.global
    # (fp32 GEMMs, and 16-bit ones whose V is not a multiple of 8); 0 for TMA-store kernels.
    "sm__sass_data_bytes_mem_global_op_st.sum",
    # What a Hopper TMA-store LM head writes: the bytes its TMA stores send out, and the L2 write
    # sectors from the SMs (lmperf.pmc.vocab). They replace DRAM read/write bytes, which nothing
    # read and which a capture cannot pin (part of the output stays in L2).
    "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    # The L2 read sectors from the SMs: a copy reads its source once, so inductor's pad_mm copy
    # of an LM head's weight reads the V x d rows it pads (lmperf.pmc.vocab).
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__cluster_dim_x",
    "launch__cluster_dim_y",
    "launch__cluster_dim_z",
)

# What ncu prints when it cannot do its job, and the one line the user gets for each.
_FAILURES = (
    (
        "ERR_NVGPUCTRPERM",
        "ncu has no permission to read GPU performance counters "
        "(run as root or allow non-admin profiling: NVreg_RestrictProfilingToAdminUsers=0)",
    ),
    ("No kernels were profiled", "ncu profiled no kernel: nothing ran inside NVTX range {range!r}"),
    ("Failed to find metric", "ncu does not know a requested metric on this GPU: {detail}"),
    ("Failed to initialize the profiler", "ncu could not start its profiler: {detail}"),
)


LAUNCH_METRICS = ("launch__grid_size", "launch__block_size")  # one pass: no counter to replay for
KILLED_OUTPUT_S = 10  # how long a killed session's output is waited for
NOT_NCCL = "^(?!nccl)"  # kernel function names that are not NCCL's (ncclDevKernel_..., ncclKernel_...)


@dataclass(frozen=True)
class NcuRun:
    """One profiling run: the program to launch and the NVTX range to keep."""

    program: list[str]
    range_name: str
    metrics: tuple[str, ...] = METRICS
    ncu: str = "ncu"
    # Profile only the launched process (rank 0, whose peers it starts) and leave NCCL's kernels
    # unprofiled: ncu serializes the kernels it profiles and replays each alone, so a collective
    # waits for peers that never join it (NVIDIA/nccl#466, #536), and rerunning the whole program
    # once a pass (application replay) does not get past it either. The kernels around the
    # collectives, those pmc reads, are the ones asked for, and rank 0's collectives run
    # unprofiled between them, provided its peers start outside the profiler
    # (lmperf.pmc.tensor_parallel.unprofiled).
    skip_collectives: bool = False
    # Only the launched process, every kernel: the launch run that places the collectives
    # (lmperf.pmc.collective_rows), with LAUNCH_METRICS, which need no replay.
    own_process_only: bool = False

    def command(self) -> list[str]:
        if not self.program:
            raise UsageError("no program to profile")
        if not self.range_name or "/" in self.range_name:
            raise UsageError(f"NVTX range name must be non-empty and contain no '/': {self.range_name!r}")
        return [
            self.ncu,
            "--clock-control",
            "none",
            # Either kind of range: "NAME/" is a push/pop range, "NAME" a start/end range.
            "--nvtx",
            "--nvtx-include",
            f"{self.range_name}/",
            "--nvtx-include",
            self.range_name,
            "--metrics",
            ",".join(self.metrics),
            "--csv",
            "--page",
            "raw",
            "--print-units",
            "base",
            *(("--target-processes", "application-only") if self.skip_collectives or self.own_process_only else ()),
            *(("--kernel-name", f"regex:{NOT_NCCL}") if self.skip_collectives else ()),
            *self.program,
        ]


def find_ncu(ncu: str | None = None) -> str:
    """The ncu executable: the given path, else `ncu` on the PATH; missing is a UsageError."""
    path = shutil.which(ncu or "ncu")
    if path is None:
        where = f"at {ncu!r}" if ncu else "on the PATH"
        raise UsageError(f"Nsight Compute (ncu) not found {where}; install it or pass --ncu PATH")
    return path


@functools.lru_cache(maxsize=None)
def known_metrics(ncu: str) -> set[str] | None:
    """Base metric names this GPU offers (`ncu --query-metrics`), or None if ncu cannot say."""
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = {line.split()[0] for line in out.splitlines() if line[:1].isalpha() and "__" in line}
    return names or None


def supported(metrics: tuple[str, ...], known: set[str] | None) -> tuple[tuple[str, ...], list[str]]:
    """Split `metrics` into those the GPU offers and those it does not (a rollup like `.sum`
    is offered when its base name is)."""
    if known is None:
        return metrics, []
    kept, dropped = [], []
    for metric in metrics:
        # Launch statistics are not hardware counters; the query does not list them.
        offered = metric.startswith("launch__") or metric.split(".")[0] in known
        (kept if offered else dropped).append(metric)
    if len(dropped) > len(metrics) // 2:  # a query this far off is misread, not the truth
        return metrics, []
    return tuple(kept), dropped


def output_tail(output: str) -> str:
    """The last lines of a program's output, one line short enough for an error message."""
    return (" | ".join(output.strip().splitlines()[-3:]) or "no output")[-400:]


def last_line(stopped: subprocess.TimeoutExpired) -> str:
    """The last line a stopped ncu run printed: the program's own, or ncu's (it prints no line a
    kernel when writing CSV, so "Connected to process" last says the program never returned)."""
    output = (stopped.stdout or "") + (stopped.stderr or "")
    return (output.strip().splitlines() or ["no output"])[-1].strip()[:200]


def failure_message(output: str, range_name: str) -> str | None:
    """The one-line reason a run produced no usable capture, or None when it did."""
    for marker, message in _FAILURES:
        if marker in output:
            line = next(line for line in output.splitlines() if marker in line)
            return message.format(range=range_name, detail=line.strip()[:200])
    return None


def run_in_session(command: list[str], timeout_s: float | None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `command` to completion with its output captured, in a session of its own: past
    `timeout_s` the whole session is killed (ncu, the program it profiles, that program's NCCL
    peers or compile workers), none of which may be left holding a GPU for the next capture,
    and TimeoutExpired carries the output so far. The session does not see a terminal's Ctrl-C,
    so an interruption here kills it too. `env`: variables set over the current ones."""
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_session(process)
            try:  # a process that left the session may still hold the pipes
                stdout, stderr = process.communicate(timeout=KILLED_OUTPUT_S)
            except subprocess.TimeoutExpired:
                stdout = stderr = ""
            raise subprocess.TimeoutExpired(command, timeout_s, stdout, stderr) from None
        except BaseException:
            _kill_session(process)
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _kill_session(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def run(
    spec: NcuRun, raw_csv: Path, timeout_s: float | None = None, env: dict | None = None, written: Path | None = None
) -> Path:
    """Profile `spec.program` and write ncu's raw CSV (gzipped if the name ends in .gz); `env`:
    variables set for the program over the current environment; `written`: a file the program
    writes once its profiled work is done, whose absence fails the run."""
    try:
        done = run_in_session(spec.command(), timeout_s, {"PYTHONUNBUFFERED": "1", **(env or {})})
    except subprocess.TimeoutExpired as stopped:
        raise UsageError(
            f"ncu did not finish within {timeout_s:.0f} s; its last line: {last_line(stopped)!r}"
        ) from None
    output = done.stdout + done.stderr
    problem = failure_message(output, spec.range_name)
    if problem is None and '"ID"' not in done.stdout:
        problem = f"ncu wrote no CSV (exit {done.returncode}): {output_tail(output)}"
    # ncu writes the kernels it profiled even when the program fails after them, so a capture
    # whose program never finished is told apart by what the program had still to write; the
    # program's error is on stderr, where ncu's CSV is not.
    if problem is None and written is not None and not Path(written).exists():
        problem = f"the target wrote no {Path(written).name} after its kernels (exit {done.returncode}): "
        problem += output_tail(done.stderr)
    if problem:
        raise UsageError(problem)
    raw_csv = Path(raw_csv)
    raw_csv.parent.mkdir(parents=True, exist_ok=True)
    return write_text(raw_csv, done.stdout)

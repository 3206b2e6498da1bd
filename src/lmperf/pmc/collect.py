"""`lmperf pmc collect`: profile one step of a target (or any command) and keep the capture.

Writes three files next to each other: the raw CSV exactly as ncu printed it (`NAME.csv` or
`NAME.csv.gz`), a tidy per-kernel table (`NAME.kernels.csv`) and, for lmperf and Hugging Face
targets, the true configuration that ran (`NAME.truth.json`).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lmperf.analysis.kernels import short_name
from lmperf.errors import UsageError
from lmperf.pmc.kernels import category
from lmperf.pmc import ncu
from lmperf.pmc.collective_rows import NotPlaced, with_collectives
from lmperf.pmc.parse import Capture, read_capture, read_text, write_text
from lmperf.pmc.targets import RANGE, Target
from lmperf.report import tables


@dataclass(frozen=True)
class Collected:
    raw_csv: Path
    kernels_csv: Path
    truth_json: Path | None
    kernels: int
    dropped_metrics: list[str]
    # NCCL's kernels put back at their launch places (a run with NCCL peers), or why they are not
    collectives: str = ""


def sibling(raw_csv: Path, suffix: str) -> Path:
    """NAME.csv(.gz) -> NAME<suffix>."""
    name = Path(raw_csv).name
    for ending in (".csv.gz", ".csv", ".gz"):
        if name.endswith(ending):
            name = name[: -len(ending)]
            break
    return Path(raw_csv).with_name(name + suffix)


def counter_columns(capture: Capture) -> list[str]:
    """The requested counters the capture has (the raw page also carries device attributes)."""
    return [name for name in ncu.METRICS if capture.has(name) and not name.startswith("launch__")]


def kernel_rows(capture: Capture) -> list[dict]:
    """One tidy row per kernel: class, short name, launch shape and the counters."""
    rows = []
    for k in capture.kernels:
        row = {
            "index": k.index,
            "class": category(k),
            "kernel": short_name(k.name),
            "grid": "x".join(map(str, k.grid)),
            "block": "x".join(map(str, k.block)),
        }
        row.update({name: k.metrics.get(name) for name in counter_columns(capture)})
        rows.append(row)
    return rows


def write_kernel_table(capture: Capture, path: Path) -> Path:
    columns = [(name, name, "") for name in ("index", "class", "kernel", "grid", "block")]
    columns += [(name, name, "") for name in counter_columns(capture)]
    path.write_text(tables.csv_text(kernel_rows(capture), columns), encoding="utf-8")
    return path


def collect_command(
    program: list[str],
    range_name: str,
    raw_csv: Path,
    ncu_path: str | None = None,
    timeout_s: float | None = None,
    truth_json: Path | None = None,
    env: dict | None = None,
    skip_collectives: bool = False,
) -> Collected:
    """Profile `program`'s kernels inside NVTX range `range_name`; write the capture files. With
    `skip_collectives`, NCCL's kernels go unprofiled, and a second run that records every
    kernel's launch alone puts them back in place (lmperf.pmc.collective_rows)."""
    executable = ncu.find_ncu(ncu_path)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    metrics, dropped = ncu.supported(ncu.METRICS, ncu.known_metrics(executable))
    spec = ncu.NcuRun(list(program), range_name, metrics, executable, skip_collectives)
    raw_csv = ncu.run(spec, Path(raw_csv), timeout_s, env, written=truth_json)
    collectives = _place_collectives(spec, raw_csv, deadline, env) if skip_collectives else ""
    capture = read_capture(raw_csv)
    kernels_csv = write_kernel_table(capture, sibling(raw_csv, ".kernels.csv"))
    return Collected(raw_csv, kernels_csv, truth_json, len(capture.kernels), dropped, collectives)


def _place_collectives(profiled: ncu.NcuRun, raw_csv: Path, deadline: float | None, env: dict | None) -> str:
    """Run the launch run and rewrite `raw_csv` with the collectives in place; what was done, in
    words. A failed launch run leaves the profiled capture as it was, and says why."""
    launches = dataclasses.replace(profiled, metrics=ncu.LAUNCH_METRICS, skip_collectives=False, own_process_only=True)
    left = None if deadline is None else max(deadline - time.monotonic(), 1.0)
    with tempfile.TemporaryDirectory() as scratch:
        try:
            launch_csv = ncu.run(launches, Path(scratch) / "launches.csv", left, env)
            text, placed = with_collectives(read_text(raw_csv), launch_csv.read_text(encoding="utf-8"))
        except (UsageError, NotPlaced) as failure:
            return f"NCCL's kernels not placed: {failure}"
    write_text(raw_csv, text)
    return f"{placed} NCCL kernels placed from a launch-statistics run"


def collect_target(
    target: Target, raw_csv: Path, ncu_path: str | None = None, timeout_s: float | None = None
) -> Collected:
    """Profile one step of an lmperf preset or a Hugging Face config (random weights)."""
    target.validate()
    ncu.find_ncu(ncu_path)  # before a warm-up run that a missing ncu would waste
    truth_json = sibling(Path(raw_csv), ".truth.json")
    truth_json.parent.mkdir(parents=True, exist_ok=True)
    truth_json.unlink(missing_ok=True)  # an earlier capture's must not vouch for this one
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    # A compile worker the first run leaves behind may still write to the inductor cache when
    # the scratch folder goes: that must not lose the capture already written.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch:
        spec_path = Path(scratch) / "target.json"
        spec_path.write_text(target.to_json(), encoding="utf-8")
        program = [sys.executable, "-m", "lmperf.pmc.runner", str(spec_path), str(truth_json)]
        env = None
        if target.compile or target.static_cache:
            env = compiled_once(program[:-1], Path(scratch) / "inductor", timeout_s)
        left = None if deadline is None else max(deadline - time.monotonic(), 1.0)
        return collect_command(
            program, RANGE, raw_csv, ncu_path, left, truth_json, env, skip_collectives=target.tp_nccl
        )


def compiled_once(program: list[str], cache_dir: Path, timeout_s: float | None) -> dict:
    """Run a compiling target once without ncu, into an inductor cache of its own, and return
    the environment that makes the profiled run load what it compiled: under ncu every process
    and kernel launch is intercepted, so inductor's compilation and max-autotune's benchmarking
    of GEMM templates take many times longer there than the step itself. The profiled run also
    compiles in its own process (no worker pool under ncu) should anything miss the cache."""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(cache_dir), "PYTHONUNBUFFERED": "1"}
    try:
        done = ncu.run_in_session(program, timeout_s, env)
    except subprocess.TimeoutExpired:
        raise UsageError(f"the target's compiling run (without ncu) did not finish within {timeout_s:.0f} s") from None
    if done.returncode != 0:
        tail = ncu.output_tail(done.stdout + done.stderr)
        raise UsageError(f"the target failed before profiling (exit {done.returncode}): {tail}")
    return {**env, "TORCHINDUCTOR_COMPILE_THREADS": "1"}

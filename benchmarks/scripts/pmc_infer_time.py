"""How long `lmperf pmc infer` takes on a CPU: in-process for every committed capture (best of 3),
and the whole CLI (Python start, imports, parse, infer, JSON) on the largest real capture, on a
34-layer forward capture made from a real one by repeating its middle layer's rows, and on a
34-layer training step made the same way from a real 2-layer one (timing only: no 34-layer model
was captured). `python benchmarks/scripts/pmc_infer_time.py OUT.txt`."""

import csv
import gzip
import io
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from lmperf.analysis.kernels import kernel_category
from lmperf.pmc import gemms as g
from lmperf.pmc.infer import infer_file
from lmperf.pmc.kernels import is_backward, is_generated
from lmperf.pmc.parse import read_capture, read_text

FIXTURES = Path("tests/pmc/fixtures")
DEEP_SOURCE = FIXTURES / "qwen2_l3_d640_gqa.csv.gz"  # forward, 3 layers, 181 kernels
DEEP_LAYERS = 34
DEEP_TRAIN_SOURCE = FIXTURES / "sweep" / "s_llama_h14_kv2_t77_flash_train.csv.gz"  # 2 layers, 349 kernels


def best_of(runs: int, action) -> float:
    times = []
    for _ in range(runs):
        kernel_category.cache_clear()  # each run as cold as a fresh `lmperf pmc infer`
        is_backward.cache_clear()
        is_generated.cache_clear()
        g.nvjet_tiles.cache_clear()
        g.simt_name_tile.cache_clear()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def _rows(source: Path) -> tuple[list[str], list[str], list[list[str]]]:
    """The raw page's header, units and one row per kernel (row i is kernel index i)."""
    lines = read_text(source).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    rows = list(csv.reader(io.StringIO("\n".join(l for l in lines[start:] if l.startswith('"')))))
    return rows[0], rows[1], rows[2:]


def deep_capture(path: Path) -> int:
    """Write the source capture with its second layer's rows repeated to DEEP_LAYERS layers."""
    capture = read_capture(DEEP_SOURCE)
    forward = g.split_phases(capture).forward
    gemms = g.forward_gemms(forward)
    period = len(g.find_layers(forward).layer_gemms)
    second, third = gemms[period].index, gemms[2 * period].index
    header, units, body = _rows(DEEP_SOURCE)
    middle = body[second:third] * (DEEP_LAYERS - 3)  # layers 1, 2 and 3 are kept
    return _write(path, header, units, body[:second] + middle + body[second:])


def deep_training_capture(path: Path) -> int:
    """Write the 2-layer training capture with its first layer's forward rows and its last
    backward layer's rows each repeated, to DEEP_LAYERS layers (the backward runs the layers in
    reverse, one block of rows per layer after the LM head's)."""
    capture = read_capture(DEEP_TRAIN_SOURCE)
    phases = g.split_phases(capture)
    gemms = g.forward_gemms(phases.forward)
    period = len(g.find_layers(phases.forward).layer_gemms)
    first, second = gemms[0].index, gemms[period].index
    backward = [k for k in phases.backward if kernel_category(k.name) == "matmul" and g.macs(k) > 0]
    per_layer = (len(backward) - 2) // 2  # the LM head's two GEMMs, then two layers' worth
    back_first, back_second = backward[2].index, backward[2 + per_layer].index
    header, units, body = _rows(DEEP_TRAIN_SOURCE)
    extra = DEEP_LAYERS - 2
    kernels = (
        body[:second]
        + body[first:second] * extra
        + body[second:back_second]
        + body[back_first:back_second] * extra
        + body[back_second:]
    )
    return _write(path, header, units, kernels)


def _write(path: Path, header: list[str], units: list[str], kernels: list[list[str]]) -> int:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerows([header, units])
    for i, row in enumerate(kernels):
        writer.writerow([str(i), *row[1:]])
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(out.getvalue())
    return len(kernels)


def cli_wall(path: Path) -> list[str]:
    """Wall and CPU (user + sys) seconds of each of three CLI runs: on shared cores the wall
    time swings with the load, the CPU time much less."""
    runs = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "lmperf.cli", "pmc", "infer", str(path), "--json"], check=True, capture_output=True
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        runs.append(f"{wall:.2f} s wall, {cpu:.2f} s CPU")
    return runs


def main(out: Path) -> None:
    captures = sorted(FIXTURES.glob("*.csv.gz")) + sorted((FIXTURES / "sweep").glob("*.csv.gz"))
    captures += sorted((FIXTURES / "served").glob("*.csv.gz"))
    timed = []
    for path in captures:
        try:
            timed.append((best_of(3, lambda: infer_file(path)), len(read_capture(path).kernels), path.name))
        except Exception:  # noqa: BLE001 - a fixture that is no model capture (cli_cmd_matmul)
            continue
    timed.sort()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"lmperf pmc infer time on this CPU ({platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores shared with other jobs, load {os.getloadavg()[0]:.1f}), commit {commit}, "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}",
        "in-process infer_file (read gzip + parse + infer), every committed capture; slowest four and the median:",
    ]
    lines += [f"  {t * 1000:4.0f} ms  {n} kernels  {name}" for t, n, name in timed[-4:]]
    lines.append(
        f"  median {statistics.median(t for t, _, _ in timed) * 1000:.0f} ms over {len(timed)} captures (best of 3 each)"
    )
    largest = max(timed, key=lambda row: row[1])
    real = next(p for p in captures if p.name == largest[2])
    lines.append(
        f"whole CLI, wall, 'lmperf pmc infer {real.name} --json' ({largest[1]} kernels), incl. Python start and imports:"
    )
    lines += [f"  {run}" for run in cli_wall(real)]
    with tempfile.TemporaryDirectory() as scratch:
        deep = Path(scratch) / "deep.csv.gz"
        kernels = deep_capture(deep)
        result = infer_file(deep)
        lines.append(
            f"whole CLI, wall, a {DEEP_LAYERS}-layer forward capture ({kernels} kernels: "
            f"{DEEP_SOURCE.name}'s second layer repeated; infer reads n_layers="
            f"{result.values['n_layers']}):"
        )
        lines += [f"  {run}" for run in cli_wall(deep)]
        deep_train = Path(scratch) / "deep-train.csv.gz"
        kernels = deep_training_capture(deep_train)
        result = infer_file(deep_train)
        lines.append(
            f"whole CLI, wall, a {DEEP_LAYERS}-layer training-step capture ({kernels} kernels: "
            f"{DEEP_TRAIN_SOURCE.name}'s first forward layer and last backward layer "
            f"repeated; infer reads mode={result.values['mode']}, "
            f"n_layers={result.values['n_layers']}):"
        )
        lines += [f"  {run}" for run in cli_wall(deep_train)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(out.read_text())


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Summarise stall_profile.sh's Nsight Compute exports: per kernel, then per SASS instruction.

`python benchmarks/attention/stall_summary.py DIR` reads DIR/raw.csv[.gz] (one row of metrics per
kernel) and DIR/source-sass.csv[.gz] (per-instruction warp-stall samples) and prints, for each
attention kernel: time, registers, tensor-pipe and issue activity, the leading stall reasons,
then where the sampled warps stood (by opcode, and the shared-memory round trips at the offsets
the dK/dV kernel's layout conversions use), and the most-sampled instructions.
"""

import collections
import csv
import gzip
import re
import sys
from pathlib import Path

KERNEL_METRICS = {
    "time ms": "gpu__time_duration.sum",
    "registers": "launch__registers_per_thread",
    "threads": "launch__block_size",
    "grid": "launch__grid_size",
    "tensor pipe %": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "issue active %": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "XU (MUFU) %": "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "instructions": "smsp__inst_executed.sum",
}
STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio")
SKIP = re.compile(r"FillFunctor|copy_kernel|convert_dq|compute_dot_do_o|preprocess")  # small helper kernels


def _open(path: Path):
    gz = path.with_name(path.name + ".gz")
    return gzip.open(gz, "rt") if gz.exists() else open(path)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def kernels(folder: Path) -> None:
    rows = list(csv.reader(_open(folder / "raw.csv")))
    header, data = rows[0], rows[2:]  # row 1 holds the units
    index = {name: i for i, name in enumerate(header)}
    for row in data:
        name = row[index["Kernel Name"]]
        if SKIP.search(name):
            continue
        cells = []
        for label, metric in KERNEL_METRICS.items():
            value = _number(row[index[metric]])
            cells.append(f"{label} {value / 1e6:.3f}" if label == "time ms" else f"{label} {value:g}")
        stalls = sorted(
            ((_number(row[i]), STALL.match(h).group(1)) for h, i in index.items() if STALL.match(h)), reverse=True
        )
        print(f"[{row[index['ID']]}] {name[:80]}\n    " + ", ".join(cells))
        print("    stalls per issued instruction: " + ", ".join(f"{r} {v:.2f}" for v, r in stalls[:6]))


def _sections(folder: Path):
    """(kernel name, header, instruction rows) per kernel of the source page."""
    current = None
    for row in csv.reader(_open(folder / "source-sass.csv")):
        if row and row[0] == "Kernel Name":
            if current:
                yield current
            current = [row[1], None, []]
        elif row and row[0] == "Address" and current:
            current[1] = row
        elif row and current and current[1]:
            current[2].append(row)
    if current:
        yield current


def instructions(folder: Path, top: int = 12) -> None:
    for name, header, body in _sections(folder):
        if SKIP.search(name):
            continue
        index = {h: i for i, h in enumerate(header)}
        samples = [int(r[index["Warp Stall Sampling (All Samples)"]] or 0) for r in body]
        total = sum(samples) or 1
        by_opcode, groups = collections.Counter(), collections.Counter()
        for n, row in zip(samples, body):
            source = row[index["Source"]].strip()
            opcode = re.sub(r"^@!?U?P\w+\s+", "", source).split(" ")[0]
            by_opcode[opcode] += n
            if re.match(r"(STS|LDS|STSM|LDSM)\S*\s.*\+0x[cd]", opcode + " " + source.split(" ", 1)[-1]):
                groups["shared-memory round trips at 0xc000-0xdfff"] += n
            elif opcode.startswith(("HGMMA", "WARPGROUP")):
                groups["wgmma issue, arrive, wait"] += n
            elif opcode.startswith("MUFU"):
                groups["MUFU (exp2)"] += n
            elif opcode.startswith(("REDG", "RED.", "UBLKRED", "UTMAREDG")):
                groups["dQ reductions"] += n
        print(f"\n{name[:90]}: {total} samples, {len(body)} instructions")
        print("  by opcode: " + ", ".join(f"{o} {n / total:.1%}" for o, n in by_opcode.most_common(10)))
        print("  groups: " + ", ".join(f"{g} {n / total:.1%}" for g, n in groups.most_common()))
        for n, row in sorted(zip(samples, body), key=lambda pair: -pair[0])[:top]:
            print(f"   {n / total:6.2%}  {row[index['Source']].strip()[:70]}")


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    kernels(folder)
    instructions(folder)

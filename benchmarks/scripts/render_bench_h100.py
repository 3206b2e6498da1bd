"""Render the tables of benchmarks/bench-h100.md from the committed JSONL rows.

usage: python benchmarks/scripts/render_bench_h100.py > benchmarks/bench-h100-tables.md
"""

import json
from pathlib import Path

from lmperf.bench.report import COLUMNS
from lmperf.report import tables
from lmperf.report.rundir import read_rows

DATA = Path(__file__).resolve().parents[1] / "data"
PRESET_ORDER = ["small", "medium", "large", "xl", "2.7B"]
MODE_ORDER = ["forward", "forward-backward", "train-step"]


def sweep_table() -> str:
    rows = read_rows(DATA / "bench-h100-sweep.jsonl")
    rows.sort(key=lambda r: (PRESET_ORDER.index(r["preset"]), r["seq_len"], r["precision"], r["compile"], MODE_ORDER.index(r["mode"])))
    return tables.markdown(rows, COLUMNS)


def warmup_table() -> str:
    columns = COLUMNS[2:4] + [("warm-up", "warmup", "d")] + COLUMNS[7:13] + [("warm-up steps ms", "warmup_list", "")]
    rows = []
    for w in (0, 1, 2, 5):
        for row in read_rows(DATA / f"bench-h100-warmup{w}.jsonl"):
            row["warmup_list"] = ", ".join(f"{t:.0f}" for t in row["warmup_ms"])
            rows.append(row)
    rows.sort(key=lambda r: (r["precision"], MODE_ORDER.index(r["mode"]), r["warmup"]))
    return tables.markdown(rows, columns)


def agreement_table() -> str:
    rows = json.loads((DATA / "bench-h100-agreement.json").read_text())
    columns = [
        ("preset", "preset", ""), ("ctx", "seq_len", "d"), ("mode", "mode", ""), ("prec", "precision", ""),
        ("lmperf median ms", "lmperf_median_ms", ".2f"), ("lmperf mean ms", "lmperf_mean_ms", ".2f"),
        ("do_bench median ms", "do_bench_median_ms", ".2f"),
        ("torch.utils.benchmark median ms", "torch_benchmark_median_ms", ".2f"),
        ("lmperf vs do_bench", "diff_vs_do_bench", "+.1%"),
        ("lmperf vs torch.utils.benchmark", "diff_vs_torch_benchmark", "+.1%"),
    ]
    return tables.markdown(rows, columns)


if __name__ == "__main__":
    print("## Sweep\n\n" + sweep_table())
    print("## Warm-up study (small, context 512, eager)\n\n" + warmup_table())
    print("## Agreement with independent timers\n\n" + agreement_table())

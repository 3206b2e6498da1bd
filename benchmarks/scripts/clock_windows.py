"""Rows of a GPU's SM clock and power while busy, one per run window, from an nvidia-smi log
(benchmarks/leaderboard-h200x2.md, "The power limit").

The log is nvidia-smi's CSV of `timestamp,[index,]clocks.sm,[clocks.mem,]power.draw,
temperature.gpu,clocks_event_reasons.active` (the leaderboard script's phases 6 and 7 write it
with the index). A window is `NAME=HH:MM:SS-HH:MM:SS@GPUS` (GPUS: comma-separated indices, or 0
for a log without them); a sample is busy when its power is above --busy-w. Usage:

    python benchmarks/scripts/clock_windows.py smi.csv ENV.json "step=19:28:37-19:30:36@0,1" ... > rows.jsonl

ENV.json: the environment the rows carry (GPU, driver, versions, commit, date), as lmperf's rows do.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys

SOFTWARE_POWER_CAP = 0x4  # nvidia-smi's clocks_event_reasons bit for the power cap


def samples(path: str) -> list[dict]:
    """Each log line as {time, gpu, mhz, watts, capped}, columns found by their header."""
    with open(path, encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader)]
        column = {name.split(" ")[0]: i for i, name in enumerate(header)}
        rows = []
        for line in reader:
            if len(line) != len(header) or not line[0].strip()[:4].isdigit():
                continue  # a line nvidia-smi cut short, or a repeated header
            rows.append(
                {
                    "time": line[0].strip()[11:19],
                    "gpu": line[column["index"]].strip() if "index" in column else "0",
                    "mhz": int(line[column["clocks.current.sm"]].split()[0]),
                    "watts": float(line[column["power.draw"]].split()[0]),
                    "capped": bool(int(line[column["clocks_event_reasons.active"]], 16) & SOFTWARE_POWER_CAP),
                }
            )
        return rows


def window_row(log: list[dict], name: str, start: str, end: str, gpus: list[str], busy_w: float, env: dict) -> dict:
    busy = [s for s in log if start <= s["time"] <= end and s["gpu"] in gpus and s["watts"] > busy_w]
    if not busy:
        raise ValueError(f"window {name!r}: no busy sample between {start} and {end} on GPUs {','.join(gpus)}")
    clocks = sorted(s["mhz"] for s in busy)
    n = len(clocks)
    return {
        "what": f"SM clock while busy (nvidia-smi; busy: power above {busy_w:.0f} W)",
        "window": name,
        "gpus": ",".join(gpus),
        "from": start,
        "to": end,
        "samples": n,
        "sm_mhz_median": statistics.median(clocks),
        "sm_mhz_p10": clocks[n // 10],
        "sm_mhz_p90": clocks[9 * n // 10],
        "power_w_median": statistics.median(s["watts"] for s in busy),
        "power_capped_share": round(sum(s["capped"] for s in busy) / n, 3),
        "env": env,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("env", help="a JSON file with the rows' environment")
    parser.add_argument("windows", nargs="+", help="NAME=HH:MM:SS-HH:MM:SS@GPUS")
    parser.add_argument("--busy-w", type=float, default=300.0)
    args = parser.parse_args(argv)
    try:
        log = samples(args.log)
        with open(args.env, encoding="utf-8") as handle:
            env = json.load(handle)
        for spec in args.windows:
            name, _, rest = spec.rpartition("=")
            span, _, gpus = rest.partition("@")
            start, _, end = span.partition("-")
            if not (name and start and end and gpus):
                raise ValueError(f"window {spec!r} is not NAME=HH:MM:SS-HH:MM:SS@GPUS")
            print(json.dumps(window_row(log, name, start, end, gpus.split(","), args.busy_w, env)))
    except (OSError, ValueError, KeyError, StopIteration) as error:
        print(f"clock_windows.py: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

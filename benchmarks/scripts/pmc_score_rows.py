"""Rows for benchmarks/rows/pmc-accuracy.jsonl.gz from a score file of `python -m lmperf.pmc.accuracy`
(or from `pmc_infer_time.py`'s record): one row per capture (its split, attention path and wrong
fields), per field rate, per attention path and per kind of run, each with the scoring's commit and the captures'
environment. Append them with benchmarks/rows.py:

    python benchmarks/scripts/pmc_score_rows.py score-16-sweep-blind6-abc1234.md > /tmp/rows.jsonl
    python benchmarks/rows.py add pmc-accuracy score-16-sweep-blind6-abc1234 /tmp/rows.jsonl
    python benchmarks/scripts/pmc_score_rows.py --infer-time infer-time-cpu.txt COMMIT DATE > /tmp/t.jsonl
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ENVIRONMENT = re.compile(
    r"- (\S+): device (.+?), driver (\S+), cuda (\S+), torch (\S+), triton (\S+),"
    r"(?: transformers (\S+),)? commit (\S+), date (.+)$"
)
KEY_VALUE = re.compile(r"- (device|driver|cuda|torch|triton|date): (.+)$")
TIMING = re.compile(r"\s+([\d.]+) s wall, ([\d.]+) s CPU")


def environment(lines: list[str], commit: str) -> dict:
    """The scoring's commit, the GPU and library versions, and each capture call's commit and date."""
    env: dict = {"commit": commit, "captures": []}
    for line in lines:
        if match := ENVIRONMENT.match(line):
            name, device, driver, cuda, torch, triton, transformers, capture_commit, date = match.groups()
            env.update(device=device, driver=driver, cuda=cuda, torch=torch, triton=triton)
            env["captures"].append(
                {
                    "file": name,
                    "commit": capture_commit,
                    "date": date,
                    **({"transformers": transformers} if transformers else {}),
                }
            )
        elif match := KEY_VALUE.match(line):
            key, value = match.groups()
            if key == "date":
                env["captures"].append({"date": value})
            else:
                env[key] = value
    return env


def score_rows(path: Path) -> list[dict]:
    """score-N-NAME-COMMIT.md -> rows of kind capture, field and path."""
    name = path.stem
    number, commit = int(name.split("-")[1]), name.rsplit("-", 1)[1]
    lines = path.read_text(encoding="utf-8").splitlines()
    base = {
        "scoring": name,
        "scoring_number": number,
        "env": environment(lines, commit),
        "corpus": "served"
        if "served" in name
        else "first-corpus"
        if "first-corpus" in name or number <= 2
        else "sweep",
    }
    rows, header = [], ""
    for line in lines:
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] in ("field", "attention path", "run", "capture"):
            header = cells[0]
        elif header == "field":
            rows.append(
                {
                    **base,
                    "kind": "field",
                    "field": cells[0],
                    "held_out_exact": cells[1],
                    "held_out_n": int(cells[2]),
                    "dev_exact": cells[3],
                    "dev_n": int(cells[4]),
                }
            )
        elif header in ("attention path", "run"):
            rows.append(
                {
                    **base,
                    "kind": "path" if header == "attention path" else "run",
                    "path" if header == "attention path" else "run": cells[0],
                    "captures": int(cells[1]),
                    "structure": cells[2],
                    "vocab_exact": cells[3],
                }
            )
        else:
            rows.append(
                {
                    **base,
                    "kind": "capture",
                    "capture": cells[0],
                    "split": cells[1],
                    "wrong": cells[-1],
                    **({"attention": cells[2]} if len(cells) >= 4 else {}),
                    **({"run": cells[3]} if len(cells) == 5 else {}),
                }
            )
    return rows


def infer_time_rows(path: Path, commit: str, date: str) -> list[dict]:
    """pmc_infer_time.py's record -> one row per whole-CLI timing."""
    lines = path.read_text(encoding="utf-8").splitlines()
    env = {"commit": commit, "date": date, "device": "CPU: " + lines[0].split("on this CPU (")[1].split(")")[0]}
    rows, what, kernels = [], "", 0
    for line in lines[1:]:
        if line.startswith("whole CLI"):
            what, kernels = line.rstrip(":"), int(re.search(r"\((\d+) kernels", line).group(1))
        elif (match := TIMING.match(line)) and what:
            rows.append(
                {
                    "kind": "infer-time",
                    "what": what,
                    "kernels": kernels,
                    "wall_s": float(match.group(1)),
                    "cpu_s": float(match.group(2)),
                    "env": env,
                }
            )
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["--infer-time"] and len(argv) == 4:
        rows = infer_time_rows(Path(argv[1]), argv[2], argv[3])
    elif len(argv) == 1:
        rows = score_rows(Path(argv[0]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for row in rows:
        print(json.dumps(row, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

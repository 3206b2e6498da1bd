"""Scoring `infer` against captures with true configurations (NAME.csv.gz + NAME.truth.json).

Per field: exact-match rate; params_blocks counts as right within 1%. Held-out captures (the
corpus's every fourth entry) are scored apart from the development ones.
`python -m lmperf.pmc.accuracy FIXTURE_DIR OUT.md` writes the report's tables.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lmperf.pmc.corpus import corpus
from lmperf.pmc.infer import infer_file
from lmperf.pmc.result import FIELDS
from lmperf.report import tables

PARAMS_TOLERANCE = 0.01


def correct(field: str, predicted, truth) -> bool:
    if field in ("params_blocks", "params_total") and predicted and truth:
        return abs(predicted - truth) / truth <= PARAMS_TOLERANCE
    return predicted == truth


def held_out_names() -> set[str]:
    return {name for name, _, held in corpus() if held}


def score_dir(directory: Path) -> list[dict]:
    """One row per capture with a truth file: its name, split and right/wrong per field."""
    held = held_out_names()
    rows = []
    for truth_path in sorted(Path(directory).glob("*.truth.json")):
        name = truth_path.name.removesuffix(".truth.json")
        truth = json.loads(truth_path.read_text(encoding="utf-8"))
        values = infer_file(truth_path.with_name(f"{name}.csv.gz")).values
        row = dict(name=name, split="held-out" if name in held else "dev")
        row.update({f: correct(f, values[f], truth.get(f)) for f in FIELDS})
        row["wrong"] = ", ".join(f"{f}={values[f]} (true {truth.get(f)})"
                                 for f in FIELDS if not row[f])
        rows.append(row)
    return rows


def field_rates(rows: list[dict]) -> list[dict]:
    """Per field and split: the share of captures inferred right."""
    out = []
    for field in FIELDS:
        rate = {"field": field}
        for split in ("held-out", "dev"):
            part = [r[field] for r in rows if r["split"] == split]
            rate[split] = sum(part) / len(part) if part else None
            rate[f"{split} n"] = len(part)
        out.append(rate)
    return out


RATE_COLUMNS = [("field", "field", ""), ("held-out exact", "held-out", ".0%"),
                ("held-out n", "held-out n", "d"), ("dev exact", "dev", ".0%"), ("dev n", "dev n", "d")]
CAPTURE_COLUMNS = [("capture", "name", ""), ("split", "split", ""), ("wrong fields", "wrong", "")]


def environment_lines(directory: Path) -> str:
    """Where the captures were taken (the collect run's environment.json), as Markdown lines."""
    path = Path(directory) / "environment.json"
    if not path.is_file():
        return ""
    env = json.loads(path.read_text(encoding="utf-8"))
    return "".join(f"- {key}: {env[key]}\n" for key in ("device", "driver", "cuda", "torch",
                                                        "triton", "date") if key in env) + "\n"


def main(argv: list[str]) -> None:
    rows = score_dir(Path(argv[0]))
    text = (environment_lines(Path(argv[0])) + tables.markdown(field_rates(rows), RATE_COLUMNS)
            + "\n" + tables.markdown(rows, CAPTURE_COLUMNS))
    Path(argv[1]).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])

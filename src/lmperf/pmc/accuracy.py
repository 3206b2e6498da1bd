"""Scoring `infer` against captures with true configurations (NAME.csv.gz + NAME.truth.json).

Per field: exact-match rate; parameter counts count as right within 1%; the vocabulary also as
"exact or in its interval". Held-out captures (the first corpus's every fourth entry, the sweep's
seeded third) are scored apart from the development ones, and every attention path on its own.
`python -m lmperf.pmc.accuracy FIXTURE_DIR OUT.md [--with-generate]` writes the report's tables,
headed by every collect call's environment, with a table per kind of run (eager, compiled,
max-autotune, CUDA graphs, Liger, fused loss).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lmperf.pmc.corpus import corpus
from lmperf.pmc.infer import infer_file
from lmperf.pmc.result import FIELDS
from lmperf.pmc.targets import OLD_ATTENTION_NAMES
from lmperf.report import tables

# The structural fields: each exact on >= 95% of held-out captures.
STRUCTURE = (
    "mode",
    "dtype",
    "batch",
    "seq_len",
    "n_layers",
    "d_model",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "d_ff",
    "mlp",
)
VOCAB_BOUNDED = "vocab exact or in interval"
PARAMS_BOUNDED = "params_total within 1% or in interval"
PARAMS_TOLERANCE = 0.01


def correct(field: str, predicted, truth) -> bool:
    if field in ("params_blocks", "params_total") and predicted and truth:
        return abs(predicted - truth) / truth <= PARAMS_TOLERANCE
    return predicted == truth


def held_out_names() -> set[str]:
    return {name for name, _, held in corpus() if held}


def attention_path(truth: dict) -> str:
    """The attention path that ran: naive, triton, sdpa (PyTorch's pick) or the pinned backend."""
    backend = truth.get("sdpa_backend")
    attention = OLD_ATTENTION_NAMES.get(truth.get("attention"), truth.get("attention", "?"))
    return f"sdpa:{backend.removesuffix('_attention')}" if backend else attention


def run_kind(truth: dict) -> str:
    """How the captured step ran: eager, compiled in one of torch.compile's modes, replayed as CUDA
    graphs, with Liger-Kernel's kernels or lmperf's fused loss; or under a serving limit (padded
    requests, a draft model, quantised weights, a tensor-parallel rank)."""
    if truth.get("padding"):
        return "padded"
    if truth.get("speculative"):
        return "speculative"
    if truth.get("quantization"):
        return f"{truth['quantization']['scheme']} weights"
    if truth.get("tensor_parallel", 1) > 1:
        return "TP rank (NCCL)" if truth.get("tp_nccl") else "TP rank (emulated)"
    if truth.get("kernels") == "liger":
        return "Liger"
    if truth.get("static_cache") or truth.get("compile") == "reduce-overhead":
        return "CUDA graphs"
    if truth.get("compile") == "max-autotune-no-cudagraphs":
        return "max-autotune"
    if truth.get("compile"):
        return "compiled"
    return "fused loss" if truth.get("loss") == "fused" else "eager"


def score_dir(directory: Path, with_generate: bool = False) -> list[dict]:
    """One row per forward or training capture with a truth file: its name, split, attention
    path, kind of run and right/wrong per field (generate captures are scored on their own
    unless `with_generate`: their structure is the prefill's, their seq_len the prompt's)."""
    held = held_out_names()
    rows = []
    for truth_path in sorted(Path(directory).glob("*.truth.json")):
        name = truth_path.name.removesuffix(".truth.json")
        truth = json.loads(truth_path.read_text(encoding="utf-8"))
        if truth.get("mode") == "generate" and not with_generate:
            continue
        result = infer_file(truth_path.with_name(f"{name}.csv.gz"))
        values = result.values
        row = dict(
            name=name, split="held-out" if name in held else "dev", path=attention_path(truth), kind=run_kind(truth)
        )
        row.update({f: correct(f, values[f], truth.get(f)) for f in FIELDS})
        row[VOCAB_BOUNDED] = row["vocab_size"] or _in_interval(result, "vocab_size", truth["vocab_size"], 0.0)
        row[PARAMS_BOUNDED] = row["params_total"] or _in_interval(
            result, "params_total", truth["params_total"], PARAMS_TOLERANCE
        )
        row["structure"] = all(row[f] for f in STRUCTURE)
        row["wrong"] = ", ".join(f"{f}={_shown(result, f)} (true {truth.get(f)})" for f in FIELDS if not row[f])
        rows.append(row)
    return rows


def _in_interval(result, field: str, truth: int, tolerance: float) -> bool:
    """Whether `truth` lies in the field's interval, within `tolerance` at its ends (an interval
    open above has no upper end)."""
    if field not in result.intervals:
        return False
    return interval_holds(*result.intervals[field], truth, tolerance)


def interval_holds(low: int, high: int | None, truth: int, tolerance: float) -> bool:
    """Whether [low, high] holds `truth` within `tolerance` at its ends (`high` None: open above)."""
    return low <= truth * (1 + tolerance) and (high is None or truth <= high * (1 + tolerance))


def _shown(result, field: str) -> str:
    if field in result.intervals:
        low, high = result.intervals[field]
        return f"[{low}, {'?' if high is None else high}]"
    return str(result.values[field])


def field_rates(rows: list[dict]) -> list[dict]:
    """Per field and split: the share of captures inferred right."""
    out = []
    for field in (*FIELDS, VOCAB_BOUNDED, PARAMS_BOUNDED, "structure"):
        rate = {"field": field}
        for split in ("held-out", "dev"):
            part = [r[field] for r in rows if r["split"] == split]
            rate[split] = sum(part) / len(part) if part else None
            rate[f"{split} n"] = len(part)
        out.append(rate)
    return out


def path_rates(rows: list[dict], key: str = "path") -> list[dict]:
    """Per attention path (or kind of run, `key="kind"`): captures, and the share with every
    structural field right and with the vocabulary exact."""
    groups = sorted({r[key] for r in rows})
    out = []
    for group in groups:
        part = [r for r in rows if r[key] == group]
        out.append(
            {
                key: group,
                "n": len(part),
                "structure": sum(r["structure"] for r in part) / len(part),
                "vocab exact": sum(r["vocab_size"] for r in part) / len(part),
            }
        )
    return out


RATE_COLUMNS = [
    ("field", "field", ""),
    ("held-out exact", "held-out", ".0%"),
    ("held-out n", "held-out n", "d"),
    ("dev exact", "dev", ".0%"),
    ("dev n", "dev n", "d"),
]
CAPTURE_COLUMNS = [
    ("capture", "name", ""),
    ("split", "split", ""),
    ("attention", "path", ""),
    ("run", "kind", ""),
    ("wrong fields", "wrong", ""),
]
PATH_COLUMNS = [
    ("attention path", "path", ""),
    ("captures", "n", "d"),
    ("all structural fields exact", "structure", ".0%"),
    ("vocab exact", "vocab exact", ".0%"),
]
KIND_COLUMNS = [("run", "kind", ""), *PATH_COLUMNS[1:]]


def environment_lines(directory: Path) -> str:
    """Where the captures were taken, one line per collect call (its environment*.json), as
    Markdown lines."""
    lines = []
    for path in sorted(Path(directory).glob("environment*.json")):
        env = json.loads(path.read_text(encoding="utf-8"))
        lines.append(
            f"- {path.name}: "
            + ", ".join(
                f"{key} {env[key]}"
                for key in ("device", "driver", "cuda", "torch", "triton", "transformers", "commit", "date")
                if key in env
            )
            + "\n"
        )
    return "".join(lines) + "\n" if lines else ""


USAGE = "usage: python -m lmperf.pmc.accuracy CAPTURE_DIR OUT.md [--with-generate]"


def main(argv: list[str]) -> int:
    with_generate = "--with-generate" in argv
    argv = [a for a in argv if a != "--with-generate"]
    problem = None
    if len(argv) != 2:
        problem = USAGE
    elif not Path(argv[0]).is_dir() or not any(Path(argv[0]).glob("*.truth.json")):
        problem = f"no captures with their truth files in {argv[0]}"
    elif not Path(argv[1]).resolve().parent.is_dir():
        problem = f"no folder for the score file: {Path(argv[1]).parent}"
    if problem:
        print(f"lmperf.pmc.accuracy: {problem}", file=sys.stderr)
        return 2
    rows = score_dir(Path(argv[0]), with_generate)
    text = (
        environment_lines(Path(argv[0]))
        + tables.markdown(field_rates(rows), RATE_COLUMNS)
        + "\n"
        + tables.markdown(path_rates(rows), PATH_COLUMNS)
        + "\n"
        + tables.markdown(path_rates(rows, "kind"), KIND_COLUMNS)
        + "\n"
        + tables.markdown(rows, CAPTURE_COLUMNS)
    )
    Path(argv[1]).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

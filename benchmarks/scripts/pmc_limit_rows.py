"""Rows for benchmarks/rows/pmc-accuracy.jsonl.gz from the limit captures of issue 48
(tests/pmc/fixtures/limits): one row per capture with its claim (lmperf.pmc.limits), whether the
inference code on PYTHONPATH holds it, where not, how it breaks, and which structural fields that
code reads right, wrong or not at all. Run it once with the capture commit's code (a worktree of
that commit first on PYTHONPATH) and once with the current code; append each as its own set:

    python benchmarks/scripts/pmc_limit_rows.py COMMIT > /tmp/limits.jsonl
    python benchmarks/rows.py add pmc-accuracy limits-COMMIT /tmp/limits.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lmperf.pmc.accuracy import STRUCTURE
from lmperf.pmc.infer import infer_file
from lmperf.pmc.limits import LIMIT_CLAIMS, broken_claims

LIMITS = Path(__file__).resolve().parents[2] / "tests" / "pmc" / "fixtures" / "limits"
FIELDS = (*STRUCTURE, "vocab_size")


def environments() -> dict[str, dict]:
    """Each capture's environment (GPU, versions, capture commit and date), by capture name."""
    envs = {}
    for log_env in sorted(LIMITS.glob("environment-*.json")):
        env = json.loads(log_env.read_text(encoding="utf-8"))
        envs[env["commit"]] = env
    named = {}
    for line in (LIMITS / "collect_log-m.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry["status"].startswith("ok"):
            named[entry["name"]] = entry["seconds"]
    return {"by_commit": envs, "seconds": named}


def rows(commit: str) -> list[dict]:
    envs = environments()
    out = []
    for name, claim in LIMIT_CLAIMS.items():
        capture = LIMITS / f"{name}.csv.gz"
        if not capture.exists():
            continue
        truth = json.loads(capture.with_name(f"{name}.truth.json").read_text(encoding="utf-8"))
        result = infer_file(capture)
        values = result.values
        broken = broken_claims(claim, values, truth, result.assumptions)
        out.append(
            {
                "kind": "limit",
                "capture": name,
                "limit": claim.limit,
                "verdict": claim.verdict,
                "claim_held": not broken,
                "broken": broken,
                "right": [f for f in FIELDS if values.get(f) is not None and values.get(f) == truth.get(f)],
                "wrong": {
                    f: {"read": values.get(f), "true": truth.get(f)}
                    for f in FIELDS
                    if values.get(f) is not None and values.get(f) != truth.get(f)
                },
                "undetermined": [f for f in FIELDS if values.get(f) is None],
                "capture_seconds": envs["seconds"].get(name),
                "env": {"commit": commit, "captures": list(envs["by_commit"].values())},
            }
        )
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: pmc_limit_rows.py COMMIT (the commit whose inference code is on PYTHONPATH)", file=sys.stderr)
        return 2
    for row in rows(argv[0]):
        print(json.dumps(row, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

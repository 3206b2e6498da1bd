"""The committed captures: real ncu raw CSVs from an H100 with the configurations that ran."""

import json
from pathlib import Path


FIXTURES = Path(__file__).parent / "fixtures"
MODEL_CAPTURES = sorted(p.name.removesuffix(".truth.json") for p in FIXTURES.glob("*.truth.json"))


def truth(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.truth.json").read_text())

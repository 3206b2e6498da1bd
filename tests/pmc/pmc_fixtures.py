"""The committed captures: real ncu raw CSVs from an H100 with the configurations that ran."""

import functools
import json
from pathlib import Path

from lmperf.pmc.parse import Capture, read_capture


FIXTURES = Path(__file__).parent / "fixtures"
MODEL_CAPTURES = sorted(p.name.removesuffix(".truth.json") for p in FIXTURES.glob("*.truth.json"))


def _held_out() -> set[str]:
    from lmperf.pmc.corpus import corpus

    return {name for name, _, held in corpus() if held}


# Issue 12's sweep: heads that are no power of two, GQA ratios, odd lengths, every attention path
# (forward and training captures; generate captures start with "g_").
SWEEP = FIXTURES / "sweep"
SWEEP_CAPTURES = sorted(
    p.name.removesuffix(".truth.json")
    for p in SWEEP.glob("s_*.truth.json")
    if p.name.removesuffix(".truth.json") not in _held_out()
)
GENERATE_CAPTURES = sorted(p.name.removesuffix(".truth.json") for p in SWEEP.glob("g_*.truth.json"))

# Issue 48's runs as served and trained in earnest (compiled, CUDA graphs, Liger, fused loss): the
# development set `r_*`, and the blind batches scored once by the protocol (x_, y_, z_, ...).
SERVED = FIXTURES / "served"
SERVED_CAPTURES = sorted(
    p.name.removesuffix(".truth.json")
    for p in SERVED.glob("*.truth.json")
    if json.loads(p.read_text())["mode"] != "generate"
)
SERVED_GENERATE = sorted(
    p.name.removesuffix(".truth.json")
    for p in SERVED.glob("*.truth.json")
    if json.loads(p.read_text())["mode"] == "generate"
)


def capture_path(name: str) -> Path:
    """NAME.csv.gz of a committed capture: the served runs (every blind batch in that folder,
    whatever its letter), the sweep (s_, g_ and the blind batches b_, c_, d_, e_) or the first
    corpus."""
    if (SERVED / f"{name}.csv.gz").exists():
        return SERVED / f"{name}.csv.gz"
    return (
        SWEEP / f"{name}.csv.gz"
        if name.startswith(("s_", "g_", "b_", "c_", "d_", "e_"))
        else FIXTURES / f"{name}.csv.gz"
    )


def truth(name: str) -> dict:
    return json.loads(capture_path(name).with_name(f"{name}.truth.json").read_text())


@functools.cache
def parsed(name: str) -> Capture:
    """The committed capture NAME as `read_capture` parses it, once per process: the cut tests read
    most captures in several tests, and no test changes one (a cut or an edit is a copy made with
    dataclasses.replace)."""
    return read_capture(capture_path(name))

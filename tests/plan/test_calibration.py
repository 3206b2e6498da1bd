"""The built-in calibration is what `lmperf plan-check` fits to the committed 4 x H200 rows
(docs/plan.md): the collectives to the four-GPU comm run, the overlaps to the one-, two- and
four-GPU steps."""

from pathlib import Path

import pytest

from lmperf.plan.calibration import H200_NVLINK, OVERLAP
from lmperf.plan.check import fitted_overlaps, pair_rows
from lmperf.plan.collectives import Network, fit_links
from lmperf.plan.inputs import rows_at

ROWS = Path(__file__).parents[2] / "benchmarks" / "rows" / "distributed-h200x4.jsonl"
STEPS = ("b27-1", "b27-2", "b27-4", "b8-1", "b8-2", "b8-4")


def test_the_built_in_lines_are_the_fit_of_the_committed_comm_rows():
    fitted = fit_links(rows_at(f"{ROWS}:comm4"), "comm4")
    assert (fitted.device, fitted.nproc) == (H200_NVLINK.device, H200_NVLINK.nproc)
    for op, line in H200_NVLINK.lines.items():
        assert line.alpha_s == pytest.approx(fitted.lines[op].alpha_s, abs=0.05e-6)  # rounded to 0.1 us
        assert line.busbw == pytest.approx(fitted.lines[op].busbw, abs=0.05e9)  # and 0.1 GB/s


def test_the_built_in_overlaps_are_the_fit_of_the_committed_steps():
    rows = [row for run in STEPS for row in rows_at(f"{ROWS}:{run}")]
    pairs, unpaired = pair_rows(rows)
    assert (len(pairs), unpaired) == (6, [])  # 2.7B DDP and FSDP2 on 2 and 4 GPUs, the 8B on 2 and 4
    fitted = fitted_overlaps(pairs, Network(H200_NVLINK))
    assert fitted == {strategy: pytest.approx(value, abs=0.005) for strategy, value in OVERLAP.items()}

"""The model beside measured steps: pairing rows, fitting the overlap, leave-one-out errors."""

import pytest

from lmperf.plan.check import Pair, check, fit_overlap, fitted_overlaps, modelled_comm_s, pair_rows
from lmperf.plan.collectives import Line, Links, Network

NETWORK = Network(Links({"all-reduce": Line(0.0, 500e9)}, "GPU", "hand", (2,)))


def _row(seq_len, nproc, mean_ms, strategy="ddp", status="ok"):
    return {
        "preset": "small",
        "seq_len": seq_len,
        "mode": "train-step",
        "precision": "bf16",
        "compile": "eager",
        "attention": "naive",
        "batch": 4,
        "status": status,
        "nproc": nproc,
        "mean_ms": mean_ms,
        "strategy": strategy,
        "bucket_mb": 25.0 if strategy == "ddp" else None,
    }


def _comm_ms(seq_len):
    return modelled_comm_s(Pair(_row(seq_len, 2, 0), _row(seq_len, 1, 0, "none")), NETWORK) * 1e3


def _rows(overlaps):
    """A one-GPU step of 100 ms per context and a two-GPU DDP step paying (1 - overlap) of its comm."""
    rows = []
    for seq_len, overlap in overlaps.items():
        rows += [_row(seq_len, 1, 100.0, "none"), _row(seq_len, 2, 100.0 + (1 - overlap) * _comm_ms(seq_len))]
    return rows


def test_rows_pair_by_configuration_and_the_rest_are_named():
    rows = _rows({16: 0.4, 32: 0.4}) + [_row(64, 2, 120.0), _row(16, 2, 1.0, status="oom")]
    pairs, unpaired = pair_rows(rows)
    assert [(p.multi["seq_len"], p.single["seq_len"], p.single["nproc"]) for p in pairs] == [(16, 16, 1), (32, 32, 1)]
    assert [r["seq_len"] for r in unpaired] == [64]  # no one-GPU row at 64; the oom row is left out


def test_the_fit_recovers_the_overlap_the_rows_were_made_with():
    pairs, _ = pair_rows(_rows({16: 0.4, 32: 0.4, 64: 0.4}))
    assert fit_overlap(pairs, NETWORK) == pytest.approx(0.4)
    assert fitted_overlaps(pairs, NETWORK) == {"ddp": pytest.approx(0.4), "fsdp": None}


def test_a_step_that_pays_more_than_its_communication_fits_no_overlap():
    pairs, _ = pair_rows([_row(16, 1, 100.0, "none"), _row(16, 2, 100.0 + 3 * _comm_ms(16))])
    assert fit_overlap(pairs, NETWORK) == 0.0


def test_each_row_is_predicted_from_the_others():
    # Two rows made at overlap 0.4, one at 0.1. DDP's communication does not change with the
    # context, so a fit to two rows pays the mean of their shares: the 0.1 row is predicted with
    # 0.4 (pays 0.6 of comm instead of 0.9), each 0.4 row with (0.6 + 0.9) / 2 = 0.75: overlap 0.25.
    comm = _comm_ms(16)
    assert _comm_ms(32) == _comm_ms(64) == comm
    pairs, _ = pair_rows(_rows({16: 0.4, 32: 0.4, 64: 0.1}))
    rows = check(pairs, NETWORK)
    odd = rows[2]
    assert odd.overlap == pytest.approx(0.4) and odd.extra_ms == pytest.approx(0.9 * comm)
    assert odd.predicted_ms == pytest.approx(100.0 + 0.6 * comm)
    assert odd.relative_error == pytest.approx((100.0 + 0.6 * comm) / (100.0 + 0.9 * comm) - 1)
    assert rows[0].overlap == pytest.approx(0.25)
    assert rows[0].relative_error == pytest.approx((100.0 + 0.75 * comm) / (100.0 + 0.6 * comm) - 1)


def test_a_lone_pair_has_no_others_to_fit_and_no_prediction():
    pairs, _ = pair_rows(_rows({16: 0.4}))
    row = check(pairs, NETWORK)[0]
    assert row.overlap is None and row.predicted_ms is None and row.relative_error is None

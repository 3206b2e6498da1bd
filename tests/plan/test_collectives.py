"""The alpha-beta collective model: ring and hierarchical times by hand, and the fit."""

import pytest

from lmperf.errors import UsageError
from lmperf.plan.collectives import Line, Links, Network, fit_line, fit_links

US, GB = 1e-6, 1e9
LINE = Line(alpha_s=10 * US, busbw=100 * GB)  # 10 us, 100 GB/s


def test_all_reduce_of_1_gb_on_4_gpus():
    # 10 us + 2*3/4 * 1e9 B / 100e9 B/s = 10e-6 + 0.015 s
    assert LINE.seconds("all-reduce", 1e9, 4) == pytest.approx(0.01501)


@pytest.mark.parametrize("op", ["all-gather", "reduce-scatter"])
def test_gather_and_scatter_move_n_minus_1_over_n(op):
    # 10 us + 7/8 * 1e9 / 100e9 s = 10e-6 + 0.00875 s
    assert LINE.seconds(op, 1e9, 8) == pytest.approx(0.00876)


def test_one_gpu_communicates_nothing():
    assert LINE.seconds("all-reduce", 1e9, 1) == 0.0


def _network(gpus_per_node=8, inter=50.0):
    lines = {op: LINE for op in ("all-reduce", "all-gather", "reduce-scatter")}
    return Network(Links(lines, "GPU", "hand", (2,)), gpus_per_node, inter)


def test_inside_a_node_the_ring_spans_the_gpus_asked_for():
    # 4 GPUs of a node of 8: a ring of 4, 10 us + 3/4 * 1e9 / 100e9
    assert _network().seconds("all-gather", 1e9, 4) == pytest.approx(10 * US + 0.0075)


def test_all_gather_across_two_nodes_is_the_node_ring_then_the_network_ring():
    # node: 10 us + 7/8 * 1e9 / 100e9 = 0.00876 s
    # nodes: 10 us + 1/2 * (1e9 / 8) / 50e9 = 10e-6 + 0.00125 = 0.00126 s
    assert _network().seconds("all-gather", 1e9, 16) == pytest.approx(0.00876 + 0.00126)


def test_all_reduce_across_four_nodes():
    # node: 10 us + 2*7/8 * 1e9 / 100e9 = 0.01751 s
    # nodes: 10 us + 2*3/4 * (1e9 / 8) / 50e9 = 10e-6 + 0.00375 = 0.00376 s
    assert _network().seconds("all-reduce", 1e9, 32) == pytest.approx(0.01751 + 0.00376)


def test_one_gpu_per_node_is_the_network_ring_alone():
    # 10 us + 2*3/4 * 1e9 / 50e9 = 10e-6 + 0.03
    assert _network(gpus_per_node=1).seconds("all-reduce", 1e9, 4) == pytest.approx(0.03001)


@pytest.mark.parametrize("n", [0, -8, 12, 20])
def test_counts_that_are_not_gpus_or_whole_nodes_are_refused(n):
    with pytest.raises(UsageError):
        _network().nodes(n)


def _comm_rows(alpha_s, busbw, nproc, ops=("all-reduce", "all-gather", "reduce-scatter")):
    """Rows as `lmperf comm` writes them, timed exactly by the line."""
    factor = {"all-reduce": 2 * (nproc - 1) / nproc}
    return [
        {
            "op": op,
            "size_bytes": size,
            "nproc": nproc,
            "status": "ok",
            "env": {"device": "GPU"},
            "mean_us": (alpha_s + factor.get(op, (nproc - 1) / nproc) * size / busbw) * 1e6,
        }
        for op in ops
        for size in (2**20, 2**24, 2**30)
    ]


@pytest.mark.parametrize("nproc", [2, 4])
def test_the_fit_recovers_alpha_and_bandwidth(nproc):
    links = fit_links(_comm_rows(20 * US, 200 * GB, nproc), "synthetic")
    for line in links.lines.values():
        assert line.alpha_s == pytest.approx(20 * US, rel=1e-9)
        assert line.busbw == pytest.approx(200 * GB, rel=1e-9)
    assert links.nproc == (nproc,) and links.device == "GPU"


def test_rows_of_two_process_counts_fit_one_line():
    links = fit_links(_comm_rows(20 * US, 200 * GB, 2) + _comm_rows(20 * US, 200 * GB, 8), "synthetic")
    assert links.lines["all-gather"].busbw == pytest.approx(200 * GB, rel=1e-9)


def test_a_negative_intercept_is_refitted_through_zero():
    # t = x / 1e11 - 5 us at x = 1 MB and 100 MB: the line through them crosses below zero
    line = fit_line([(1e6, 1e6 / 1e11 - 5e-6), (1e8, 1e8 / 1e11 - 5e-6)])
    assert line.alpha_s == 0.0 and line.busbw > 0


def test_one_message_size_cannot_be_fitted():
    with pytest.raises(UsageError, match="two message sizes"):
        fit_line([(1e6, 1e-5), (1e6, 2e-5)])


def test_a_collective_the_rows_lack_is_refused_when_asked_for():
    links = fit_links(_comm_rows(20 * US, 200 * GB, 2, ops=("all-reduce",)), "only-all-reduce.jsonl")
    with pytest.raises(UsageError, match="only-all-reduce.jsonl.*no all-gather rows"):
        Network(links).seconds("all-gather", 1e9, 2)

"""Communication share, hidden and exposed time from kernel intervals of a profiler trace."""

import pytest

from lmperf.distributed import overlap


def test_interval_arithmetic():
    assert overlap.union([(5, 7), (0, 2), (1, 3)]) == [(0, 3), (5, 7)]
    assert overlap.length([(0, 2), (1, 3), (10, 11)]) == 4
    assert overlap.overlap_length([(0, 4), (6, 10)], [(2, 7), (9, 20)]) == 2 + 1 + 1
    assert overlap.overlap_length([(0, 1)], [(1, 2)]) == 0


def _event(name, start, duration, stream=7, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "ts": start, "dur": duration, "args": {"stream": stream}}


def _trace():
    # Two steps of 1000 us. Step 1: compute 0-600, NCCL 400-900 (200 hidden, 300 exposed).
    # Step 2: compute 1000-1800, NCCL 1100-1300 (all hidden). A kernel outside any step is ignored.
    return {
        "traceEvents": [
            _event("lmperf_step", 0, 1000, cat="user_annotation"),
            _event("lmperf_step", 1000, 1000, cat="user_annotation"),
            _event("ampere_sgemm_128x64", 0, 600),
            _event("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 400, 500, stream=20),
            _event("vectorized_elementwise_kernel", 1000, 800),
            _event("ncclKernel_ReduceScatter", 1100, 200, stream=20),
            _event("ncclDevKernel_Broadcast", 5000, 100, stream=20),
            {"ph": "i", "name": "marker", "ts": 10},
        ]
    }


def test_summary_splits_comm_into_hidden_and_exposed():
    kernels, steps = overlap.kernels_and_steps(_trace())
    assert steps == [(0, 1000), (1000, 2000)] and len(kernels) == 5
    summary = overlap.summarize(kernels, steps)
    assert summary.steps == 2 and summary.step_ms == pytest.approx(1.0)
    assert summary.comm_ms == pytest.approx((500 + 200) / 2 / 1e3)
    assert summary.hidden_ms == pytest.approx((200 + 200) / 2 / 1e3)
    assert summary.exposed_ms == pytest.approx(300 / 2 / 1e3)
    assert summary.exposed_share == pytest.approx(0.15)


def test_a_trace_without_step_marks_is_refused():
    with pytest.raises(ValueError):
        overlap.summarize([], [])


def test_timeline_png(tmp_path):
    kernels, steps = overlap.kernels_and_steps(_trace())
    path = tmp_path / "timeline.png"
    overlap.plot_timeline(kernels, steps[0], path, "one step")
    assert path.stat().st_size > 0

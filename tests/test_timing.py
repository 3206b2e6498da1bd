import statistics

import pytest
import torch

from lmperf.run.timing import Stats, time_steps


def test_stats_of_known_samples():
    stats = Stats.of([1.0, 2.0, 3.0, 10.0])
    assert stats.mean == 4.0
    assert stats.median == 2.5
    assert (stats.min, stats.max) == (1.0, 10.0)
    assert stats.std == pytest.approx(statistics.stdev([1.0, 2.0, 3.0, 10.0]))
    assert Stats.of([5.0]).std == 0.0


def test_stats_needs_samples():
    with pytest.raises(ValueError):
        Stats.of([])


class CountingStep:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1


@pytest.mark.parametrize("warmup, steps", [(0, 1), (0, 4), (1, 3), (5, 10)])
def test_time_steps_runs_warmup_plus_steps(warmup, steps):
    step = CountingStep()
    times = time_steps(step, warmup, steps, torch.device("cpu"))
    assert step.calls == warmup + steps
    assert len(times.measured_ms) == steps
    assert len(times.warmup_ms) == warmup
    assert all(t >= 0 for t in times.measured_ms)


def test_without_warmup_the_cold_step_is_measured():
    costs = iter([50.0] + [1.0] * 10)  # a slow first step, then fast ones

    def step():
        import time

        time.sleep(next(costs) / 1e3)

    times = time_steps(step, 0, 5, torch.device("cpu"))
    assert times.measured_ms[0] == times.cold_ms
    assert times.cold_ms > 40
    assert times.stats.max == times.cold_ms


def test_bad_counts_are_rejected():
    with pytest.raises(ValueError):
        time_steps(CountingStep(), -1, 3, torch.device("cpu"))
    with pytest.raises(ValueError):
        time_steps(CountingStep(), 1, 0, torch.device("cpu"))

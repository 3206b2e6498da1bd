import json
import statistics

import pytest
import torch

from lmperf.model.step import ModelStep
from lmperf.run.sweep import SweepSettings, grid, run_sweep
from lmperf.errors import UsageError
from lmperf.report.rundir import RunDir, read_rows

SETTINGS = SweepSettings(warmup=1, steps=2)


def tiny_grid(**overrides):
    spec = dict(
        presets=["tiny"],
        seq_lens=[16, 24],
        modes=["forward", "train-step"],
        precisions=["fp32"],
        compiles=["eager"],
        attentions=["naive"],
        batch=2,
    )
    spec.update(overrides)
    return grid(**spec)


def test_sweep_writes_one_ok_row_per_config(tmp_path):
    configs = tiny_grid()
    rows = run_sweep(configs, SETTINGS, RunDir.create("bench", tmp_path))
    assert len(rows) == len(configs) == 4
    for row in rows:
        assert row["status"] == "ok"
        assert row["mean_ms"] > 0 and row["tokens_per_s"] > 0 and row["tflops"] > 0
        assert row["env"]["torch"] == torch.__version__
        assert row["min_ms"] <= row["median_ms"] <= row["max_ms"]
        # the summary is of the steps the row lists, each one kept
        assert len(row["step_ms"]) == SETTINGS.steps
        assert row["mean_ms"] == pytest.approx(statistics.fmean(row["step_ms"]))
        assert row["median_ms"] == pytest.approx(statistics.median(row["step_ms"]))
        assert (row["min_ms"], row["max_ms"]) == (min(row["step_ms"]), max(row["step_ms"]))
        # a CPU has no caching allocator to report on: no figure rather than a made-up zero
        assert row["peak_memory_gb"] is row["peak_reserved_gb"] is row["alloc_retries"] is None


def test_only_a_train_step_runs_once_per_optimizer():
    """Forward and forward-backward never step the optimizer: 2 contexts x (1 forward + 2
    train-steps) configurations, the forward's with the first optimizer named."""
    configs = tiny_grid(optimizers=["lmperf", "torch"])
    assert sorted((c.seq_len, c.mode, c.optimizer) for c in configs) == [
        (16, "forward", "lmperf"),
        (16, "train-step", "lmperf"),
        (16, "train-step", "torch"),
        (24, "forward", "lmperf"),
        (24, "train-step", "lmperf"),
        (24, "train-step", "torch"),
    ]


def test_out_of_memory_becomes_a_row_and_the_sweep_goes_on(tmp_path):
    def make_step(config, device):
        if config.seq_len == 16:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 PiB")
        return ModelStep(config, device)

    rows = run_sweep(tiny_grid(), SETTINGS, RunDir.create("bench", tmp_path), make_step)
    assert [r["status"] for r in rows] == ["oom", "oom", "ok", "ok"]
    assert "out of memory" in rows[0]["error"]
    assert rows[0]["mean_ms"] is None


def test_oom_in_the_middle_of_a_step_releases_and_continues(tmp_path):
    class ExplodingStep(ModelStep):
        def run(self, mode):
            if mode == "train-step":
                raise torch.OutOfMemoryError("CUDA out of memory")
            super().run(mode)

    rows = run_sweep(tiny_grid(), SETTINGS, RunDir.create("bench", tmp_path), ExplodingStep)
    assert [r["status"] for r in rows] == ["ok", "oom", "ok", "oom"]


def test_interrupted_sweep_keeps_rows_and_resume_skips_them(tmp_path):
    configs = tiny_grid()
    run_dir = RunDir.create("bench", tmp_path)
    built = []

    def interrupting(config, device):
        if len(built) == 1:
            raise KeyboardInterrupt
        built.append(config)
        return ModelStep(config, device)

    with pytest.raises(KeyboardInterrupt):
        run_sweep(configs, SETTINGS, run_dir, interrupting)
    assert len(read_rows(run_dir.results)) == 2  # the first group's two modes

    again = []

    def counting(config, device):
        again.append(config)
        return ModelStep(config, device)

    run_dir.release()
    rows = run_sweep(configs, SETTINGS, RunDir.resume(run_dir.path, "bench"), counting)
    assert len(rows) == 4
    assert [c.seq_len for c in again] == [24]  # one group left, built once for both modes


def test_a_line_cut_short_by_a_crash_is_skipped(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"a": 1}) + "\n" + '{"a": 2, "b"')
    assert read_rows(path) == [{"a": 1}]


def test_resume_needs_a_results_file(tmp_path):
    with pytest.raises(UsageError, match="cannot resume"):
        RunDir.resume(tmp_path, "bench")


def test_grid_validates_before_running():
    with pytest.raises(UsageError, match="exceeds"):
        tiny_grid(seq_lens=[16, 5000])
    with pytest.raises(UsageError, match="unknown mode"):
        tiny_grid(modes=["inference"])
    with pytest.raises(UsageError, match="unknown precision"):
        tiny_grid(precisions=["fp8"])


def test_a_configuration_beyond_the_host_ram_is_an_oom_row_not_a_kill(tmp_path):
    configs = grid(["tiny"], [16], ["forward"], ["fp32"], ["eager"], ["naive"], 10**9)  # ~PB of activations
    built = []
    rows = run_sweep(configs, SETTINGS, RunDir.create("bench", tmp_path), lambda c, d: built.append(c))
    assert built == [] and rows[0]["status"] == "oom"
    assert "predicted, not run" in rows[0]["error"] and "host RAM" in rows[0]["error"]

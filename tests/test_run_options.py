"""The sweep options, declared once: a resume refusal names the flag a user types, defaults that
ran are recorded so restating them is no conflict, and every command's options are one set."""

import json
from pathlib import Path

import pytest

from lmperf.errors import UsageError
from lmperf.model.choice import ModelChoice
from lmperf.report.rundir import open_run_dir
from lmperf.run.options import SweepOptions, flag_of


def _recorded(tmp_path, options: SweepOptions):
    run_dir, _ = open_run_dir("bench", options.resolved(False).arguments(), root=tmp_path)
    run_dir.append({"preset": "tiny", "mode": "forward", "matmul_flops": 1.0, "status": "ok"})
    run_dir.release()
    return run_dir.path


def _refusal(path, options: SweepOptions, given: set[str]) -> str:
    with pytest.raises(UsageError) as error:
        open_run_dir("bench", options.resolved(False).arguments(), path, given=given, flag_of=flag_of)
    return str(error.value)


@pytest.mark.parametrize(
    "field, then, now, flag",
    [
        ("losses", "eager", "fused", "--loss"),
        ("param_dtypes", "fp32", "bf16", "--param-dtype"),
        ("checkpoints", "none", "full", "--checkpoint"),
        ("runs_root", None, None, None),  # not recorded: never refused
    ],
)
def test_a_resume_refusal_names_the_flag_as_typed(tmp_path, field, then, now, flag):
    if flag is None:
        path = _recorded(tmp_path, SweepOptions())
        open_run_dir("bench", SweepOptions().resolved(False).arguments(), path, given={field}, flag_of=flag_of)
        return
    path = _recorded(tmp_path, SweepOptions(**{field: then}))
    message = _refusal(path, SweepOptions(**{field: now}), {field})
    assert f"was made with {flag} {then}, not {flag} {now}; resume it without {flag}," in message


def test_a_model_flag_is_named_as_typed_not_as_a_dict(tmp_path):
    layers = lambda n: SweepOptions(model=ModelChoice.from_options(None, n_layers=n))  # noqa: E731
    path = _recorded(tmp_path, layers(2))
    assert "was made with --layers 2, not --layers 3" in _refusal(path, layers(3), {"model"})
    plain = _recorded(tmp_path / "plain", SweepOptions())
    assert "was made with --layers left out, not --layers 3" in _refusal(plain, layers(3), {"model"})
    hf = SweepOptions(model=ModelChoice("benchmarks/configs/gpt2.json"))
    absolute = Path("benchmarks/configs/gpt2.json").resolve()  # recorded absolute: a resume may start elsewhere
    assert f"--hf-config left out, not --hf-config {absolute}" in _refusal(plain, hf, {"model"})


def test_restating_a_default_that_ran_is_accepted(tmp_path):
    path = _recorded(tmp_path, SweepOptions())  # defaults on a CPU: tiny, 128, fp32
    restated = SweepOptions(presets="tiny", contexts="128", precisions="fp32")
    _, arguments = open_run_dir(
        "bench",
        restated.resolved(False).arguments(),
        path,
        given={"presets", "contexts", "precisions"},
        flag_of=flag_of,
    )
    assert (arguments["presets"], arguments["contexts"], arguments["precisions"]) == ("tiny", "128", "fp32")
    assert "--presets tiny, not --presets small" in _refusal(path, SweepOptions(presets="small"), {"presets"})


def test_recorded_options_come_back_through_json(tmp_path):
    options = SweepOptions(
        "tiny",
        "16",
        steps=3,
        device="cpu",
        losses="fused",
        model=ModelChoice.from_options(None, d_model=64, n_layers=1),
    )
    recorded = json.loads(json.dumps(options.arguments()))
    assert SweepOptions().with_arguments(recorded) == options


def test_commands_that_take_a_model_declare_the_same_model_flags():
    from typer.main import get_command

    from lmperf.cli import app

    click_app = get_command(app)
    model_flags = {
        "--hf-config",
        "--d-model",
        "--d-ff",
        "--layers",
        "--heads",
        "--kv-heads",
        "--head-dim",
        "--vocab",
        "--max-context",
        "--tie-embeddings",
        "--mlp",
        "--qk-norm",
    }
    for name in ("bench", "bench-dist", "profile", "memory", "precision"):
        flags = {opt for param in click_app.commands[name].params for opt in param.opts}
        assert model_flags <= flags, (name, model_flags - flags)

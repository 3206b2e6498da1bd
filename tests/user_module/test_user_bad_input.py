"""A factory that cannot be imported, raises, returns something else than a module, or whose
output is not logits gets one line naming the problem and exit status 2; when the user's code
raised, its traceback comes once, above that line, with lmperf's and torch's frames left out."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

import lmperf
from lmperf.cli import app
from scratch_model import BAD, SCRATCH

RUN = ["--device", "cpu", "--steps", "1", "--warmup", "0", "-t", "8", "--modes", "forward"]
MARK = "Traceback from your module's code"
# lmperf's own frames are those under its package folder (a clone may itself sit in a folder
# named lmperf, as `git clone` names it, so the name alone does not tell them apart)
PACKAGE = str(Path(lmperf.__file__).resolve().parent)
CASES = [
    (["--module", "no_such_package.models:build"], "cannot import no_such_package.models"),
    (["--module", str(BAD.with_name("missing.py")) + ":build"], "no file"),
    (["--module", "build_a_model"], "--module takes PKG.MOD:FACTORY or path/to/file.py:FACTORY"),
    (["--module", f"{BAD}:no_factory"], "has no 'no_factory'"),
    (["--module", f"{BAD}:not_a_module"], "returned an object of type int, not a torch.nn.Module"),
    (
        ["--module", f"{BAD}:wrong_output"],
        "to a tensor of shape (2, 16); lmperf needs logits (batch 2, context 8, vocab)",
    ),
    (["--module", f"{BAD}:biased_head", "--loss", "fused"], "--loss fused needs bad_factories:biased_head's output"),
    (["--module", SCRATCH, "--module-args", "[1, 2]"], "--module-args takes a JSON object"),
    (["--module", SCRATCH, "--module-args", "{d_model: 8}"], "--module-args is not JSON"),
    (["--module-args", "{}"], "--module-args goes with --module"),
    (["--module", SCRATCH, "--d-model", "64"], "pass its sizes in --module-args"),
    (["--module", SCRATCH, "-p", "tiny"], "by presets or by --module, not both"),
    (["--module", SCRATCH, "--attention", "sdpa"], "a --module model brings its own"),
]
RAISING = [
    (
        ["--module", f"{BAD}:raises"],
        "bad_factories.py:raises raised ValueError: width must be positive, got -1",
        ["in raises", "in _check_width"],
    ),
    (
        ["--module", SCRATCH, "--module-args", '{"layers": 3}'],
        "raised TypeError: build() got an unexpected keyword argument 'layers'",
        [],
    ),
    (
        ["--module", f"{BAD}:fails_late", "-t", "8,32"],
        "fails_late's forward at context 32 raised AssertionError: context 32 is longer than 16",
        ["in forward"],
    ),
]


def _one_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("lmperf: error: ")
    return last


@pytest.mark.parametrize("command", ["bench", "profile"])
@pytest.mark.parametrize("args, message", CASES, ids=[c[1][:30] for c in CASES])
def test_bad_module_is_one_line_and_exit_2(command, args, message, tmp_path):
    if command == "profile" and "--loss" in args:
        pytest.skip("profile has no --loss")
    result = CliRunner().invoke(app, [command, *args, *RUN, "--runs", str(tmp_path)])
    assert message in _one_line(result)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not list(tmp_path.iterdir())  # refused before a run directory was made


@pytest.mark.parametrize("args, message, frames", RAISING, ids=["factory", "arguments", "forward"])
def test_the_users_traceback_comes_once_above_the_line(args, message, frames, tmp_path):
    result = CliRunner().invoke(app, ["bench", *RUN, *args, "--runs", str(tmp_path)])  # a later -t wins
    assert message in _one_line(result)
    assert result.stderr.count(MARK) == 1 and result.stderr.index(MARK) < result.stderr.index("lmperf: error:")
    assert "Traceback (most recent call last)" not in result.stderr
    assert PACKAGE not in result.stderr.split("lmperf: error:")[0]  # only the user's frames
    for frame in frames:
        assert frame in result.stderr


def test_memory_and_precision_refuse_the_same_way(tmp_path):
    for command in (["memory", "-t", "8", "--runs", str(tmp_path)], ["precision", "--device", "cpu"]):
        result = CliRunner().invoke(app, [*command, "--module", f"{BAD}:wrong_output"])
        assert "lmperf needs logits" in _one_line(result)

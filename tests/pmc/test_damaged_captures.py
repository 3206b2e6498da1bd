"""Damaged captures are reported, never read as confident answers; explain flags impossible residuals."""

import csv
import io

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.errors import UsageError
from lmperf.pmc import explain as ex
from lmperf.pmc.infer import infer
from lmperf.pmc.parse import TENSOR_PATHS, parse_text, read_capture, read_text

from pmc_fixtures import FIXTURES

FORWARD = FIXTURES / "lmperf_small_l2_fwd.csv.gz"  # bf16, ends with its loss kernels
GPT2 = FIXTURES / "gpt2_l2_d1024.csv.gz"  # fp32, ends with its LM head


def _table(path):
    text = read_text(path)
    start = text.index('"ID",')
    return [row for row in csv.reader(io.StringIO(text[start:])) if row]


def _text(rows):
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue()


def test_a_copy_cut_mid_row_is_an_error_not_an_answer():
    text = read_text(FORWARD)
    cut = text[: text.rstrip("\n").rindex("\n") + 300]  # the last kernel row, 300 characters of it
    with pytest.raises(
        UsageError, match=r"the last row of the ncu table has \d+ of \d+ fields \(the file was cut off\)"
    ):
        parse_text(cut, "cut.csv")


def test_a_short_row_in_the_middle_is_an_error():
    rows = _table(FORWARD)
    rows[10] = rows[10][:5]
    with pytest.raises(UsageError, match="row 10 of the ncu table has 5 of"):  # the units row counts
        parse_text(_text(rows))


def test_a_row_with_extra_fields_is_an_error():
    rows = _table(FORWARD)
    rows[10] = rows[10] + ["1", "2"]
    with pytest.raises(UsageError, match=f"row 10 of the ncu table has {len(rows[0]) + 2} of {len(rows[0])} fields"):
        parse_text(_text(rows))


@pytest.mark.parametrize("column", ["Kernel Name", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"])
def test_a_missing_required_column_is_named(column):
    rows = _table(FORWARD)
    drop = rows[0].index(column)
    with pytest.raises(UsageError, match=f"lacks the column\\(s\\) {column}"):
        parse_text(_text([row[:drop] + row[drop + 1 :] for row in rows]))


def test_a_missing_tensor_pipe_column_leaves_every_dependent_field_undetermined():
    rows = _table(FORWARD)
    assert infer(parse_text(_text(rows))).values["dtype"] == "bf16"  # whole, it is read
    drop = rows[0].index(TENSOR_PATHS["bf16"])
    result = infer(parse_text(_text([row[:drop] + row[drop + 1 :] for row in rows])))
    assert result.values["mode"] == "forward"
    assert all(value is None for name, value in result.values.items() if name != "mode")
    assert max(c for name, c in result.confidence.items() if name != "mode") == 0.0
    assert any("tensor-pipe column" in line for line in result.missing)


def test_a_forward_range_cut_between_rows_leaves_every_field_undetermined():
    rows = _table(GPT2)
    whole = infer(parse_text(_text(rows)))
    assert whole.values["n_layers"] == 2
    result = infer(parse_text(_text(rows[:-1])))  # the LM head is gone: it ends with the final norm
    assert all(value is None for name, value in result.values.items() if name != "dtype")
    assert result.values["dtype"] == "fp32"  # the GEMMs that ran still show their pipe
    assert [gap.part for gap in result.gaps] == ["forward"]
    assert any("no forward pass ends with" in line for line in result.missing)


def test_a_gzip_capture_corrupted_in_the_middle_is_one_line(tmp_path):
    data = bytearray(FORWARD.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(bytes(data))
    out = CliRunner().invoke(app, ["pmc", "infer", str(path)])
    assert out.exit_code == 2, out.output
    assert "cannot read" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_explain_flags_a_configuration_far_from_what_ran():
    capture = read_capture(FIXTURES / "lmperf_small_l2.csv.gz")
    right = ex.from_preset("small", {"n_layers": 2, "vocab_size": 10000})
    rows = ex.class_rows(capture, right, 2, 256) + ex.role_rows(capture, right, 2, 256)
    assert ex.implausible(rows) == []
    wrong = ex.from_preset("small", {"n_layers": 2, "vocab_size": 10000, "d_model": 96})  # 8x narrower
    rows = ex.class_rows(capture, wrong, 2, 256) + ex.role_rows(capture, wrong, 2, 256)
    assert ex.implausible(rows)
    out = CliRunner().invoke(
        app,
        [
            "pmc",
            "explain",
            str(FIXTURES / "lmperf_small_l2.csv.gz"),
            "--preset",
            "small",
            "--set",
            "n_layers=2,vocab_size=10000,d_model=96",
            "--context",
            "256",
        ],
    )
    assert out.exit_code == 0 and "beyond what tile padding and 3xTF32 allow" in out.stderr


def test_explain_set_of_an_unknown_field_is_one_line():
    out = CliRunner().invoke(app, ["pmc", "explain", str(FORWARD), "--preset", "small", "--set", "foo=2"])
    assert out.exit_code == 2 and "unknown model field(s) foo" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1

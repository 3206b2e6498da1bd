"""The accuracy report's header names every collect call's environment."""

import json

from lmperf.pmc.accuracy import environment_lines


def test_every_collect_calls_environment_heads_the_score(tmp_path):
    for name, commit in (("environment.json", "aaa"), ("environment-2.json", "bbb")):
        (tmp_path / name).write_text(json.dumps({"device": "H100", "commit": commit, "date": "d"}))
    lines = environment_lines(tmp_path).splitlines()
    assert [line.split(":")[0] for line in lines if line] == ["- environment-2.json", "- environment.json"]
    assert "commit bbb" in lines[0] and "commit aaa" in lines[1]
    assert environment_lines(tmp_path / "none") == ""


def test_scoring_without_its_arguments_is_one_line_and_exit_2(tmp_path, capsys):
    from lmperf.pmc.accuracy import main

    assert main([]) == 2
    assert main([str(tmp_path / "missing"), str(tmp_path / "out.md")]) == 2
    assert main([str(tmp_path), str(tmp_path / "out.md")]) == 2  # a folder without captures
    (tmp_path / "a.truth.json").write_text("{}")
    assert main([str(tmp_path), str(tmp_path / "no" / "out.md")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 4 and "usage" in lines[0] and "no captures" in lines[1] and "no folder" in lines[3]
    assert not (tmp_path / "out.md").exists()

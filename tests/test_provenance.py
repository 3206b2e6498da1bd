"""Rows name lmperf's own commit: from its checkout, LMPERF_COMMIT, or a hash of a copy's sources."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import lmperf
from lmperf.report.environment import source_commit

PACKAGE = Path(lmperf.__file__).resolve().parent


def _git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_the_commit_is_lmperf_checkouts_not_the_current_directorys(tmp_path, monkeypatch):
    monkeypatch.delenv("LMPERF_COMMIT", raising=False)
    other = tmp_path / "other"
    other.mkdir()
    _git("init", "-q", cwd=other)
    _git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x", cwd=other)
    monkeypatch.chdir(other)
    ours = _git("rev-parse", "--short", "HEAD", cwd=PACKAGE)
    assert source_commit().removesuffix("-dirty") == ours != _git("rev-parse", "--short", "HEAD", cwd=other)


def test_lmperf_commit_overrides(monkeypatch):
    monkeypatch.setenv("LMPERF_COMMIT", "abc1234")
    assert source_commit() == "abc1234"


def _commit_of_copy(src: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LMPERF_COMMIT"}
    env["PYTHONPATH"] = str(src)
    code = "from lmperf.report.environment import source_commit; print(source_commit())"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=src, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_a_copy_without_git_names_version_and_source_hash(tmp_path):
    copies = []
    for name in ("a", "b"):
        shutil.copytree(PACKAGE, tmp_path / name / "lmperf", ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(tmp_path / name)
    first, second = _commit_of_copy(copies[0]), _commit_of_copy(copies[1])
    version, _, digest = first.partition("+sources.")
    assert version and len(digest) == 12 and first == second  # same sources, same name
    (copies[1] / "lmperf" / "errors.py").write_text("# changed\n", encoding="utf-8")
    assert _commit_of_copy(copies[1]) != first

"""Rows name lmperf's own commit (from its checkout, LMPERF_COMMIT, or a hash of a copy's sources),
always the hash of the sources that ran, and whether those are the commit's."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import lmperf
from lmperf.report.environment import source_commit, sources_match_commit

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
    code = "from lmperf.report.environment import source_commit, sources_match_commit; print(source_commit())"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=src, capture_output=True, text=True, check=True
    ).stdout.strip()


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


def _by_hand(package: Path) -> str:
    # SHA-256 over each .py file's path relative to the package, a NUL and its bytes, in path order
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def test_every_row_carries_the_hash_of_the_sources_that_ran(monkeypatch):
    from lmperf.report.environment import environment

    environment.cache_clear()
    monkeypatch.setenv("LMPERF_COMMIT", "abc1234")  # the commit a GPU machine is told: the hash is still there
    try:
        env = environment("cpu")
    finally:
        environment.cache_clear()
    assert env["commit"] == "abc1234" and env["sources"] == _by_hand(PACKAGE)


def _committed_copy(tmp_path) -> tuple[Path, str]:
    package = tmp_path / "repo" / "lmperf"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    _git("init", "-q", cwd=package.parent)
    _git("add", ".", cwd=package.parent)
    _git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "x", cwd=package.parent)
    return package, _git("rev-parse", "--short", "HEAD", cwd=package)


def test_a_commit_is_checked_against_the_sources_that_ran(tmp_path):
    package, commit = _committed_copy(tmp_path)
    assert source_commit(package) == commit and sources_match_commit(commit, package) is True
    (package / "errors.py").write_text("# changed\n", encoding="utf-8")  # what LMPERF_COMMIT cannot see
    assert source_commit(package) == commit + "-dirty" and sources_match_commit(commit, package) is False
    (package / "errors.py").write_text((PACKAGE / "errors.py").read_text(encoding="utf-8"), encoding="utf-8")
    (package / "extra.py").write_text("", encoding="utf-8")  # untracked, so not "-dirty", but it runs
    assert sources_match_commit(commit, package) is False
    assert sources_match_commit("0" * 12, package) is None  # a commit not in the history: cannot say


def test_the_report_line_says_whether_the_sources_were_the_commits():
    from lmperf.report.environment import measured_on

    env = {
        "device": "H100",
        "driver": "1",
        "torch": "2",
        "triton": "3",
        "commit": "abc",
        "date": "today",
        "sources": "0123456789ab",
        "sources_match_commit": False,
    }
    assert "commit abc (sources 0123456789ab, differing from the commit), today." in measured_on([{"env": env}])
    old = {key: value for key, value in env.items() if not key.startswith("sources")}
    assert "commit abc, today." in measured_on([{"env": old}])

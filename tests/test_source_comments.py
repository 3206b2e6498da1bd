"""Comments and docstrings in src/ say why, in the present tense: no history.

Every comment (tokenize) and docstring (ast) of every module under src/ is read for what belongs
in the docs, the benchmark pages or the commit log instead: commit hashes, dates, benchmark
folders, work-session narration, references to numbered items of a log, measured ratio ranges.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# (name, pattern): what a comment or docstring must not contain
HISTORY = [
    # 7-40 lowercase hex characters with at least one digit and one letter, a word of their own
    ("commit hash", re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("benchmark folder", re.compile(r"\bbenchmarks/")),
    # a work session narrated ("the fifth session", "in that session"), not a process's session
    (
        "work session",
        re.compile(
            r"\b(\w+th|first|second|third|this|that|next|last|previous|earlier|later|work)"
            r"\s+sessions?\b",
            re.IGNORECASE,
        ),
    ),
    ("numbered log item", re.compile(r"\bitems? \d+\b", re.IGNORECASE)),
    ("measured ratio range", re.compile(r"\b[01]\.\d{2,3}x?-[01]\.\d{2,3}(?!\d)")),
]

# Modules outside the attention kernels' clean-up that still carry history; each is expected to
# fail until it is cleaned, and strict: a cleaned module must leave this list.
NOT_YET_CLEANED: set[str] = set()


def comments_and_docstrings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring in a module's source."""
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                found.append((body[0].lineno, body[0].value.value))
    return sorted(found)


def history_in(source: str) -> list[str]:
    """One line per piece of history found: 'line N: kind: the match'."""
    return [
        f"line {line}: {kind}: {match.group(0)!r}"
        for line, text in comments_and_docstrings(source)
        for kind, pattern in HISTORY
        for match in pattern.finditer(text)
    ]


def modules() -> list[str]:
    return sorted(str(path.relative_to(SRC)) for path in SRC.rglob("*.py"))


@pytest.mark.parametrize(
    "module",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="history not yet cleaned"))
        if name in NOT_YET_CLEANED
        else name
        for name in modules()
    ],
)
def test_comments_and_docstrings_carry_no_history(module):
    found = history_in((SRC / module).read_text())
    assert not found, f"{module}:\n" + "\n".join(found)


def test_each_kind_of_history_is_caught(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('''"""Faster since 3f9a2c1 (benchmarks/attention/run-h100/summary.txt)."""

# measured on 2026-11-23, fifth session: 1.020-1.153x as fast (docs/attention.md item 36)
DEFAULT = 0xdeadbee  # a hex literal in code, not a comment: allowed
LABEL = "e906d3b"  # a string that is not a docstring: allowed


def tiles():
    """Item 12 of the log."""
''')
    kinds = {line.split(": ")[1] for line in history_in(planted.read_text())}
    assert kinds == {name for name, _ in HISTORY}
    found = history_in(planted.read_text())
    assert "line 1: commit hash: '3f9a2c1'" in found and not any(
        "deadbee" in line or "e906d3b" in line for line in found
    )


@pytest.mark.parametrize(
    "clean",
    [
        "# a 128-key tile: 2 x 64 KB of K and V, 0x1f2e3d4 is an address",
        "# head_dim 80 = 64 + 16; work item r x parts + p; the feedback and facade words; bf16 fp32 sm_90a",
        '"""Ratios of 1.5-2x and versions >=3.6,<3.7 are not measured ratio ranges."""',
    ],
)
def test_plain_explanations_pass(clean):
    assert history_in(clean + "\n") == []

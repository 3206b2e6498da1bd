"""Tables rendered from result rows: Markdown, CSV and rich, all from one column spec.

A column is (header, key, format); `key` is a row field, and `format` a format spec such as
".2f" (missing values print as "-").
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any, Collection, Sequence

from rich.table import Table

Column = tuple[str, str, str]


def cell(row: dict[str, Any], key: str, fmt: str) -> str:
    value = row.get(key)
    if value is None or value == "":
        return "-"
    if fmt and isinstance(value, (int, float)):
        return format(value, fmt)
    return str(value)


def markdown(rows: Sequence[dict], columns: Sequence[Column]) -> str:
    lines = [
        "| " + " | ".join(header for header, _, _ in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(cell(row, key, fmt) for _, key, fmt in columns) + " |")
    return "\n".join(lines) + "\n"


def csv_text(rows: Sequence[dict], columns: Sequence[Column]) -> str:
    """CSV with raw values (full precision), headers as in the other tables."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([header for header, _, _ in columns])
    for row in rows:
        writer.writerow(["" if row.get(key) is None else row.get(key) for _, key, _ in columns])
    return buffer.getvalue()


@dataclass(frozen=True)
class Layout:
    """What a table of some rows shows: `columns`, and `constants`, each identifying column that
    has one value in every row with that value, said once instead of in every row."""

    columns: list[Column]
    constants: list[tuple[Column, str]]

    def line(self) -> str:
        """'Every row: ctx 128, prec fp32.' ("" when no column is constant)."""
        if not self.constants:
            return ""
        return "Every row: " + ", ".join(f"{column[0]} {value}" for column, value in self.constants) + "."

    def constant_keys(self) -> set[str]:
        return {column[1] for column, _ in self.constants}


def layout(rows: Sequence[dict], columns: Sequence[Column], identifying: Collection[str]) -> Layout:
    """The columns worth a place in a table of `rows`: an identifying column (its key in
    `identifying`: what tells one configuration from another) whose cell is the same in every row
    moves to `constants`, and a column empty in every row is left out; every other column stays,
    in order. Without rows every column stays."""
    if not rows:
        return Layout(list(columns), [])
    shown, constants = [], []
    for column in columns:
        header, key, fmt = column
        cells = {cell(row, key, fmt) for row in rows}
        if cells == {"-"}:
            continue
        if key in identifying and len(cells) == 1:
            constants.append((column, cells.pop()))
        else:
            shown.append(column)
    return Layout(shown, constants)


def markdown_laid_out(rows: Sequence[dict], columns: Sequence[Column], identifying: Collection[str]) -> str:
    """The Markdown table of `layout`: its constants line, then the table."""
    shown = layout(rows, columns, identifying)
    return (shown.line() + "\n\n" if shown.constants else "") + markdown(rows, shown.columns)


# What a rich table spends on a column besides its text: a border and one space each side.
_RICH_COLUMN_OVERHEAD = 3


def fitting_columns(
    rows: Sequence[dict], columns: Sequence[Column], width: int, priority: Sequence[str]
) -> list[Column]:
    """The columns, in their own order, that fit `width` terminal characters whole (no cell cut
    short), taken by `priority` (column keys, most wanted first; unnamed columns come last)."""

    def needed(column: Column) -> int:
        header, key, fmt = column
        return max([len(header), *(len(cell(row, key, fmt)) for row in rows)]) + _RICH_COLUMN_OVERHEAD

    rank = {key: index for index, key in enumerate(priority)}
    by_priority = sorted(columns, key=lambda column: rank.get(column[1], len(rank)))
    kept, used = set(), 1  # the table's closing border
    for column in by_priority:
        if used + needed(column) <= width:
            kept.add(column[1])
            used += needed(column)
    return [column for column in columns if column[1] in kept]


def rich_table(rows: Sequence[dict], columns: Sequence[Column], title: str = "") -> Table:
    table = Table(title=title or None)
    for header, _, fmt in columns:
        table.add_column(header, justify="right" if fmt else "left")
    for row in rows:
        table.add_row(*(cell(row, key, fmt) for _, key, fmt in columns))
    return table

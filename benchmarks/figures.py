"""The one statistic rule of the published figures, and the row selections the pages share.

A ratio is "their time / ours" (above 1: lmperf, or the setting a tuning row names, is faster).
It is taken per round, between rows timed in the same round of the same run, and published as
the median over the rounds with the lowest round beside it: `1.114 (1.092)`. A round is a row's
(`source`, `round`): the sweeps' `--rounds N` number their rounds, and a file without round
numbers is one round. Times are medians of the timer's own repetitions (do_bench) or, for
training steps, `median_ms`: the rule never mixes means and medians.
"""

from __future__ import annotations

import functools
import statistics
from collections import defaultdict
from typing import Callable, Iterable

import rows as row_files

Point = tuple


@functools.cache
def page_rows(page: str) -> tuple[dict, ...]:
    """Every row of `page`'s rows file, read once per process."""
    return tuple(row_files.read(page))


@functools.cache
def _sets(page: str) -> dict[str, tuple[dict, ...]]:
    """`page`'s rows by their set, in file order: a check asks for a set a thousand times, and each
    set is a small part of its page's rows."""
    sets: dict = defaultdict(list)
    for row in page_rows(page):
        sets[row.get("set")].append(row)
    return {name: tuple(rows) for name, rows in sets.items()}


def of_set(page: str, set_name: str, **where) -> list[dict]:
    """The rows of `page`'s set `set_name` whose fields equal `where`'s values."""
    return [row for row in _sets(page).get(set_name, ()) if all(row.get(key) == value for key, value in where.items())]


def round_of(row: dict) -> tuple:
    return row.get("source"), row.get("round", 0)


def per_round(rows: Iterable[dict], name_key: str, metric: str, point: Callable[[dict], Point]) -> dict:
    """{point: {round: {name: time}}} over the rows that have a number for `metric`."""
    table: dict = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        value = row.get(metric)
        if isinstance(value, (int, float)) and row.get("status", "ok") == "ok":
            table[point(row)][round_of(row)][row[name_key]] = value
    return table


def ratios(
    rows: Iterable[dict], theirs: str, ours: str, metric: str, name_key: str, point: Callable[[dict], Point]
) -> dict[Point, list[float]]:
    """{point: [their time / our time, one per round that timed both]}."""
    out = {}
    for where, rounds in per_round(rows, name_key, metric, point).items():
        values = [names[theirs] / names[ours] for names in rounds.values() if theirs in names and ours in names]
        if values:
            out[where] = values
    return out


def median_low(values: list[float]) -> tuple[float, float]:
    """(median over rounds, lowest round)."""
    return statistics.median(values), min(values)


def ratio_cell(values: list[float]) -> str:
    """`median (lowest)` to three decimals; one round: the value alone."""
    middle, low = median_low(values)
    return f"{middle:.3f}" if len(values) == 1 else f"{middle:.3f} ({low:.3f})"


def span(values: list[float], digits: int = 3) -> str:
    """`low-high` of values, or one value when they agree at that precision."""
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return low if low == high else f"{low}-{high}"


def medians_and_low(by_point: dict[Point, list[float]], points: Iterable[Point]) -> tuple[list[float], float]:
    """The per-point medians of `points` and the lowest round among them all."""
    chosen = [by_point[p] for p in points]
    return [statistics.median(v) for v in chosen], min(min(v) for v in chosen)


def keys_label(seq: int) -> str:
    """1024 -> 1k, 16384 -> 16k."""
    return f"{seq // 1024}k" if seq % 1024 == 0 else str(seq)


def thousands(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"

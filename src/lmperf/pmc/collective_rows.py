"""NCCL's kernels put back into a capture at the places they were launched.

ncu cannot profile a collective with counters: it replays a kernel pass after pass, and the peer
ranks run each collective once (lmperf.pmc.ncu). Launch statistics need no replay, so a second
run of the same program that records only those, for every kernel of the range, lists the
collectives in launch order among the other kernels. Where the other kernels come in the same
order as in the profiled run (the same program, launching the same kernels), each collective
goes back between the same neighbours, with its name and launch shape and no counter values,
which is all lmperf.pmc.collectives reads of it.
"""

from __future__ import annotations

import csv
import io
import re

from lmperf.pmc.ncu import NOT_NCCL
from lmperf.pmc.parse import raw_table

_NOT_COLLECTIVE = re.compile(NOT_NCCL)  # the filter the profiled run's ncu applied
NO_VALUE = "n/a"  # how ncu's raw page marks a metric a kernel has no value for


class NotPlaced(ValueError):
    """The launch run's kernels are not the profiled run's with collectives among them."""


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue()


def with_collectives(profiled: str, launches: str) -> tuple[str, int]:
    """The profiled run's raw page with the launch run's collectives put back in launch order
    (kernel IDs renumbered), and how many; NotPlaced where the two runs' other kernels differ, a
    UsageError where either page holds no table."""
    header, units, rows = raw_table(profiled, "the profiled run")
    launch_header, _, launched = raw_table(launches, "the launch run")
    name, launch_name = header.index("Kernel Name"), launch_header.index("Kernel Name")
    others = [row[launch_name] for row in launched if _NOT_COLLECTIVE.match(row[launch_name])]
    if others != [row[name] for row in rows]:
        raise NotPlaced(f"the launch run's {len(others)} other kernels are not the profiled run's {len(rows)} in order")
    profiled_rows = iter(rows)
    merged = []
    for row in launched:
        if _NOT_COLLECTIVE.match(row[launch_name]):
            merged.append(next(profiled_rows))
        else:
            values = dict(zip(launch_header, row))
            merged.append([values.get(column, NO_VALUE) for column in header])
    ids = header.index("ID")
    for number, row in enumerate(merged):
        row[ids] = str(number)
    return _csv([header, *([units] if units else []), *merged]), len(merged) - len(rows)

"""Reading ncu's raw CSV (`--csv --page raw`) as ncu prints it, from any program.

What the file may hold besides the table: `==PROF==` / `==WARNING==` lines, the profiled program's
own output, a units row under the header (`--print-units base`), thousands separators inside
quoted numbers ("1,234,567"), `n/a` for a metric a kernel has no value for, and columns missing
entirely when a metric was not collected. Every kernel becomes a `KernelRecord`.
"""

from __future__ import annotations

import csv
import functools
import gzip
import math
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lmperf.errors import UsageError

HEADER_START = '"ID",'
_DIMS = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
# Columns that describe the launch, not counters.
# GEMM work: tensor-pipe ops per source type, or FFMA instructions for fp32 without tensor cores.
TENSOR_PATHS = {
    "bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "fp16": "sm__ops_path_tensor_src_fp16.sum",
    "tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "fp8": "sm__ops_path_tensor_src_fp8.sum",
}
FFMA = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"
# What every answer rests on: kernel names (phases, roles), and the counters of GEMM work.
REQUIRED_COLUMNS = ("Kernel Name", FFMA)
# The tensor pipes every GPU since Ampere offers (fp8 is newer, so its absence says nothing).
TENSOR_PIPE_COLUMNS = tuple(TENSOR_PATHS[path] for path in ("bf16", "fp16", "tf32"))
# The raw page repeats the machine's description and the launch statistics on every kernel row
# (three quarters of its cells): no counters, so never converted (grid and block are read apart).
_MACHINE_COLUMNS = ("device__attribute", "nvlink__", "numa__", "launch__", "profiler__")
_DESCRIPTIVE = {
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
}


_UNREAD = object()  # a counter's cell not converted yet (None is a value: no number)


class Counters(Mapping[str, "float | None"]):
    """A kernel's counters by name, each read from its table cell (`number`) the first time it is
    asked for: inference reads nine of a row's fifty-one counters, so a 5,000-kernel capture
    converts a seventh of its cells. Iteration, `items()` and equality give the values."""

    __slots__ = ("_cells", "_columns", "_values")

    def __init__(self, cells: list[str], columns: dict[str, int]):
        self._cells, self._columns, self._values = cells, columns, {}  # columns: shared by a capture

    def __getitem__(self, name: str) -> float | None:
        value = self._values.get(name, _UNREAD)
        if value is _UNREAD:
            value = self._values[name] = number(self._cells[self._columns[name]])
        return value

    def get(self, name: str, default=None):
        # inference asks tens of millions of times for counters already read: one dict look-up
        value = self._values.get(name, _UNREAD)
        if value is not _UNREAD:
            return value
        column = self._columns.get(name)
        if column is None:
            return default
        value = self._values[name] = number(self._cells[column])
        return value

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


@dataclass(frozen=True)
class KernelRecord:
    """One profiled kernel launch: its name, launch shape and counters (None = no value)."""

    index: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    # What pmc derives from the name and counters (category, tensor work, tiles), kept once
    # computed: inference asks for it millions of times, and a record never changes.
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def metric(self, name: str) -> float:
        """The counter's value, 0 when missing (a kernel with no tensor work has no count)."""
        return self.metrics.get(name) or 0.0

    def derive(self, key: str, compute: Callable[[KernelRecord], object]):
        """`compute(self)`, computed the first time and kept under `key` in `derived` (None, too,
        is an answer)."""
        derived = self.derived
        if key not in derived:
            derived[key] = compute(self)
        return derived[key]

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)


@dataclass(frozen=True)
class Capture:
    kernels: list[KernelRecord]
    metric_names: tuple[str, ...]  # the counter columns the file has
    units: dict[str, str]
    source: str = ""
    # Damage that leaves the table readable but some answers unsupported (missing columns).
    problems: tuple[str, ...] = ()

    def has(self, metric: str) -> bool:
        return metric in self.metric_names


def number(text: str) -> float | None:
    """'1,234,567' -> 1234567.0; '', 'n/a' and other non-numbers -> None."""
    if not text:
        return None
    try:  # most cells are numbers, a fifth of them with thousands separators: no exception
        return float(text.replace(",", "") if "," in text else text)
    except ValueError:
        pass
    cleaned = text.strip().replace(",", "")
    if not cleaned:
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


@functools.lru_cache(maxsize=1024)  # a capture's launches repeat a few dozen grids and blocks
def dims(text: str) -> tuple[int, int, int]:
    """'(128, 1, 1)' -> (128, 1, 1); a bare number is (n, 1, 1); unreadable -> (0, 0, 0)."""
    match = _DIMS.search(text)
    if match:
        return tuple(int(g) for g in match.groups())  # type: ignore[return-value]
    value = number(text)
    return (int(value), 1, 1) if value is not None else (0, 0, 0)


def read_text(path: Path) -> str:
    """The file's text; .gz files are decompressed. Unreadable is a UsageError."""
    path = Path(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
                return f.read()
        return path.read_text(encoding="utf-8", errors="replace")
    except (OSError, EOFError, zlib.error) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"cannot read {path}: {reason}") from None


def write_text(path: Path, text: str) -> Path:
    """Write a capture's text as `read_text` reads it: gzipped if the name ends in .gz."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.write(text)
    return path


def raw_table(text: str, source: str = "") -> tuple[list[str], list[str], list[list[str]]]:
    """The raw page's header, its units row (empty without `--print-units`) and its kernel rows,
    each row as long as the header; no table, or a damaged one, is a UsageError."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(HEADER_START)), None)
    if start is None:
        raise UsageError(
            f"{source or 'input'}: no ncu raw CSV table (a line starting "
            f"{HEADER_START}) found; was it written with --csv --page raw?"
        )
    table = [line for line in lines[start:] if line.startswith('"')]  # drop ==PROF== and output
    try:
        rows = list(csv.reader(table))
    except csv.Error as error:
        raise UsageError(f"{source or 'input'}: the ncu table is damaged ({error})") from None
    header, body = rows[0], rows[1:]
    _check_rows(header, body, source or "input")
    units = body.pop(0) if body and body[0][0] == "" else []
    return header, units, body


def parse_text(text: str, source: str = "") -> Capture:
    """Parse the raw page; no table, or a table without kernels, is a UsageError."""
    header, unit_row, body = raw_table(text, source)
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise UsageError(
            f"{source or 'input'}: the ncu table lacks the column(s) {', '.join(missing)}; "
            "collect it again with `lmperf pmc collect`"
        )
    units: dict[str, str] = dict(zip(header, unit_row))
    counters = tuple(name for name in header if name not in _DESCRIPTIVE and not name.startswith(_MACHINE_COLUMNS))
    columns = {name: i for i, name in enumerate(header)}
    counter_columns = {name: columns[name] for name in counters}
    kernels = [_record(i, row, columns, counter_columns) for i, row in enumerate(body)]
    if not kernels:
        raise UsageError(f"{source or 'input'}: the ncu table has no kernel rows")
    unseen = [name for name in TENSOR_PIPE_COLUMNS if name not in header]
    problems = (
        (f"the tensor-pipe column(s) {', '.join(unseen)} are missing: GEMM work on that pipe is invisible",)
        if unseen
        else ()
    )
    return Capture(kernels, counters, units, source, problems)


def _check_rows(header: list[str], body: list[list[str]], source: str) -> None:
    """Every row has the header's number of fields; a short last row is a file cut off mid-write."""
    for number, row in enumerate(body, 1):
        if len(row) != len(header):
            where = "the last row" if number == len(body) else f"row {number}"
            cause = "the file was cut off" if number == len(body) else "the table is damaged"
            raise UsageError(
                f"{source}: {where} of the ncu table has {len(row)} of {len(header)} fields "
                f"({cause}); no answer can be trusted from it"
            )


def _record(index: int, row: list[str], columns: dict[str, int], counter_columns: dict[str, int]) -> KernelRecord:
    """One kernel's row; `columns`: the header's column of each name; `counter_columns`: each
    counter's."""

    def cell(name: str) -> str:
        return row[columns[name]] if name in columns else ""

    grid, block = dims(cell("Grid Size")), dims(cell("Block Size"))
    if grid == (0, 0, 0) and "launch__grid_size" in columns:
        grid = dims(cell("launch__grid_size"))
    if block == (0, 0, 0) and "launch__block_size" in columns:
        block = dims(cell("launch__block_size"))
    return KernelRecord(index, cell("Kernel Name"), grid, block, Counters(row, counter_columns))


def read_capture(path: Path) -> Capture:
    return parse_text(read_text(path), source=str(path))

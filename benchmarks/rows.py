"""The rows behind the published pages: one JSONL file per page under benchmarks/rows/.

Every row is a row as lmperf wrote it (its configuration, figures and `env`: GPU, driver, torch,
triton, commit, date), plus two fields this file adds: `set`, the name a page's tables select
rows by (one sweep, one A/B run), and `source`, the file the row came from. A file over
GZIP_FROM bytes is stored gzipped (`NAME.jsonl.gz`); `read` takes either.

    python benchmarks/rows.py add attention-h100 SET runs/<stamp>-attention/results.jsonl
    python benchmarks/rows.py sets attention-h100

`add` appends a run's rows to a page's file under a new set name (refused if the set exists);
the page's table then selects that set in benchmarks/pages.py.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from pathlib import Path

ROWS_DIR = Path(__file__).resolve().parent / "rows"
GZIP_FROM = 200_000  # bytes of JSONL above which a page's rows are stored gzipped


def path_of(page: str, rows_dir: Path = ROWS_DIR) -> Path:
    """The rows file of `page` as stored: NAME.jsonl.gz if present, else NAME.jsonl."""
    packed = rows_dir / f"{page}.jsonl.gz"
    return packed if packed.exists() else rows_dir / f"{page}.jsonl"


def read(page: str, rows_dir: Path = ROWS_DIR) -> list[dict]:
    """Every row of `page`'s file, in file order."""
    path = path_of(page, rows_dir)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write(page: str, rows: list[dict], rows_dir: Path = ROWS_DIR) -> Path:
    """Write `page`'s rows, gzipped (with a fixed mtime, so equal rows give equal bytes) when large."""
    text = "".join(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n" for row in rows)
    plain, packed = rows_dir / f"{page}.jsonl", rows_dir / f"{page}.jsonl.gz"
    rows_dir.mkdir(parents=True, exist_ok=True)
    for stale in (plain, packed):
        stale.unlink(missing_ok=True)
    if len(text.encode()) <= GZIP_FROM:
        plain.write_text(text, encoding="utf-8")
        return plain
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as handle:
        handle.write(text.encode())
    packed.write_bytes(buffer.getvalue())
    return packed


def tagged(rows: list[dict], set_name: str, source: str) -> list[dict]:
    """Copies of `rows` carrying their set and source."""
    return [{**row, "set": set_name, "source": source} for row in rows]


def add(page: str, set_name: str, files: list[Path], rows_dir: Path = ROWS_DIR) -> int:
    """Append the rows of `files` (JSONL) to `page`'s file as set `set_name`; returns their count."""
    existing = read(page, rows_dir) if path_of(page, rows_dir).exists() else []
    if any(row.get("set") == set_name for row in existing):
        raise SystemExit(f"set {set_name!r} is already in {page}'s rows; choose a new name")
    new = []
    for file in files:
        lines = Path(file).read_text(encoding="utf-8").splitlines()
        new += tagged([json.loads(line) for line in lines if line.strip()], set_name, str(file))
    if not new:
        raise SystemExit("no rows in " + ", ".join(map(str, files)))
    write(page, existing + new, rows_dir)
    return len(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    adding = sub.add_parser("add", help="append a run's rows to a page's rows file as a new set")
    adding.add_argument("page")
    adding.add_argument("set")
    adding.add_argument("files", nargs="+", type=Path)
    listing = sub.add_parser("sets", help="list a page's sets with their row counts")
    listing.add_argument("page")
    args = parser.parse_args(argv)
    if args.command == "add":
        print(f"{add(args.page, args.set, args.files)} rows added to {path_of(args.page)}")
    else:
        counts: dict[str, int] = {}
        for row in read(args.page):
            counts[row["set"]] = counts.get(row["set"], 0) + 1
        for name, count in counts.items():
            print(f"{count:6d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Opening the warehouse: a DuckDB file, migrated on open for writers, read-only for readers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from pipeline.errors import DataError
from warehouse.migrate import migrate


def _is_uri(target: str) -> bool:
    """A database URI (e.g. MotherDuck's `md:name`) is passed to DuckDB as it is."""
    head = target.split(":", 1)[0]
    return ":" in target and len(head) > 1 and "/" not in head


@contextmanager
def connect(path: Path | str, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """Yield a connection; a writer is migrated first and checkpointed on close.

    A read-only open of a file that does not exist is a `DataError` (run a refresh first)
    rather than DuckDB's generic IO error.
    """
    target = str(path)
    if target != ":memory:" and not _is_uri(target):
        p = Path(target)
        if read_only and not p.exists():
            raise DataError(f"no warehouse at {p}: run `gpuscout refresh` first (or pass --db)")
        p.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(target, read_only=read_only)
    except duckdb.IOException as exc:
        raise DataError(f"cannot open warehouse {target}: {exc}") from exc
    try:
        if not read_only:
            migrate(con)
        yield con
        if not read_only:
            con.execute("CHECKPOINT")  # flush the WAL so the file alone is a complete copy
    finally:
        con.close()

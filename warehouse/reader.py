"""Reading a warehouse without trusting it.

Every reader (the CLI's commands, the API, the report, a user's own SQL) opens the published
file the same way, and the way itself is what makes it safe rather than a check of what is
asked:

- a private in-memory DuckDB instance, so nothing set here reaches another connection of the
  same process (a notebook's own connection keeps its settings);
- the warehouse attached READ_ONLY, so no statement can change a table or a view;
- the sealed history (warehouse/segments.py) handed to DuckDB as an Arrow dataset opened here,
  from the folder beside the file and only under the names gpuscout writes, never from a path
  a row of the warehouse spells out;
- then file access switched off and the configuration locked: no COPY ... TO, no
  read_text('/proc/self/environ'), no ATTACH, INSTALL or SET, whatever a query or a view
  stored in the warehouse asks for.

`allow_files` (a user's `sql --allow-files`) keeps DuckDB's file access on; `write_to` (an
export) opens one folder, and only that one, for DuckDB's COPY to write its files into.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from gpuscout.core.errors import DataError
from gpuscout.warehouse import segments
from gpuscout.warehouse.identity import safe_config

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = {"memory", "temp", "system", "main"}
# The registered Arrow dataset the temporary `sealed_versions` view reads.
_SEALED_ARROW = "gpuscout_sealed_segments"
# Publishes back to back, each landing inside one ATTACH, are what it would take to use these up.
_ATTACH_TRIES = 20


def alias(real: Path) -> str:
    """The attached database's name: the file's stem, as DuckDB names a file it opens."""
    stem = real.stem
    return stem if _IDENTIFIER.match(stem) and stem.lower() not in _RESERVED else "warehouse"


def open_reader(real: Path, *, allow_files: bool = False,
                write_to: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the published file at `real` (see the module docstring)."""
    con = duckdb.connect(":memory:", config=safe_config())
    try:
        name = alias(real)
        _attach_one_file(con, real, name)
        con.execute(f'USE "{name}"')
        if write_to is not None:
            con.execute("SET allowed_directories = $1", [[str(write_to) + os.sep]])
        _read_sealed_from_arrow(con, real, allow_files=allow_files)
        if not allow_files:
            con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _attach_one_file(con: duckdb.DuckDBPyConnection, real: Path, name: str) -> None:
    """ATTACH the file at `real` as one file. DuckDB opens the path twice (its headers, then
    its blocks), so a publish that renames a new file over it between the two would pair one
    file's headers with the other's blocks. A publish only ever puts a new file at the path,
    so the same file before and after the ATTACH means both opens read it; otherwise the
    ATTACH is undone and tried again on the file now published."""
    for _ in range(_ATTACH_TRIES):
        before = _identity(real)
        try:
            con.execute(f'ATTACH $1 AS "{name}" (READ_ONLY)', [str(real)])
        except duckdb.Error as exc:
            if _identity(real) == before:
                raise DataError(f"cannot open warehouse {real}: {_first_line(exc)}") from exc
            continue  # replaced while opening: the error was the race, not the file
        if _identity(real) == before:
            return
        con.execute(f'DETACH "{name}"')
    raise DataError(f"the warehouse {real} was replaced {_ATTACH_TRIES} times while it was "
                    "being opened; try again")


def _identity(real: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(real)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns)


def _read_sealed_from_arrow(con: duckdb.DuckDBPyConnection, real: Path, *,
                            allow_files: bool) -> None:
    """`sealed_versions` over the listed segments beside the file, read by pyarrow. File access
    goes off before any SQL built from the warehouse's own catalog runs."""
    names = segments.listed_names(con)
    if not names:
        if not allow_files:
            con.execute("SET enable_external_access = false")
        return  # the stored view reads no file
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    paths = segments.present_paths(real, names)
    try:
        schema = pa.unify_schemas([pq.read_schema(p) for p in paths],
                                  promote_options="permissive")
        dataset = ds.dataset([str(p) for p in paths], format="parquet", schema=schema)
    except (OSError, pa.ArrowException) as exc:
        raise DataError(f"a history segment of {real} is unreadable ({_first_line(exc)}); "
                        f"restore {segments.segments_dir(real)} from a backup") from exc
    con.register(_SEALED_ARROW, dataset)
    if not allow_files:
        con.execute("SET enable_external_access = false")
    select = segments.cast_columns(segments.recent_columns(con), present=set(schema.names))
    con.execute(f"CREATE TEMP VIEW sealed_versions AS SELECT {select} FROM {_SEALED_ARROW}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

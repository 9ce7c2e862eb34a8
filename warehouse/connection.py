"""Opening the warehouse: readers read the published file; a writer works on a private copy.

DuckDB lets one process hold a database file for writing, and a read-only open fails while a
writer holds it. So no writer ever opens the published file:

- `connect(path, read_only=True)` opens the published file read-only, in a private DuckDB
  instance with file access off (warehouse/reader.py). Any number of readers, in any number
  of processes, at any time, including while a refresh writes.
- `connect(path)` is a write session. It takes the writer lock `<path>.lock` (an exclusive
  `flock`; a second writer is refused with `WarehouseBusyError` rather than overwriting the first
  one's work), copies the published file to `<path>.next`, migrates the copy and yields it. When
  the session ends the copy is rolled back to its last commit, CHECKPOINTed (no WAL left), closed,
  fsynced and renamed over the published file (`os.replace`, atomic on POSIX). Readers that
  opened the old file keep reading it; new readers see the new one.
- A writer that dies at any point (SIGKILL, power loss) leaves the published file as it was; the
  next writer discards the half-written copy. The lock is released by the kernel when its holder
  dies, so it never goes stale.
- What a session copies stays small however long the history grows: before it publishes, a
  session moves closed versions to an immutable Parquet segment beside the file
  (`warehouse.segments`); published files only ever list more segments, and a segment a killed
  writer left unlisted is deleted by the next session.

A database URI (MotherDuck's `md:name`), allowed only when the operator opts in, and
`:memory:` are opened directly, as DuckDB does.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from gpuscout.core.errors import DataError
from gpuscout.warehouse import segments
from gpuscout.warehouse.durable import fsync_dir, fsync_file
from gpuscout.warehouse.identity import check_file, check_ownership, check_target, safe_config
from gpuscout.warehouse.migrate import migrate, pending
from gpuscout.warehouse.reader import open_reader

LOCK_SUFFIX = ".lock"
STAGING_SUFFIX = ".next"
COMPACT_SUFFIX = ".compact"
WAL_SUFFIX = ".wal"


class WarehouseBusyError(DataError):
    """Another process (or thread) holds the warehouse's writer lock."""


def _is_uri(target: str) -> bool:
    """A database URI (e.g. MotherDuck's `md:name`, `s3://...`) is passed to DuckDB as it is."""
    head = target.split(":", 1)[0]
    return ":" in target and len(head) > 1 and "/" not in head


def _is_file(target: str) -> bool:
    return target != ":memory:" and not _is_uri(target)


def _real(path: Path | str) -> Path:
    """The published file: symlinks resolved, so the copy is made next to the real file."""
    return Path(os.path.realpath(os.path.abspath(path)))


def _sidecar(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


# -- the writer lock ----------------------------------------------------------------------------

# Locks this process holds: published file -> (owning thread, depth). An flock belongs to an
# open file, so a second flock from the same process on another descriptor would conflict with
# the first; this makes the lock re-entrant for the thread that holds it.
_held: dict[Path, tuple[int, int]] = {}
_held_guard = threading.Lock()


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(lock: Path) -> str:
    try:
        text = lock.read_text("utf-8").strip()
    except OSError:
        text = ""
    return text or "another process"


@contextmanager
def writer_lock(path: Path | str) -> Iterator[None]:
    """Hold the warehouse's writer lock for the block; a no-op for `:memory:` and URIs.

    Re-entrant within one thread (a refresh holds it from its first fetch to its last load, and
    its write session takes it again). Raises `WarehouseBusyError` at once when another process
    or thread holds it: writes are never queued behind, or mixed with, another writer's.
    """
    if not _is_file(str(path)):
        yield
        return
    real = _real(path)
    me = threading.get_ident()
    with _held_guard:
        owner = _held.get(real)
        if owner is not None and owner[0] != me:
            raise WarehouseBusyError(f"warehouse {path} is being written by another thread of "
                                     "this process; try again when it finishes")
        if owner is not None:
            _held[real] = (me, owner[1] + 1)
    if owner is not None:
        try:
            yield
        finally:
            with _held_guard:
                depth = _held[real][1]
                _held[real] = (me, depth - 1)
        return
    lock = _sidecar(real, LOCK_SUFFIX)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DataError(f"cannot take the writer lock {lock}: {_why(exc)}; the warehouse is "
                        "unchanged") from exc
    try:
        if not _try_lock(fd):
            raise WarehouseBusyError(
                f"warehouse {path} is being written by {_holder(lock)}: only one refresh writes "
                "at a time; try again when it finishes (readers are not affected)")
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC\n"
                 .encode())
        with _held_guard:
            _held[real] = (me, 1)
        try:
            yield
        finally:
            with _held_guard:
                del _held[real]
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


# -- connections --------------------------------------------------------------------------------

# Published files with a write session open in this process: sessions do not nest.
_sessions: set[Path] = set()


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _open(target: str, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(target, read_only=read_only, config=safe_config())
    except duckdb.Error as exc:
        raise DataError(f"cannot open warehouse {target}: {_first_line(exc)}") from exc


def _require_current(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """A reader cannot migrate: an older warehouse is named, with what upgrades it, and a
    DuckDB file that is no warehouse at all is named as such."""
    missing = pending(con)
    if not missing:
        return
    tables = con.execute("SELECT count(*) FROM duckdb_tables() WHERE NOT internal "
                         "AND database_name = current_database()").fetchone()
    if len(missing) == len(_all_migrations()) and tables and tables[0]:
        raise DataError(f"{target} is a DuckDB database but not a gpuscout warehouse; pass "
                        "--db a warehouse (or a new path for `gpuscout refresh`)")
    raise DataError(f"the warehouse at {target} predates this gpuscout (it lacks "
                    f"{', '.join(missing)}): run `gpuscout refresh` once to upgrade it")


def _all_migrations() -> list[int]:
    from gpuscout.warehouse.migrate import migration_files

    return [v for v, _ in migration_files()]


@contextmanager
def connect(path: Path | str, *, read_only: bool = False, allow_files: bool = False,
            write_to: Path | None = None, seal_rows: int = segments.SEAL_ROWS,
            ) -> Iterator[duckdb.DuckDBPyConnection]:
    """Yield a connection: read-only on the published file, or a write session (see above).
    `allow_files` leaves a reader's file access on (a user's `sql --allow-files`); `write_to`
    lets a reader's COPY write into that one folder (an export).

    A read-only open of a file that does not exist, or of one an older gpuscout wrote and no
    refresh has migrated since, is a `DataError` (run a refresh) rather than DuckDB's generic
    IO error or a query that fails on a missing column. A write session seals its closed
    versions into a history segment once there are `seal_rows` of them.
    """
    target = str(path)
    if not _is_file(target):
        check_target(target)
        con = _open(target, read_only=read_only)
        try:
            if not read_only:
                migrate(con)
            yield con
            if not read_only:
                con.execute("CHECKPOINT")
        finally:
            con.close()
        return
    check_file(Path(target))
    if read_only:
        if not Path(target).exists():
            raise DataError(f"no warehouse at {target}: run `gpuscout refresh` first (or pass "
                            "--db)")
        con = open_reader(_real(target), allow_files=allow_files, write_to=write_to)
        try:
            _require_current(con, target)
            yield con
        finally:
            con.close()
        return
    with writer_lock(target):
        real = _real(target)
        if real in _sessions:
            raise DataError(f"a write session on {target} is already open in this process")
        _sessions.add(real)
        try:
            with _write_session(real, seal_rows) as con:
                yield con
        finally:
            _sessions.discard(real)


def preflight(path: Path | str) -> None:
    """What a write session checks before any work, for a refresh to run before it fetches
    anything: the target is a gpuscout warehouse (or nothing yet) this version can write, with
    its history beside it, in a folder that takes the copy and the rename."""
    target = str(path)
    if not _is_file(target):
        check_target(target)
        return
    check_file(Path(target))
    real = _real(target)
    _check_writable(real)
    if not real.exists():
        return
    con = open_reader(real)
    try:
        check_ownership(con, target)
        segments.present_paths(real, segments.listed_names(con))
    finally:
        con.close()


def _check_writable(real: Path) -> None:
    """The copy is made beside the file and renamed over it: both need the folder writable,
    and an immutable or read-only file cannot be replaced."""
    folder = real.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataError(f"cannot write the warehouse's folder {folder} (read-only or not "
                        "permitted); the warehouse is unchanged")
    if real.exists() and not os.access(real, os.W_OK):
        raise DataError(f"the warehouse {real} cannot be replaced (read-only or immutable); "
                        "the warehouse is unchanged")


@contextmanager
def _write_session(real: Path, seal_rows: int) -> Iterator[duckdb.DuckDBPyConnection]:
    """The copy is published only when the block and the seal end without an error; anything
    raised (a full disk, a missing segment, Ctrl-C) deletes it and leaves the file as it was."""
    staging = _sidecar(real, STAGING_SUFFIX)
    _check_writable(real)
    try:
        _discard(staging)  # a copy a killed writer left behind
        if real.exists():
            _recover_wal(real)
            shutil.copyfile(real, staging)
            shutil.copymode(real, staging)
    except OSError as exc:
        _discard(staging)
        raise DataError(f"cannot copy the warehouse to {staging}: {_why(exc)}; the warehouse "
                        "is unchanged") from exc
    con = _open(str(staging), read_only=False)
    with _discarding(con, staging, real):  # the session's own steps: failures are named
        check_ownership(con, str(real))
        migrate(con)
        segments.discard_unlisted(con, real)  # a killed writer's unpublished segment
        segments.point_view(con, real)
    try:
        yield con
    except BaseException:  # the caller's error, as it is: nothing is published
        con.close()
        _discard(staging)
        raise
    with _discarding(con, staging, real):
        with suppress(duckdb.Error):  # the body left a transaction open: it is rolled back
            con.execute("ROLLBACK")
        sealed = segments.seal(con, real, min_rows=seal_rows)
        con.execute("CHECKPOINT")
    con.close()
    try:
        _publish(_compacted(staging) if sealed else staging, real)
    except (OSError, duckdb.Error) as exc:
        _discard(staging)
        raise DataError(f"publishing the warehouse {real} failed ({_failure(exc)}); the "
                        "warehouse is unchanged") from exc


@contextmanager
def _discarding(con: duckdb.DuckDBPyConnection, staging: Path, real: Path) -> Iterator[None]:
    """A step of the session itself: if it fails, the copy is deleted and a database or OS
    error becomes one DataError line."""
    try:
        yield
    except BaseException as exc:
        con.close()
        _discard(staging)
        if isinstance(exc, duckdb.Error | OSError):
            raise DataError(f"writing the warehouse {real} failed ({_failure(exc)}); nothing "
                            "was published, the warehouse is unchanged") from exc
        raise


def _failure(exc: BaseException) -> str:
    return _why(exc) if isinstance(exc, OSError) else _first_line(exc)


def _publish(staging: Path, real: Path) -> None:
    if _sidecar(staging, WAL_SUFFIX).exists():
        raise DataError(f"warehouse copy {staging} still has a WAL after CHECKPOINT; "
                        "not published, the warehouse is unchanged")
    fsync_file(staging)
    os.replace(staging, real)
    fsync_dir(real.parent)


def _compacted(staging: Path) -> Path:
    """A fresh copy of the staging file, written table by table: after a seal deleted most of
    its rows, the file keeps their blocks (DuckDB does not shrink it in place), and the next
    session would copy them again."""
    target = _sidecar(staging, COMPACT_SUFFIX)
    target.unlink(missing_ok=True)
    con = duckdb.connect(":memory:")
    try:
        con.execute("ATTACH $1 AS src (READ_ONLY)", [str(staging)])
        con.execute("ATTACH $1 AS dst", [str(target)])
        con.execute("COPY FROM DATABASE src TO dst")
        con.execute("DETACH dst")
    finally:
        con.close()
    staging.unlink()
    return target


def _recover_wal(real: Path) -> None:
    """Fold a WAL left next to the published file (by a pre-copy-on-write writer, or another
    tool) into it first, so that the copy holds everything the file holds."""
    if not _sidecar(real, WAL_SUFFIX).exists():
        return
    con = _open(str(real), read_only=False)
    try:
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _discard(staging: Path) -> None:
    compact = _sidecar(staging, COMPACT_SUFFIX)
    for p in (staging, _sidecar(staging, WAL_SUFFIX), compact, _sidecar(compact, WAL_SUFFIX)):
        p.unlink(missing_ok=True)


"""Numbered SQL migrations, each applied once in its own transaction and recorded."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migration_files() -> list[tuple[int, Path]]:
    found = []
    for p in sorted(MIGRATIONS_DIR.iterdir()):
        m = _NAME.match(p.name)
        if m:
            found.append((int(m.group(1)), p))
    versions = [v for v, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration numbers in {MIGRATIONS_DIR}")
    return found


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending migrations in order; return the names applied (empty when up to date)."""
    con.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL DEFAULT now())""")
    done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for version, path in migration_files():
        if version in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(path.read_text("utf-8"))
            con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                        [version, path.name])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(path.name)
    return applied


def pending(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The migrations a warehouse still lacks, without applying them (a read-only connection
    cannot): all of them when it has no migration table."""
    # Asking for the table directly costs ~1 ms; information_schema would cost several on
    # every read-only open.
    try:
        rows = con.execute("SELECT version FROM schema_migrations").fetchall()
    except duckdb.CatalogException:
        rows = []  # a warehouse no migration has touched
    done = {r[0] for r in rows}
    return [path.name for version, path in migration_files() if version not in done]

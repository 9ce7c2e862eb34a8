"""The one clock: every timestamp gpuscout writes is timezone-aware UTC from here."""

from __future__ import annotations

from datetime import UTC, datetime


def now_utc() -> datetime:
    return datetime.now(UTC)

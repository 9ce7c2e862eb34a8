"""Errors the user or operator can act on. The CLI prints them as one line, without a traceback."""

from __future__ import annotations


class GpuscoutError(Exception):
    """Base of every error gpuscout raises on purpose; `str(err)` is the message shown."""


class UserInputError(GpuscoutError):
    """The command line or an input file is wrong (unknown model, nonsense option, bad path)."""


class DataError(GpuscoutError):
    """Stored or reference data is missing or inconsistent (empty warehouse, stale catalog)."""

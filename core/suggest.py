"""The "did you mean" of a value that names nothing: the known values closest to it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_to(text: str, known: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The known values most like `text` (case-insensitive), best first."""
    by_key = {k.lower(): k for k in known}
    found = difflib.get_close_matches(text.strip().lower(), list(by_key), n=n, cutoff=cutoff)
    return [by_key[k] for k in found]


def did_you_mean(text: str, known: Iterable[str], *, n: int = 3) -> str:
    """"; did you mean: a, b" for the closest known values, or "" when none is close."""
    close = close_to(text, known, n=n)
    return f"; did you mean: {', '.join(close)}" if close else ""

"""Providers that no longer sell what gpuscout reads: retired, or no public prices.

`pipeline/data/provider_lifecycle.csv` holds one sourced row per such provider. A refresh
does not fetch them: it closes their open offers with the reason (their history is kept) and
logs the status, so the nightly run says "retired" instead of failing every night.
"""

from __future__ import annotations

import csv
from datetime import date
from functools import cache
from pathlib import Path
from typing import Literal, cast, get_args

from pydantic import BaseModel, ConfigDict

from gpuscout.core.errors import DataError

LIFECYCLE_CSV = Path(__file__).parent / "data" / "provider_lifecycle.csv"
Lifecycle = Literal["retired", "no_public_prices"]


class ProviderLifecycle(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    status: Lifecycle
    since: date
    source_url: str
    verified_at: date
    notes: str

    @property
    def reason(self) -> str:
        what = "retired" if self.status == "retired" else "publishes no public prices"
        return f"{self.provider} {what} since {self.since} ({self.source_url})"


def _status(text: str, line: int) -> Lifecycle:
    if text not in get_args(Lifecycle):
        raise DataError(f"{LIFECYCLE_CSV.name}:{line}: status {text!r} is not one of "
                        f"{'|'.join(get_args(Lifecycle))}")
    return cast(Lifecycle, text)


def read_lifecycle(path: Path) -> dict[str, ProviderLifecycle]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for line, r in enumerate(rows, start=2):
        try:
            out[r["provider"]] = ProviderLifecycle(
                provider=r["provider"], status=_status(r["status"], line),
                since=date.fromisoformat(r["since"]), source_url=r["source_url"],
                verified_at=date.fromisoformat(r["verified_at"]), notes=r["notes"])
        except ValueError as exc:
            raise DataError(f"{path.name}:{line}: {exc}") from None
    return out


@cache
def lifecycle() -> dict[str, ProviderLifecycle]:
    return read_lifecycle(LIFECYCLE_CSV)

"""Each provider's health at a glance: `gpuscout providers`, `gpuscout.provider_health()` and
the report's health table read it from here.

Per registered provider: its offers now, its last run and last success, whether its data is
stale, its last problem (the newest run that failed, was refused, drifted or was skipped) and
why, how old its newest current price is, and the keys its adapter reads (`CREDENTIALS`):
whether each is set, whether the provider needs it, and what it would add. What a key adds is
data, one sourced row per variable in `pipeline/data/provider_keys.csv`.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path

import duckdb
from pydantic import BaseModel, ConfigDict

from gpuscout.adapters.registry import PROVIDERS, get_adapter
from gpuscout.core.errors import DataError
from gpuscout.pipeline.lifecycle import lifecycle
from gpuscout.pipeline.settings import credentials
from gpuscout.warehouse.queries import fetch_named

KEYS_CSV = Path(__file__).parent / "data" / "provider_keys.csv"
KEY_COLUMNS = ["provider", "variable", "required", "adds", "source"]


class ProviderKey(BaseModel):
    """One credential a provider's adapter reads, and what it is for."""

    model_config = ConfigDict(frozen=True)

    provider: str
    variable: str
    required: bool  # the live fetch is skipped without it
    adds: str
    source: str


def read_keys(path: Path) -> dict[tuple[str, str], ProviderKey]:
    """(provider, variable) -> its row; DataError naming the line of a bad one."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != KEY_COLUMNS:
            raise DataError(f"{path.name}: columns must be {','.join(KEY_COLUMNS)}")
        rows = list(reader)
    out: dict[tuple[str, str], ProviderKey] = {}
    for line, r in enumerate(rows, start=2):
        if r["required"] not in ("yes", "no") or not all(r[c] for c in KEY_COLUMNS):
            raise DataError(f"{path.name}:{line}: every column is needed, required is yes|no")
        key = ProviderKey(provider=r["provider"], variable=r["variable"],
                          required=r["required"] == "yes", adds=r["adds"], source=r["source"])
        if (key.provider, key.variable) in out:
            raise DataError(f"{path.name}:{line}: {key.provider} {key.variable} is listed twice")
        out[(key.provider, key.variable)] = key
    return out


@cache
def provider_keys() -> dict[tuple[str, str], ProviderKey]:
    return read_keys(KEYS_CSV)


class KeyState(BaseModel):
    """A key of one provider, as this process sees it."""

    variable: str
    set: bool
    required: bool
    adds: str

    @property
    def described(self) -> str:
        """'with GCP_API_KEY (needed): the provider itself: ...'."""
        return f"with {self.variable}{' (needed)' if self.required else ''}: {self.adds}"


class ProviderHealth(BaseModel):
    """One provider at a glance (`gpuscout providers`)."""

    provider: str
    source: str  # api | html
    offers: int
    spot_offers: int
    last_status: str  # the last run's status; "never" when it has not run in this warehouse
    last_run_at: datetime | None = None
    last_success_at: datetime | None = None
    stale: bool  # its current offers are its last good data, not tonight's
    unknown_labels: list[str]
    last_error: str | None = None  # the last run's error or note
    last_problem_status: str | None = None  # failed | refused | drift | skipped
    last_problem_at: datetime | None = None
    last_problem_error: str | None = None  # why
    newest_observed_at: datetime | None = None  # capture time of its newest current price
    price_age_days: float | None = None
    # retired | no_public_prices, and why, when pipeline/data/provider_lifecycle.csv lists it:
    # a refresh does not fetch it
    not_fetched: str | None = None
    not_fetched_why: str | None = None
    keys: list[KeyState]

    @property
    def keys_summary(self) -> str:
        """'none', or how many of the keys it reads are set: '1/2 set'."""
        if not self.keys:
            return "none"
        return f"{sum(k.set for k in self.keys)}/{len(self.keys)} set"


def provider_health(con: duckdb.DuckDBPyConnection, *, now: datetime,
                    names: Sequence[str] | None = None,
                    keys_set: Callable[[tuple[str, ...]], Mapping[str, str]] = credentials,
                    ) -> list[ProviderHealth]:
    """Every registered provider (or `names`), those that never ran in this warehouse too.

    `keys_set` says which variables are set (the refresh's own reader by default: the
    environment, or Prefect Secret blocks with GPUSCOUT_SECRET_BLOCKS=1); values are not kept.
    """
    columns, rows = fetch_named(con, "provider_health", {"now": now.isoformat()})
    seen = {row[0]: dict(zip(columns, row, strict=True)) for row in rows}
    ended = lifecycle()
    out = []
    for name in names or list(PROVIDERS):
        adapter = get_adapter(name)
        ran = seen.get(name)
        never = {"offers": 0, "spot_offers": 0, "last_status": "never", "stale": True,
                 "unknown_labels": []}
        end = ended.get(name)
        out.append(ProviderHealth.model_validate({
            **never, **(ran or {}), "provider": name, "source": adapter.SOURCE_KIND,
            "not_fetched": end.status if end else None,
            "not_fetched_why": end.reason if end else None,
            "keys": _keys(name, adapter.CREDENTIALS, keys_set)}))
    return out


def _keys(provider: str, variables: tuple[str, ...],
          keys_set: Callable[[tuple[str, ...]], Mapping[str, str]]) -> list[KeyState]:
    found = keys_set(variables) if variables else {}
    table = provider_keys()
    states = []
    for variable in variables:
        row = table.get((provider, variable))
        if row is None:
            raise DataError(f"{KEYS_CSV.name} has no row for {provider} {variable}: add what "
                            "the key is for")
        states.append(KeyState(variable=variable, set=bool(found.get(variable)),
                               required=row.required, adds=row.adds))
    return states

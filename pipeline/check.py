"""`gpuscout refresh --check`: does every provider still answer in a format we read?

What a platform team runs after deploying, or before trusting a night: each provider is
fetched and parsed exactly as a refresh would, through the same collect step, and nothing is
written (no writer lock, no warehouse write, no archive unless asked). Per provider it says
whether the source was reached, whether its format was recognised, and how many offers came
back against its last good refresh in the warehouse, if there is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import duckdb
import httpx
from pydantic import BaseModel

from gpuscout.adapters.archive import ArchiveWriter, ReplayTransport
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import FetchError, GpuscoutError, MissingCredentialsError, ParseError
from gpuscout.pipeline.lifecycle import lifecycle
from gpuscout.pipeline.quality import hold_back, new_rejects
from gpuscout.pipeline.refresh import (
    Collected,
    CollectOutcome,
    Source,
    describe_error,
    resolve_providers,
    sequential,
    usd_rates,
)
from gpuscout.pipeline.settings import Settings
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import LastGoodLoad, last_good_load, last_loaded_rejects

# What the warehouse says of a provider: its last good load, and the rows its last loaded
# refresh refused (so tonight's new rejects can be told from the usual ones).
_Last = tuple[LastGoodLoad | None, list[tuple[str | None, str]]]

# Fewer offers than this share of the last good refresh is called out (the refresh's own
# collapse gate refuses below `Settings.collapse_ratio`).
SHRINK_WARN = 0.8

Verdict = Literal["ok", "shrunk", "drift", "unreachable", "format_changed", "no_credentials",
                  "incomplete", "retired", "no_public_prices", "error"]


class ProviderCheck(BaseModel):
    provider: str
    verdict: Verdict
    reached: bool
    format_recognized: bool
    offers: int
    last_good_offers: int | None
    unknown_labels: list[str]
    detail: str | None = None


class CheckReport(BaseModel):
    providers: list[ProviderCheck]

    @property
    def healthy(self) -> bool:
        return all(p.verdict in ("ok", "retired", "no_public_prices") for p in self.providers)


def _last_good(db: Path | str | None, names: Sequence[str]) -> dict[str, _Last]:
    if db is None or (isinstance(db, Path) and not db.exists()):
        return {}
    try:
        with connect(db, read_only=True) as con:
            return {n: (last_good_load(con, n), last_loaded_rejects(con, n)) for n in names}
    except (GpuscoutError, duckdb.Error):
        return {}


def _verdict(outcome: CollectOutcome, known: _Last, settings: Settings) -> ProviderCheck:
    last_load, previous = known
    last = last_load.offers if last_load else None
    base = {"provider": outcome.provider, "last_good_offers": last}
    result = outcome.result
    if isinstance(result, Collected):
        offers = len(result.offers)
        detail = "; ".join(result.fetch_errors) or None
        verdict: Verdict = "ok"
        held = hold_back(offers, result.field_coverage,
                         new_rejects(result.parser_rejects, previous), last,
                         last_load.field_coverage if last_load else None, settings,
                         complete=result.complete)
        if held is not None and held.status == "drift":
            verdict, detail = "drift", held.reason  # what a refresh would hold back
        elif not result.complete:
            verdict = "incomplete"
        elif last and offers < SHRINK_WARN * last:
            verdict, detail = "shrunk", f"{offers} offers, {last} at the last good refresh"
        return ProviderCheck(**base, verdict=verdict, reached=True, format_recognized=True,
                             offers=offers, unknown_labels=result.unknown_labels,
                             detail=detail)
    detail = describe_error(outcome.provider, result)
    if isinstance(result, MissingCredentialsError):
        verdict = "no_credentials"
    elif isinstance(result, ParseError):
        verdict = "format_changed"
    elif isinstance(result, FetchError):
        verdict = "unreachable"
    else:
        verdict = "error"
    return ProviderCheck(**base, verdict=verdict, reached=verdict == "format_changed",
                         format_recognized=False, offers=0, unknown_labels=[], detail=detail)


def check(providers: Sequence[str] | None, *, source: Source, db: Path | str | None = None,
          settings: Settings | None = None,
          transport: httpx.BaseTransport | None = None) -> CheckReport:
    """Fetch and parse every provider (or `providers`) as a refresh would; write nothing.

    `transport` overrides the HTTP transport (tests inject faults this way)."""
    names = resolve_providers(providers)
    ended = lifecycle()
    if transport is None and source.replay_dir:
        transport = ReplayTransport(source.replay_dir)
    recorder = ArchiveWriter(source.record_dir) if source.record_dir else None
    settings = settings or Settings()
    collector = sequential(settings=settings, catalog=load_catalog(),
                           transport=transport, recorder=recorder)
    live = [n for n in names if n not in ended]
    last = _last_good(db, live)
    _, fx = usd_rates(db, transport=transport, recorder=recorder)
    by_name = {o.provider: _verdict(o, last.get(o.provider, (None, [])), settings)
               for o in collector(live, source=source, fx=fx.usd_per_unit)}
    checks = []
    for name in names:
        if name in ended:
            checks.append(ProviderCheck(provider=name, verdict=ended[name].status,
                                        reached=False, format_recognized=False, offers=0,
                                        last_good_offers=None, unknown_labels=[],
                                        detail=ended[name].reason))
        else:
            checks.append(by_name[name])
    return CheckReport(providers=checks)

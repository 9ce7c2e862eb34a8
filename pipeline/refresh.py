"""The refresh use case: fetch -> archive -> parse -> normalize -> gates -> load.

Called by the CLI and by the Prefect flow alike. Each provider is refreshed on its own and
commits all-or-nothing: a provider that fails keeps its last good data and is marked stale, and
the run log says why. Nothing here knows a provider's format or holds SQL.
"""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Literal

import duckdb
import httpx
from pydantic import BaseModel

from adapters.archive import ArchiveWriter, ReplayTransport, now_utc
from adapters.base import Adapter
from adapters.errors import FetchError, MissingCredentialsError
from adapters.http import HttpClient
from adapters.registry import PROVIDERS, SNAPSHOTS_DIR, get_adapter
from pipeline.catalog import GPUS_CSV, Catalog, load_catalog
from pipeline.errors import GpuscoutError, UserInputError
from pipeline.fx import FX_SOURCE, fetch_rates, parse_rates
from pipeline.models import Offer, Reject
from pipeline.normalize import USD_ONLY, normalize
from pipeline.profiles import profiles_table
from pipeline.quality import gate_rows, refresh_refusal
from pipeline.settings import Settings, credentials
from warehouse.arrow import offers_to_table
from warehouse.connection import connect
from warehouse.load import (
    RunRecord,
    last_good_count,
    latest_fx_rates,
    merge_offers,
    replace_gpu_catalog,
    replace_provider_profiles,
    store_fx_rates,
    transaction,
    write_quarantine,
    write_run,
)

Mode = Literal["live", "replay"]


@dataclass(frozen=True)
class Source:
    """Where responses come from: the network, or an archive replayed through httpx."""

    mode: Mode
    replay_dir: Path | None = None
    record_dir: Path | None = None

    @classmethod
    def offline(cls, record_dir: Path | None = None) -> Source:
        return cls("replay", SNAPSHOTS_DIR, record_dir)


class FxOutcome(BaseModel):
    """The USD rates a run converted with, and where they came from."""

    as_of: date | None
    usd_per_unit: dict[str, float]
    origin: Literal["fetched", "stored", "usd-only", "given"]
    error: str | None = None


class RunReport(BaseModel):
    run_id: str
    mode: str
    started_at: datetime
    finished_at: datetime
    providers: list[RunRecord]
    fx: FxOutcome | None = None

    @property
    def status(self) -> str:
        """ok: every provider loaded; partial: some did; failed: none did."""
        loaded = [r for r in self.providers if r.status == "ok"]
        if len(loaded) == len(self.providers):
            return "ok"
        return "partial" if loaded else "failed"


ProgressHook = Callable[[str, RunRecord | None], None]


def new_run_id(at: datetime) -> str:
    return f"{at:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def resolve_providers(names: Sequence[str] | None) -> list[str]:
    if not names:
        return list(PROVIDERS)
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise UserInputError(f"unknown provider {', '.join(unknown)}; "
                             f"known: {', '.join(PROVIDERS)}")
    return list(dict.fromkeys(names))


def resolve_fx(con: duckdb.DuckDBPyConnection, *, transport: httpx.BaseTransport | None,
               recorder: ArchiveWriter | None) -> FxOutcome:
    """Tonight's ECB rates, stored; if they cannot be read, the newest stored ones.

    Without any rates only USD offers convert, and the others are quarantined with the reason.
    """
    try:
        with HttpClient(FX_SOURCE, transport=transport, recorder=recorder) as client:
            table = parse_rates(fetch_rates(client))
    except Exception as exc:
        as_of, stored = latest_fx_rates(con)
        return FxOutcome(as_of=as_of, usd_per_unit={**stored, **USD_ONLY},
                         origin="stored" if stored else "usd-only",
                         error=describe_error(FX_SOURCE, exc))
    with transaction(con):
        store_fx_rates(con, as_of=table.as_of, usd_per_unit=table.usd_per_unit,
                       source_url=table.source_url, loaded_at=now_utc())
    return FxOutcome(as_of=table.as_of, usd_per_unit=table.usd_per_unit, origin="fetched")


def refresh(providers: Sequence[str] | None, *, db: Path | str, source: Source,
            settings: Settings | None = None, catalog: Catalog | None = None,
            fx: Mapping[str, float] | None = None, progress: ProgressHook | None = None,
            transport: httpx.BaseTransport | None = None) -> RunReport:
    """Refresh the given providers (all registered ones when None) into the warehouse at `db`.

    `fx` fixes the USD rates (else they are fetched like a provider, see `resolve_fx`);
    `transport` overrides the HTTP transport (tests inject faults this way).
    """
    settings = settings or Settings()
    catalog = catalog or load_catalog()
    names = resolve_providers(providers)
    started = now_utc()
    run_id = new_run_id(started)
    if transport is None and source.mode == "replay":
        assert source.replay_dir is not None
        transport = ReplayTransport(source.replay_dir)
    recorder = ArchiveWriter(source.record_dir) if source.record_dir else None
    records = []
    with connect(db) as con:
        replace_gpu_catalog(con, GPUS_CSV)
        replace_provider_profiles(con, profiles_table())
        fx_outcome = (FxOutcome(as_of=None, usd_per_unit=dict(fx), origin="given")
                      if fx is not None else
                      resolve_fx(con, transport=transport, recorder=recorder))
        for name in names:
            if progress:
                progress(name, None)
            record = refresh_provider(con, name, run_id=run_id, source=source,
                                      transport=transport, recorder=recorder,
                                      settings=settings, catalog=catalog,
                                      fx=fx_outcome.usd_per_unit)
            records.append(record)
            if progress:
                progress(name, record)
    return RunReport(run_id=run_id, mode=source.mode, started_at=started,
                     finished_at=now_utc(), providers=records, fx=fx_outcome)


@dataclass
class Collected:
    """One provider fetched, parsed, normalized and row-gated: ready to load."""

    provider: str
    started_at: datetime
    captures: int
    offers_parsed: int
    offers: list[Offer]
    rejects: list[Reject]
    unknown_labels: list[str]
    complete: bool


def adapter_credentials(adapter: Adapter, mode: Mode) -> dict[str, str]:
    creds = credentials(adapter.CREDENTIALS)
    if mode == "replay":
        # Recorded URLs hold masked secrets, so any placeholder replays the same request.
        creds = {n: creds.get(n, "replay-placeholder") for n in adapter.CREDENTIALS}
    return creds


def collect(name: str, *, source: Source, transport: httpx.BaseTransport | None,
            recorder: ArchiveWriter | None, settings: Settings, catalog: Catalog,
            fx: Mapping[str, float] = USD_ONLY) -> Collected:
    """Fetch (archiving every response), parse, normalize and gate one provider's rows.

    Raises the adapter's error (FetchError, ParseError, MissingCredentialsError) or any other
    exception: the caller decides whether to retry and how to log it.
    """
    started = now_utc()
    adapter = get_adapter(name)
    creds = adapter_credentials(adapter, source.mode)
    with HttpClient(name, transport=transport, recorder=recorder,
                    secrets=tuple(creds.values())) as client:
        captures = adapter.fetch(client, creds)
    parsed = adapter.parse(captures)
    norm = normalize(parsed.offers, catalog, fx)
    gated = gate_rows(norm.offers, settings)
    return Collected(provider=name, started_at=started, captures=len(captures),
                     offers_parsed=len(parsed.offers), offers=gated.offers,
                     rejects=[*parsed.rejects, *norm.rejects, *gated.rejects],
                     unknown_labels=norm.unknown_labels, complete=parsed.complete)


def _finish(provider: str, run_id: str, mode: str, started: datetime, status: str,
            **fields: object) -> RunRecord:
    end = now_utc()
    return RunRecord(run_id=run_id, provider=provider, mode=mode, started_at=started,
                     finished_at=end, duration_s=(end - started).total_seconds(),
                     status=status, **fields)


def load(con: duckdb.DuckDBPyConnection, c: Collected, *, run_id: str, mode: str,
         settings: Settings) -> RunRecord:
    """Gate the refresh as a whole, then merge it: offers, quarantine and run log in one
    transaction. A refused or failed load leaves the stored offers as they were."""
    counts = dict(captures=c.captures, offers_parsed=c.offers_parsed,
                  unknown_labels=c.unknown_labels,
                  observed_at=max((o.observed_at for o in c.offers), default=None))
    refusal = refresh_refusal(len(c.offers), last_good_count(con, c.provider), settings)
    if refusal:
        # The refused offers are kept for review; the stored offers stay as they were.
        held = [Reject(provider=c.provider, offer_key=o.offer_key, reason=f"refused: {refusal}",
                       raw=o.model_dump_json()) for o in c.offers]
        record = _finish(c.provider, run_id, mode, c.started_at, "refused", complete=False,
                         quarantined=len(c.rejects) + len(held),
                         error=f"{c.provider}: {refusal}", **counts)
        with transaction(con):
            write_quarantine(con, [*c.rejects, *held], run_id=run_id, at=record.finished_at)
            write_run(con, record)
        return record
    try:
        with transaction(con):
            merged = merge_offers(con, offers_to_table(c.offers), provider=c.provider,
                                  run_id=run_id, complete=c.complete)
            record = _finish(c.provider, run_id, mode, c.started_at, "ok",
                             complete=c.complete, offers_loaded=len(c.offers),
                             new_offers=merged.new, changed_offers=merged.changed,
                             unchanged_offers=merged.unchanged, closed_offers=merged.closed,
                             quarantined=len(c.rejects), **counts)
            write_quarantine(con, c.rejects, run_id=run_id, at=record.finished_at)
            write_run(con, record)
    except GpuscoutError as exc:
        return record_failure(con, c.provider, exc, run_id=run_id, mode=mode,
                              started=c.started_at, **counts)
    return record


def describe_error(provider: str, exc: BaseException) -> str:
    """The run log's account of a failure: typed errors as they are, anything else located."""
    if isinstance(exc, GpuscoutError):
        return str(exc)
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    loc = f" ({Path(where.filename).name}:{where.lineno})" if where else ""
    return f"{provider}: internal error {type(exc).__name__}: {exc}{loc}"


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: the network or the provider hiccuped, not the data."""
    return isinstance(exc, FetchError) and exc.transient


def record_failure(con: duckdb.DuckDBPyConnection, provider: str, exc: BaseException, *,
                   run_id: str, mode: str, started: datetime, **counts: object) -> RunRecord:
    status = "skipped" if isinstance(exc, MissingCredentialsError) else "failed"
    record = _finish(provider, run_id, mode, started, status, complete=False,
                     error=describe_error(provider, exc), **counts)
    with transaction(con):
        write_run(con, record)
    return record


def refresh_provider(con: duckdb.DuckDBPyConnection, name: str, *, run_id: str, source: Source,
                     transport: httpx.BaseTransport | None, recorder: ArchiveWriter | None,
                     settings: Settings, catalog: Catalog,
                     fx: Mapping[str, float] = USD_ONLY) -> RunRecord:
    started = now_utc()
    try:
        collected = collect(name, source=source, transport=transport, recorder=recorder,
                            settings=settings, catalog=catalog, fx=fx)
    except Exception as exc:  # one provider's failure, whatever it is, never stops the others
        return record_failure(con, name, exc, run_id=run_id, mode=source.mode, started=started)
    return load(con, collected, run_id=run_id, mode=source.mode, settings=settings)

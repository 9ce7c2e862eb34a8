"""The refresh use case: fetch -> archive -> parse -> normalize -> gates -> load.

Called by the CLI and by the Prefect flow alike. Each provider is refreshed on its own and
commits all-or-nothing: a provider that fails keeps its last good data and is marked stale, and
the run log says why. A provider that loads closes only the offers it saw vanish: rows it read
but held back keep their last good version, and its run-log `error` says what was held back.
Nothing here knows a provider's format or holds SQL.

`refresh()` takes the warehouse's writer lock first (a second refresh is refused at once), does
all the network work, then loads every provider in one short write session on a copy of the
warehouse that replaces it when done (warehouse/connection.py): readers are never blocked, and a
refresh killed at any point leaves the warehouse as it was.
"""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import duckdb
import httpx
from pydantic import BaseModel

from gpuscout.adapters.archive import (
    REPLAY_PLACEHOLDER,
    ArchiveWriter,
    Capture,
    ReplayTransport,
)
from gpuscout.adapters.base import Adapter
from gpuscout.adapters.fx import FX_SOURCE, FxTable, fetch_rates, parse_rates
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.redaction import redact_text, remember_secrets
from gpuscout.adapters.registry import PROVIDERS, SNAPSHOTS_DIR, get_adapter
from gpuscout.core.catalog import GPUS_CSV, Catalog, load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import FetchError, GpuscoutError, MissingCredentialsError, UserInputError
from gpuscout.core.models import Offer, Reject
from gpuscout.core.suggest import did_you_mean
from gpuscout.pipeline.lifecycle import ProviderLifecycle, lifecycle
from gpuscout.pipeline.normalize import USD_ONLY, normalize
from gpuscout.pipeline.profiles import profiles_table
from gpuscout.pipeline.quality import (
    ABSURD,
    NO_OFFERS,
    HoldBack,
    field_coverage,
    gate_prices,
    gate_rows,
    hold_back,
    new_rejects,
    reason_kinds,
    unread_rows,
)
from gpuscout.pipeline.recommend.facts import store_facts
from gpuscout.pipeline.settings import Settings, credentials
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect, preflight, writer_lock
from gpuscout.warehouse.load import (
    RunRecord,
    RunStatus,
    close_provider,
    gpu_price_medians,
    last_good_load,
    last_loaded_rejects,
    latest_fx_rates,
    merge_offers,
    open_offer_prices,
    replace_gpu_catalog,
    replace_provider_profiles,
    store_fx_rates,
    transaction,
    write_quarantine,
    write_run,
)

Mode = Literal["live", "replay"]
ENDED = ("retired", "no_public_prices")  # run statuses of providers that no longer sell


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
    def status(self) -> Literal["ok", "partial", "failed"]:
        """ok: every provider loaded everything; partial: some provider failed, was refused or
        loaded with something held back (its run-log `error` says what); failed: none loaded.
        A retired provider (or one without public prices) is neither: it is not counted."""
        live = [r for r in self.providers if r.status not in ENDED]
        loaded = [r for r in live if r.status == "ok"]
        if len(loaded) == len(live) and not any(r.error for r in loaded):
            return "ok"
        return "partial" if loaded else "failed"

    @property
    def not_loaded(self) -> list[RunRecord]:
        """Providers that kept their last good data (failed, refused or skipped)."""
        return [r for r in self.providers if r.status not in ("ok", *ENDED)]


ProgressHook = Callable[[str, RunRecord | None], None]


def new_run_id(at: datetime) -> str:
    return f"{at:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def resolve_providers(names: Sequence[str] | None) -> list[str]:
    if not names:
        return list(PROVIDERS)
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise UserInputError(f"unknown provider {', '.join(unknown)}"
                             f"{did_you_mean(unknown[0], PROVIDERS)}; "
                             f"known: {', '.join(PROVIDERS)}")
    return list(dict.fromkeys(names))


def fetch_fx(*, transport: httpx.BaseTransport | None,
             recorder: ArchiveWriter | None) -> tuple[FxTable | None, FxOutcome]:
    """Tonight's ECB rates from the network (nothing stored yet); None and the error if not."""
    try:
        with HttpClient(FX_SOURCE, transport=transport, recorder=recorder) as client:
            table = parse_rates(fetch_rates(client))
    except Exception as exc:
        return None, FxOutcome(as_of=None, usd_per_unit=dict(USD_ONLY), origin="usd-only",
                               error=describe_error(FX_SOURCE, exc))
    return table, FxOutcome(as_of=table.as_of, usd_per_unit=table.usd_per_unit,
                            origin="fetched")


def store_fx(con: duckdb.DuckDBPyConnection, table: FxTable) -> None:
    with transaction(con):
        store_fx_rates(con, as_of=table.as_of, usd_per_unit=table.usd_per_unit,
                       source_url=table.source_url, loaded_at=now_utc())


def _fallback_fx(failed: FxOutcome, as_of: date | None, stored: Mapping[str, float]) -> FxOutcome:
    return FxOutcome(as_of=as_of, usd_per_unit={**stored, **USD_ONLY},
                     origin="stored" if stored else "usd-only", error=failed.error)


def usd_rates(db: Path | str | None, *, transport: httpx.BaseTransport | None,
              recorder: ArchiveWriter | None) -> tuple[FxTable | None, FxOutcome]:
    """Tonight's rates (the table, to store), else the newest the warehouse holds."""
    table, outcome = fetch_fx(transport=transport, recorder=recorder)
    if table is None:
        outcome = _fallback_fx(outcome, *(_stored_fx(db) if db is not None else (None, {})))
    return table, outcome


def _stored_fx(db: Path | str) -> tuple[date | None, dict[str, float]]:
    """The newest rates in the published warehouse (read-only: no writer is open yet)."""
    try:
        with connect(db, read_only=True) as con:
            return latest_fx_rates(con)
    except (GpuscoutError, duckdb.Error):
        return None, {}


@dataclass(frozen=True)
class CollectOutcome:
    """One provider's collect: what it gave (or raised), and when it started."""

    provider: str
    started_at: datetime
    result: Collected | Exception


class Collector(Protocol):
    """Runs `collect` for every provider and returns one outcome each, in order.

    The CLI collects one provider after another (`sequential`); the Prefect flow submits one
    task per provider with its retries. Whoever collects, `refresh()` holds the writer lock,
    reads the USD rates, loads, and decides the status: one orchestration for every face.
    """

    def __call__(self, names: Sequence[str], *, source: Source,
                 fx: Mapping[str, float]) -> list[CollectOutcome]: ...


def sequential(*, settings: Settings, catalog: Catalog, transport: httpx.BaseTransport | None,
               recorder: ArchiveWriter | None, progress: ProgressHook | None = None,
               ) -> Collector:
    """Collect in this thread, one provider after another, reporting progress."""
    def run(names: Sequence[str], *, source: Source,
            fx: Mapping[str, float]) -> list[CollectOutcome]:
        outcomes = []
        for name in names:
            if progress:
                progress(name, None)
            at = now_utc()
            try:
                result: Collected | Exception = collect(
                    name, source=source, transport=transport, recorder=recorder,
                    settings=settings, catalog=catalog, fx=fx)
            except Exception as exc:  # one provider's failure, whatever it is, never stops
                result = exc  # the others
            outcomes.append(CollectOutcome(name, at, result))
        return outcomes
    return run


def refresh(providers: Sequence[str] | None, *, db: Path | str, source: Source,
            settings: Settings | None = None, catalog: Catalog | None = None,
            fx: Mapping[str, float] | None = None, progress: ProgressHook | None = None,
            transport: httpx.BaseTransport | None = None,
            collector: Collector | None = None) -> RunReport:
    """Refresh the given providers (all registered ones when None) into the warehouse at `db`.

    `fx` fixes the USD rates (else they are fetched like a provider, see `fetch_fx`);
    `transport` overrides the HTTP transport (tests inject faults this way); `collector`
    replaces the sequential collect (the Prefect flow's tasks).
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
    collector = collector or sequential(settings=settings, catalog=catalog, transport=transport,
                                        recorder=recorder, progress=progress)
    # One writer at a time, refused at once: a second refresh must not fetch everything only
    # to find the warehouse taken. Readers are never blocked (see gpuscout.warehouse.connection).
    with writer_lock(db):
        preflight(db)  # a warehouse this run could not publish fails before any fetch
        fx_table: FxTable | None = None
        if fx is not None:
            fx_outcome = FxOutcome(as_of=None, usd_per_unit=dict(fx), origin="given")
        else:
            fx_table, fx_outcome = usd_rates(db, transport=transport, recorder=recorder)
        # The network first, the warehouse after: the write session is only the loads.
        ended = lifecycle()
        collected = collector([n for n in names if n not in ended], source=source,
                              fx=fx_outcome.usd_per_unit)
        records = []
        with connect(db) as con:
            replace_gpu_catalog(con, GPUS_CSV)
            replace_provider_profiles(con, profiles_table())
            if fx_table is not None:
                store_fx(con, fx_table)
            for name in (n for n in names if n in ended):
                records.append(retire(con, ended[name], run_id=run_id, mode=source.mode))
                if progress:
                    progress(name, records[-1])
            for outcome in collected:
                if isinstance(outcome.result, Collected):
                    record = load(con, outcome.result, run_id=run_id, mode=source.mode,
                                  settings=settings)
                else:
                    record = record_failure(con, outcome.provider, outcome.result,
                                            run_id=run_id, mode=source.mode,
                                            started=outcome.started_at)
                records.append(record)
                if progress:
                    progress(outcome.provider, record)
            # after the loads: what a recommendation ranks from, current with what they wrote
            store_facts(con)
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
    parser_rejects: list[Reject]  # rows the adapter could not read, or that are no offer
    unknown_labels: list[str]
    complete: bool
    # Offers that were read but held back: no USD rate, absurd price, implausible size, duplicate.
    held_back: list[Reject] = field(default_factory=list)
    # Requests that failed while the adapter went on without them (redacted messages).
    fetch_errors: list[str] = field(default_factory=list)
    # What the adapter read of the fields the drift gate watches (quality.field_coverage).
    field_coverage: dict[str, float] = field(default_factory=dict)

    @property
    def rejects(self) -> list[Reject]:
        return [*self.parser_rejects, *self.held_back]


def adapter_credentials(adapter: Adapter, mode: Mode) -> dict[str, str]:
    creds = credentials(adapter.CREDENTIALS)
    remember_secrets(creds.values())  # masked in every error text from now on
    if mode == "replay":
        # Recorded URLs hold masked secrets, so any placeholder replays the same request. A key
        # that only switches to a keyed source is left out: the replay takes the keyless path.
        optional: tuple[str, ...] = getattr(adapter, "OPTIONAL_CREDENTIALS", ())
        creds = {n: creds.get(n, REPLAY_PLACEHOLDER) for n in adapter.CREDENTIALS
                 if n not in optional}
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
    fetch_errors = [redact_text(str(e)) for e in client.errors]
    return collected(name, started, captures, fetch_errors, settings=settings, catalog=catalog,
                     fx=fx)


def collected(name: str, started: datetime, captures: Sequence[Capture],
              fetch_errors: list[str], *, settings: Settings, catalog: Catalog,
              fx: Mapping[str, float] = USD_ONLY) -> Collected:
    """Parse, normalize and gate what was fetched of one provider (in one go or in parts)."""
    parsed = get_adapter(name).parse(captures)
    norm = normalize(parsed.offers, catalog, fx)
    gated = gate_rows(norm.offers, settings)
    return Collected(provider=name, started_at=started, captures=len(captures),
                     offers_parsed=len(parsed.offers), offers=gated.offers,
                     parser_rejects=list(parsed.rejects),
                     held_back=[*norm.rejects, *gated.rejects],
                     unknown_labels=norm.unknown_labels, complete=parsed.complete,
                     fetch_errors=fetch_errors, field_coverage=field_coverage(parsed.offers))


def _finish(provider: str, run_id: str, mode: str, started: datetime, status: RunStatus,
            **fields: Any) -> RunRecord:
    end = now_utc()
    return RunRecord(run_id=run_id, provider=provider, mode=mode, started_at=started,
                     finished_at=end, duration_s=(end - started).total_seconds(),
                     status=status, **fields)


def load(con: duckdb.DuckDBPyConnection, c: Collected, *, run_id: str, mode: str,
         settings: Settings) -> RunRecord:
    """Gate the refresh as a whole, then merge it: offers, quarantine and run log in one
    transaction. A refused or failed load leaves the stored offers as they were.

    A loaded refresh closes only offers it saw vanish: rows that were read but not loaded keep
    their offer open (see `quality.unread_rows`), and the run log's `error` says what was held
    back or not read.
    """
    counts = dict(captures=c.captures, offers_parsed=c.offers_parsed,
                  unknown_labels=c.unknown_labels, field_coverage=c.field_coverage,
                  observed_at=max((o.observed_at for o in c.offers), default=None))
    stored = open_offer_prices(con, c.provider)
    absurd = sum(r.reason.startswith(ABSURD) for r in c.held_back)
    band = gate_prices(c.offers, gpu_price_medians(con), stored, settings, absurd=absurd)
    last, previous = last_good_load(con, c.provider), last_loaded_rejects(con, c.provider)
    refusal = HoldBack("refused", band.refusal) if band.refusal else hold_back(
        len(band.offers), c.field_coverage, new_rejects(c.parser_rejects, previous),
        last.offers if last else None, last.field_coverage if last else None, settings,
        complete=c.complete)
    if refusal and refusal.reason == NO_OFFERS and c.rejects:  # say why nothing is left
        refusal = replace(refusal, reason=f"{refusal.reason}: every row was held back "
                                          f"({reason_kinds(c.rejects)})")
    if refusal:
        # The refused offers are kept for review; the stored offers stay as they were.
        held = [Reject(provider=c.provider, offer_key=o.offer_key,
                       reason=f"refused: {refusal.reason}", raw=o.model_dump_json())
                for o in c.offers]
        unread = f" (not read: {c.fetch_errors[0]})" if c.fetch_errors else ""
        record = _finish(c.provider, run_id, mode, c.started_at, refusal.status, complete=False,
                         quarantined=len(c.rejects) + len(held),
                         error=f"{c.provider}: {refusal.reason}{unread}", **counts)
        with transaction(con):
            write_quarantine(con, [*c.rejects, *held], run_id=run_id, at=record.finished_at)
            write_run(con, record)
        return record
    held_back = [*c.held_back, *band.rejects]
    unread = unread_rows(c.parser_rejects, held_back, previous)
    incoming = {o.offer_key for o in band.offers}
    still_open = set(stored) - incoming
    complete = c.complete
    notes = []
    unseen = still_open - unread.keep_open  # what a complete refresh would close as vanished
    if not c.complete and unseen:  # (an incompleteness that kept nothing open is only logged
        # in `complete`: the data is the same either way)
        cause = f" ({c.fetch_errors[0]})" if c.fetch_errors else ""
        notes.append(f"incomplete: not every page or part of the source was read{cause}, so "
                     f"the {_count(len(unseen), 'offer')} not seen stay open")
    if complete and unread.new_unkeyed and unseen:
        complete = False
        notes.append(f"incomplete: rows the parser could not match to an offer are new since "
                     f"the last good refresh ({unread.new_unkeyed[0]!r}), so the "
                     f"{_count(len(unseen), 'offer')} not seen stay open")
    if held_back:
        notes.append(f"held back {_count(len(held_back), 'row')} (quarantined): "
                     f"{reason_kinds(held_back)}")
    unreadable = (unread.keep_open & still_open) - {r.offer_key for r in held_back}
    if unreadable:
        why = reason_kinds(r for r in c.parser_rejects if r.offer_key in unreadable)
        notes.append(f"kept open {_count(len(unreadable), 'offer')} whose rows could not be "
                     f"read tonight: {why}")
    rejects = [*c.rejects, *band.rejects]
    try:
        with transaction(con):
            merged = merge_offers(con, offers_to_table(band.offers), provider=c.provider,
                                  run_id=run_id, complete=complete, keep_open=unread.keep_open)
            record = _finish(c.provider, run_id, mode, c.started_at, "ok",
                             complete=complete, offers_loaded=len(band.offers),
                             new_offers=merged.new, changed_offers=merged.changed,
                             unchanged_offers=merged.unchanged, closed_offers=merged.closed,
                             quarantined=len(rejects), error="; ".join(notes) or None,
                             **counts)
            write_quarantine(con, rejects, run_id=run_id, at=record.finished_at)
            write_run(con, record)
    except GpuscoutError as exc:
        return record_failure(con, c.provider, exc, run_id=run_id, mode=mode,
                              started=c.started_at, **counts)
    return record


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def describe_error(provider: str, exc: BaseException) -> str:
    """The run log's account of a failure: typed errors as they are, anything else located."""
    if isinstance(exc, GpuscoutError):
        return redact_text(str(exc))
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    loc = f" ({Path(where.filename).name}:{where.lineno})" if where else ""
    # Any exception may quote what it was handed; known secrets are masked (redaction.py).
    return redact_text(f"{provider}: internal error {type(exc).__name__}: {exc}{loc}")


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: the network or the provider hiccuped, not the data."""
    return isinstance(exc, FetchError) and exc.transient


def retire(con: duckdb.DuckDBPyConnection, ended: ProviderLifecycle, *, run_id: str,
           mode: str) -> RunRecord:
    """A provider that no longer sells: close its open offers, log why. Nothing is fetched."""
    started = now_utc()
    with transaction(con):
        closed = close_provider(con, ended.provider, run_id=run_id, at=started)
        record = _finish(ended.provider, run_id, mode, started, ended.status, complete=True,
                         closed_offers=closed, error=ended.reason)
        write_run(con, record)
    return record


def record_failure(con: duckdb.DuckDBPyConnection, provider: str, exc: BaseException, *,
                   run_id: str, mode: str, started: datetime, **counts: Any) -> RunRecord:
    status = "skipped" if isinstance(exc, MissingCredentialsError) else "failed"
    record = _finish(provider, run_id, mode, started, status, complete=False,
                     error=describe_error(provider, exc), **counts)
    with transaction(con):
        write_run(con, record)
    return record

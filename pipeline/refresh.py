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
from datetime import datetime
from pathlib import Path
from typing import Literal

import duckdb
import httpx
from pydantic import BaseModel

from adapters.archive import ArchiveWriter, ReplayTransport, now_utc
from adapters.errors import AdapterError, MissingCredentialsError
from adapters.http import HttpClient
from adapters.registry import PROVIDERS, SNAPSHOTS_DIR, get_adapter
from pipeline.catalog import GPUS_CSV, Catalog, load_catalog
from pipeline.errors import GpuscoutError, UserInputError
from pipeline.models import Reject
from pipeline.normalize import USD_ONLY, normalize
from pipeline.quality import gate_rows, refresh_refusal
from pipeline.settings import Settings, credentials
from warehouse.arrow import offers_to_table
from warehouse.connection import connect
from warehouse.load import (
    RunRecord,
    last_good_count,
    merge_offers,
    replace_gpu_catalog,
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


class RunReport(BaseModel):
    run_id: str
    mode: str
    started_at: datetime
    finished_at: datetime
    providers: list[RunRecord]

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


def refresh(providers: Sequence[str] | None, *, db: Path | str, source: Source,
            settings: Settings | None = None, catalog: Catalog | None = None,
            fx: Mapping[str, float] = USD_ONLY, progress: ProgressHook | None = None,
            transport: httpx.BaseTransport | None = None) -> RunReport:
    """Refresh the given providers (all registered ones when None) into the warehouse at `db`.

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
        for name in names:
            if progress:
                progress(name, None)
            record = refresh_provider(con, name, run_id=run_id, source=source,
                                      transport=transport, recorder=recorder,
                                      settings=settings, catalog=catalog, fx=fx)
            records.append(record)
            if progress:
                progress(name, record)
    return RunReport(run_id=run_id, mode=source.mode, started_at=started,
                     finished_at=now_utc(), providers=records)


def refresh_provider(con: duckdb.DuckDBPyConnection, name: str, *, run_id: str, source: Source,
                     transport: httpx.BaseTransport | None, recorder: ArchiveWriter | None,
                     settings: Settings, catalog: Catalog,
                     fx: Mapping[str, float] = USD_ONLY) -> RunRecord:
    started = now_utc()
    adapter = get_adapter(name)
    creds = credentials(adapter.CREDENTIALS)
    if source.mode == "replay":
        # Recorded URLs hold masked secrets, so any placeholder replays the same request.
        creds = {n: creds.get(n, "replay-placeholder") for n in adapter.CREDENTIALS}
    run = dict(run_id=run_id, provider=name, mode=source.mode, started_at=started)

    def finish(status: str, **fields: object) -> RunRecord:
        end = now_utc()
        return RunRecord(**run, finished_at=end, duration_s=(end - started).total_seconds(),
                         status=status, **fields)

    captures: list = []
    try:
        with HttpClient(name, transport=transport, recorder=recorder,
                        secrets=tuple(creds.values())) as client:
            captures = adapter.fetch(client, creds)
        parsed = adapter.parse(captures)
    except MissingCredentialsError as exc:
        return _log_failure(con, finish("skipped", complete=False, error=str(exc)))
    except AdapterError as exc:
        return _log_failure(con, finish("failed", complete=False, captures=len(captures),
                                        error=str(exc)))
    except Exception as exc:  # a parser bug must not stop the other providers
        where = traceback.extract_tb(exc.__traceback__)[-1]
        error = (f"{name}: internal error {type(exc).__name__}: {exc} "
                 f"({Path(where.filename).name}:{where.lineno})")
        return _log_failure(con, finish("failed", complete=False, captures=len(captures),
                                        error=error))

    norm = normalize(parsed.offers, catalog, fx)
    gated = gate_rows(norm.offers, settings)
    rejects: list[Reject] = [*parsed.rejects, *norm.rejects, *gated.rejects]
    counts = dict(captures=len(captures), offers_parsed=len(parsed.offers),
                  unknown_labels=norm.unknown_labels,
                  observed_at=max((o.observed_at for o in gated.offers), default=None))
    refusal = refresh_refusal(len(gated.offers), last_good_count(con, name), settings)
    if refusal:
        # The refused offers are kept for review; the stored offers stay as they were.
        held = [Reject(provider=name, offer_key=o.offer_key, reason=f"refused: {refusal}",
                       raw=o.model_dump_json()) for o in gated.offers]
        record = finish("refused", complete=False, quarantined=len(rejects) + len(held),
                        error=f"{name}: {refusal}", **counts)
        with transaction(con):
            write_quarantine(con, [*rejects, *held], run_id=run_id, at=record.finished_at)
            write_run(con, record)
        return record

    try:
        with transaction(con):
            merged = merge_offers(con, offers_to_table(gated.offers), provider=name,
                                  run_id=run_id, complete=parsed.complete)
            record = finish("ok", complete=parsed.complete, offers_loaded=len(gated.offers),
                            new_offers=merged.new, changed_offers=merged.changed,
                            unchanged_offers=merged.unchanged, closed_offers=merged.closed,
                            quarantined=len(rejects), **counts)
            write_quarantine(con, rejects, run_id=run_id, at=record.finished_at)
            write_run(con, record)
    except GpuscoutError as exc:
        return _log_failure(con, finish("failed", complete=False, error=str(exc), **counts))
    return record


def _log_failure(con: duckdb.DuckDBPyConnection, record: RunRecord) -> RunRecord:
    with transaction(con):
        write_run(con, record)
    return record

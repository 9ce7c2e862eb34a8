"""The nightly refresh as a Prefect flow: a thin layer over `gpuscout.pipeline.refresh`.

One task run per provider collects (fetch with archive, parse, normalize, row gates) in
parallel; the loads then run one after another in the flow, because a DuckDB file has one
writer. Retries happen only on transient errors (network, 429, 5xx); a parse error fails the
provider at once. One failing provider never fails the others.

Final state: the flow is Completed when at least one provider loaded (the artifact and the run
log name the stale ones) and Failed when none did.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from gpuscout.adapters.archive import ArchiveWriter, ReplayTransport
from gpuscout.core.catalog import GPUS_CSV, load_catalog
from gpuscout.core.errors import GpuscoutError
from gpuscout.flows.run_summary import run_summary_markdown
from gpuscout.pipeline.profiles import profiles_table
from gpuscout.pipeline.refresh import (
    Collected,
    Source,
    collect,
    is_transient,
    load,
    new_run_id,
    record_failure,
    resolve_fx,
    resolve_providers,
)
from gpuscout.pipeline.settings import Settings
from gpuscout.report import publish_report
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import replace_gpu_catalog, replace_provider_profiles
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import wait

# A provider that has not answered in 10 minutes is stuck; the HTTP client's own retries and
# timeouts (30 s read, 4 attempts) fit well inside it.
PROVIDER_TIMEOUT_S = 600
# Staggered: a short blip, a rate-limit window, a provider restarting.
RETRY_DELAYS_S = [30, 120, 600]


class RefreshFailed(GpuscoutError):
    """No provider loaded: the flow run is marked Failed (the run log says why per provider)."""


def _retry_only_transient(task: Any, task_run: Any, state: Any) -> bool:
    try:
        state.result()
    except Exception as exc:
        return is_transient(exc)
    return False


@task(name="collect", task_run_name="collect {provider}", retries=len(RETRY_DELAYS_S),
      retry_delay_seconds=RETRY_DELAYS_S, retry_condition_fn=_retry_only_transient,
      timeout_seconds=PROVIDER_TIMEOUT_S, cache_policy=NO_CACHE, persist_result=False)
def collect_provider(provider: str, source: Source, fx: dict[str, float]) -> Collected:
    """Fetch, archive, parse, normalize and gate one provider (the CLI calls `collect` too)."""
    transport, recorder = _io(source)
    return collect(provider, source=source, transport=transport, recorder=recorder,
                   settings=Settings(), catalog=load_catalog(), fx=fx)


def _io(source: Source) -> tuple[ReplayTransport | None, ArchiveWriter | None]:
    transport = ReplayTransport(source.replay_dir) if source.replay_dir else None
    recorder = ArchiveWriter(source.record_dir) if source.record_dir else None
    return transport, recorder


def night_archive(archive_root: str | None, night: str) -> Path | None:
    """Where a night's raw responses go: <archive_root>/<YYYY-MM-DD>/<provider>/..."""
    return Path(archive_root) / night if archive_root else None


@flow(name="nightly-refresh", flow_run_name="nightly-refresh {night}")
def nightly_refresh(providers: list[str] | None = None, db: str | None = None,
                    archive_root: str | None = "var/archive", offline: bool = False,
                    replay_dir: str | None = None, night: str | None = None,
                    report_root: str | None = "var/report") -> Any:
    """Refresh every provider (or `providers`) into the warehouse `db`.

    `offline` replays the bundled snapshots, `replay_dir` any archive; otherwise it fetches
    live. Each night's responses are archived under `archive_root/<night>/` for replay, and
    the HTML report is published to `report_root/<night>/index.html`.
    """
    logger = get_run_logger()
    names = resolve_providers(providers)
    settings = Settings()
    night = night or f"{datetime.now(UTC):%Y-%m-%d}"
    record_dir = night_archive(archive_root, night)
    if offline:
        source = Source.offline(record_dir)
    elif replay_dir:
        source = Source("replay", Path(replay_dir), record_dir)
    else:
        source = Source("live", None, record_dir)
    db_path = db or str(settings.db)
    run_id = new_run_id(datetime.now(UTC))

    with connect(db_path) as con:
        replace_gpu_catalog(con, GPUS_CSV)
        replace_provider_profiles(con, profiles_table())
        transport, recorder = _io(source)
        fx = resolve_fx(con, transport=transport, recorder=recorder)
    if fx.error:
        logger.warning("USD rates: %s (%s)", fx.origin, fx.error)
    futures = [collect_provider.with_options(tags=[f"provider:{name}"]).submit(
        name, source, fx.usd_per_unit) for name in names]
    wait(futures)
    records = []
    with connect(db_path) as con:
        for name, future in zip(names, futures, strict=True):
            outcome = future.result(raise_on_failure=False)
            if isinstance(outcome, Collected):
                record = load(con, outcome, run_id=run_id, mode=source.mode, settings=settings)
            else:
                record = record_failure(con, name, outcome, run_id=run_id, mode=source.mode,
                                        started=datetime.now(UTC))
            logger.info("%s: %s, %d offers%s", name, record.status, record.offers_loaded,
                        f" ({record.error})" if record.error else "")
            records.append(record)
        summary = run_summary_markdown(con, run_id)
    if report_root:
        # read-only: it runs after the write connection above is closed. A report that cannot
        # be built is logged; it never fails a refresh that loaded data.
        try:
            page = publish_report(db_path, Path(report_root), date.fromisoformat(night))
            summary += f"\n## Report\n\n[{page}]({page.resolve().as_uri()})\n"
        except Exception as exc:
            logger.warning("report not published: %s", exc)
            summary += f"\n## Report\n\nnot published: {exc}\n"
    create_markdown_artifact(key="nightly-refresh-summary", markdown=summary,
                             description=f"gpuscout refresh {run_id}")
    loaded = [r for r in records if r.status == "ok"]
    result = {"run_id": run_id, "night": night, "archive": str(record_dir) if record_dir else None,
              "status": "ok" if len(loaded) == len(records) else "partial" if loaded else "failed",
              "providers": {r.provider: r.status for r in records},
              "offers_loaded": sum(r.offers_loaded for r in records)}
    if not loaded:
        raise RefreshFailed(f"no provider loaded in run {run_id}: {result['providers']}")
    return result


if __name__ == "__main__":
    import json
    import sys

    # Run the whole flow once, locally, on the bundled snapshots (the README's flow command).
    offline = "--live" not in sys.argv
    print(json.dumps(nightly_refresh(offline=offline), indent=1))

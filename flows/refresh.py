"""The nightly refresh as a Prefect flow: Prefect's concerns around `pipeline.refresh.refresh`.

The flow calls the same refresh use case as `gpuscout refresh` (the same writer lock, USD
rates, loads and status rules) and adds only what Prefect is for: one task run per provider
that collects (fetch with archive, parse, normalize, row gates) in parallel, with retries on
transient errors (network, 429, 5xx) and a timeout; tags; the run summary as an artifact; the
HTML report's link. A parse error fails its provider at once, and one failing provider never
fails the others.

Final state: Completed when at least one provider loaded (the artifact and the run log name
the stale ones), Failed when none did or when another refresh holds the warehouse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import wait

from gpuscout.adapters.archive import ArchiveWriter, ReplayTransport
from gpuscout.core.catalog import load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import GpuscoutError
from gpuscout.flows.run_summary import run_summary_markdown
from gpuscout.pipeline.refresh import (
    Collected,
    CollectOutcome,
    Source,
    collect,
    is_transient,
    refresh,
)
from gpuscout.pipeline.settings import Settings
from gpuscout.report import publish_report
from gpuscout.warehouse.connection import connect

# A provider that has not answered in 10 minutes is stuck; the HTTP client's own retries and
# timeouts (30 s read, 4 attempts) fit well inside it.
PROVIDER_TIMEOUT_S = 600
# Staggered: a short blip, a rate-limit window, a provider restarting.
RETRY_DELAYS_S: list[float] = [30, 120, 600]


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
    transport = ReplayTransport(source.replay_dir) if source.replay_dir else None
    recorder = ArchiveWriter(source.record_dir) if source.record_dir else None
    return collect(provider, source=source, transport=transport, recorder=recorder,
                   settings=Settings(), catalog=load_catalog(), fx=fx)


def in_tasks(names: Sequence[str], *, source: Source,
             fx: Mapping[str, float]) -> list[CollectOutcome]:
    """The refresh's collector: one Prefect task run per provider, all at once."""
    started = now_utc()
    futures = [collect_provider.with_options(tags=[f"provider:{name}"]).submit(
        name, source, dict(fx)) for name in names]
    wait(futures)
    return [CollectOutcome(name, started, future.result(raise_on_failure=False))
            for name, future in zip(names, futures, strict=True)]


def night_archive(archive_root: str | None, night: str) -> Path | None:
    """Where a night's raw responses go: <archive_root>/<YYYY-MM-DD>/<provider>/..."""
    return Path(archive_root) / night if archive_root else None


def _source(offline: bool, replay_dir: str | None, record_dir: Path | None) -> Source:
    if offline:
        return Source.offline(record_dir)
    if replay_dir:
        return Source("replay", Path(replay_dir), record_dir)
    return Source("live", None, record_dir)


@flow(name="nightly-refresh", flow_run_name="nightly-refresh {night}")
def nightly_refresh(providers: list[str] | None = None, db: str | None = None,
                    archive_root: str | None = "var/archive", offline: bool = False,
                    replay_dir: str | None = None, night: str | None = None,
                    report_root: str | None = "var/report") -> dict[str, Any]:
    """Refresh every provider (or `providers`) into the warehouse `db`.

    `offline` replays the bundled snapshots, `replay_dir` any archive; otherwise it fetches
    live. Each night's responses are archived under `archive_root/<night>/` for replay, and
    the HTML report is published to `report_root/<night>/index.html`.
    """
    logger = get_run_logger()
    night = night or f"{datetime.now(UTC):%Y-%m-%d}"
    record_dir = night_archive(archive_root, night)
    db_path = db or str(Settings().db)
    report = refresh(providers, db=db_path, source=_source(offline, replay_dir, record_dir),
                     collector=in_tasks)
    if report.fx and report.fx.error:
        logger.warning("USD rates: %s (%s)", report.fx.origin, report.fx.error)
    for r in report.providers:
        logger.info("%s: %s, %d offers%s", r.provider, r.status, r.offers_loaded,
                    f" ({r.error})" if r.error else "")
    with connect(db_path, read_only=True) as con:
        summary = run_summary_markdown(con, report.run_id)
    if report_root:
        # A report that cannot be built is logged; it never fails a refresh that loaded data.
        try:
            page = publish_report(db_path, Path(report_root), date.fromisoformat(night))
            summary += f"\n## Report\n\n[{page}]({page.resolve().as_uri()})\n"
        except Exception as exc:
            logger.warning("report not published: %s", exc)
            summary += f"\n## Report\n\nnot published: {exc}\n"
    create_markdown_artifact(key="nightly-refresh-summary", markdown=summary,
                             description=f"gpuscout refresh {report.run_id}")
    result = {"run_id": report.run_id, "night": night,
              "archive": str(record_dir) if record_dir else None, "status": report.status,
              "providers": {r.provider: r.status for r in report.providers},
              "offers_loaded": sum(r.offers_loaded for r in report.providers)}
    if report.status == "failed":
        raise RefreshFailed(f"no provider loaded in run {report.run_id}: {result['providers']}")
    return result


if __name__ == "__main__":
    import json
    import sys

    # Run the whole flow once, locally, on the bundled snapshots (the README's flow command).
    offline = "--live" not in sys.argv
    print(json.dumps(nightly_refresh(offline=offline), indent=1))

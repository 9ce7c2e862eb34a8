"""The nightly refresh as a Prefect flow: Prefect's concerns around `pipeline.refresh.refresh`.

The flow calls the same refresh use case as `gpuscout refresh` (the same writer lock, USD
rates, loads and status rules) and adds only what Prefect is for: one task run per provider
that collects (fetch with archive, parse, normalize, row gates) in parallel, with retries on
transient errors (network, 429, 5xx) and a timeout; the run summary as an artifact; the
HTML report's link. A parse error fails its provider at once, and one failing provider never
fails the others.

Task runs carry no tags: Prefect acquires a concurrency slot (an API round trip per task run)
for every tag, and on a Dask worker thread that acquisition could wait for ever; the task run
names carry the provider instead. Collecting has a deadline: a provider still running after
`COLLECT_DEADLINE_S` is recorded as failed, the others load, and the run ends Failed naming it.

Final state: Completed when at least one provider loaded (the artifact and the run log name
the stale ones), Failed when none did, when a provider was stuck, or when another refresh
holds the warehouse.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal, cast

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from prefect.task_runners import ThreadPoolTaskRunner

from gpuscout.adapters.archive import ArchiveWriter, ReplayTransport
from gpuscout.core.catalog import load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import GpuscoutError
from gpuscout.flows.run_summary import run_summary_markdown
from gpuscout.pipeline.collect_parts import Fetched, Head, fetch_head, fetch_one, finish, in_parts
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
# timeouts (30 s read, 4 attempts) fit well inside it. It sizes the collect deadline below:
# the tasks carry no Prefect timeout, which cannot interrupt a task in a worker thread (Prefect
# says so at every task run) and starts a watcher thread per task run.
PROVIDER_TIMEOUT_S = 600
# Staggered: a short blip, a rate-limit window, a provider restarting.
RETRY_DELAYS_S: list[float] = [30, 120, 600]
# Every attempt timing out, with every retry delay: after this a collect is stuck, not slow.
COLLECT_DEADLINE_S = PROVIDER_TIMEOUT_S * (len(RETRY_DELAYS_S) + 1) + sum(RETRY_DELAYS_S) + 60
# `python -m gpuscout.flows.refresh` stops a run still going after this (flows/supervisor.py).
RUN_DEADLINE_S = COLLECT_DEADLINE_S + 1800


class RefreshFailed(GpuscoutError):
    """No provider loaded, or one was stuck: the flow run is marked Failed (the run log says
    why per provider)."""


class CollectStuck(GpuscoutError):
    """A provider's collect did not finish by the deadline (recorded as that provider's error)."""


def _retry_only_transient(task: Any, task_run: Any, state: Any) -> bool:
    try:
        state.result()
    except Exception as exc:
        return is_transient(exc)
    return False


def _transport(source: Source) -> ReplayTransport | None:
    return ReplayTransport(source.replay_dir) if source.replay_dir else None


def _recorder(source: Source) -> ArchiveWriter | None:
    return ArchiveWriter(source.record_dir) if source.record_dir else None


@task(name="collect", task_run_name="collect {provider}", retries=len(RETRY_DELAYS_S),
      retry_delay_seconds=RETRY_DELAYS_S, retry_condition_fn=_retry_only_transient,
      cache_policy=NO_CACHE, persist_result=False)
def collect_provider(provider: str, source: Source, fx: dict[str, float]) -> Collected:
    """Fetch, archive, parse, normalize and gate one provider (the CLI calls `collect` too)."""
    return collect(provider, source=source, transport=_transport(source),
                   recorder=_recorder(source), settings=Settings(), catalog=load_catalog(), fx=fx)


@task(name="collect-head", task_run_name="collect {provider} (indexes)",
      retries=len(RETRY_DELAYS_S), retry_delay_seconds=RETRY_DELAYS_S,
      retry_condition_fn=_retry_only_transient, cache_policy=NO_CACHE, persist_result=False)
def collect_head(provider: str, source: Source) -> Head:
    """What every part of a provider fetched in parts needs (AWS: the two indexes)."""
    return fetch_head(provider, source=source, transport=_transport(source),
                      recorder=_recorder(source))


@task(name="collect-part", task_run_name="collect {provider} {part}",
      retries=len(RETRY_DELAYS_S), retry_delay_seconds=RETRY_DELAYS_S,
      retry_condition_fn=_retry_only_transient, cache_policy=NO_CACHE, persist_result=False)
def collect_part(provider: str, head: Head, part: str, source: Source) -> Fetched:
    """One part of a provider (AWS: one region's offer file, or the spot feeds)."""
    return fetch_one(provider, head, part, source=source, transport=_transport(source),
                     recorder=_recorder(source))


@task(name="collect-parse", task_run_name="parse {provider}", cache_policy=NO_CACHE,
      persist_result=False)
def parse_parts(provider: str, head: Head, parts: list[Fetched],
                fx: dict[str, float]) -> Collected:
    """Parse, normalize and gate a provider fetched in parts, as one."""
    return finish(provider, head, parts, settings=Settings(), catalog=load_catalog(), fx=fx)


def in_tasks(names: Sequence[str], *, source: Source, fx: Mapping[str, float],
             deadline_s: float | None = None) -> list[CollectOutcome]:
    """The refresh's collector: one Prefect task run per provider, all at once; a provider
    whose adapter fetches in parts (AWS) gets a task per part (region), then one that parses
    them together, so its regions download side by side. A provider not done by the deadline
    (`COLLECT_DEADLINE_S` from the start) gets a `CollectStuck` outcome."""
    started = now_utc()
    end = time.monotonic() + (COLLECT_DEADLINE_S if deadline_s is None else deadline_s)
    futures: dict[str, PrefectFuture[Any]] = {}
    heads: dict[str, PrefectFuture[Head]] = {}
    for name in names:
        if in_parts(name):
            heads[name] = collect_head.submit(name, source)
        else:
            futures[name] = collect_provider.submit(name, source, dict(fx))
    for name, head_future in heads.items():
        if not _finished(head_future, end) or not head_future.state.is_completed():
            futures[name] = head_future  # the indexes failed: nothing else can be fetched
            continue
        head = head_future.result()
        parts = [collect_part.submit(name, head, part, source) for part in head.parts]
        futures[name] = parse_parts.submit(
            name, head, parts, dict(fx))  # type: ignore[arg-type]  # futures resolve to parts
    return [CollectOutcome(name, started, futures[name].result(raise_on_failure=False)
                           if _finished(futures[name], end) else _stuck(name, futures[name]))
            for name in names]


def _finished(future: PrefectFuture[Any], end: float) -> bool:
    """Wait for the task run until `end` (a monotonic time); whether it reached a final state."""
    future.wait(timeout=max(0.0, end - time.monotonic()))
    return future.state.is_final()


def _stuck(name: str, future: PrefectFuture[Any]) -> CollectStuck:
    return CollectStuck(f"{name}: collect did not finish by the deadline (task run "
                        f"{future.task_run_id}, state {future.state.name}); recorded as "
                        "failed, its last good data kept")


TaskRunnerName = Literal["threads", "dask"]


def task_runner(name: TaskRunnerName = "threads", *, dask_address: str | None = None,
                workers: int = 2) -> Any:
    """The runner the collect tasks run on: Prefect's thread pool, or Dask (prefect-dask):
    an existing cluster at `dask_address`, else a local one on loopback with `workers`
    in-process workers (captures pass between tasks in memory).

    The local cluster's workers do not profile: a worker samples every thread's stack
    (`sys._current_frames`) every 10 ms, and on CPython 3.11 before 3.11.9 that call can
    deadlock against the GIL (python/cpython#116969, fixed by #117332), which hung one Dask run
    in ten here with every thread waiting. A remote cluster's workers are configured where
    they run (`distributed.worker.profile.enabled: false`)."""
    if name == "threads":
        return ThreadPoolTaskRunner()
    import dask.config
    from prefect_dask.task_runners import DaskTaskRunner  # only a Dask run imports it

    if dask_address:
        return DaskTaskRunner(address=dask_address)
    dask.config.set({"distributed.worker.profile.enabled": False})
    return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 4,
                                          "processes": False, "protocol": "tcp",
                                          "host": "127.0.0.1",
                                          "dashboard_address": None})


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
    stuck = [r.provider for r in report.providers if r.error and "by the deadline" in r.error]
    if stuck:
        raise RefreshFailed(f"run {report.run_id}: {', '.join(stuck)} did not finish collecting "
                            "by the deadline (the other providers loaded)")
    return result


def run_nightly(runner: TaskRunnerName = "threads", *, dask_address: str | None = None,
                **params: Any) -> dict[str, Any]:
    """The nightly flow on the chosen task runner (`nightly_refresh`'s parameters as keywords)."""
    on = nightly_refresh.with_options(task_runner=task_runner(runner, dask_address=dask_address))
    return cast(dict[str, Any], on(**params))


def main(argv: Sequence[str]) -> int:
    """`python -m gpuscout.flows.refresh [--dask] [--live]`: the whole flow once, locally, on
    the bundled snapshots (the README's flow command); --dask runs the collect tasks on a local
    Dask cluster, --live fetches live. The flow runs in a supervised child process
    (flows/supervisor.py): SIGTERM or Ctrl-C ends it within seconds, and so does its deadline.
    """
    if "--child" not in argv:
        from gpuscout.flows.supervisor import run_supervised

        # Prefect's temporary API server gets 20 s to start by default: too short on a loaded
        # machine, where the run then fails before its first task. Read when prefect loads,
        # so it is set for the child before it starts.
        os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
        command = [sys.executable, "-m", "gpuscout.flows.refresh", "--child", *argv]
        return run_supervised(command, deadline_s=RUN_DEADLINE_S)
    from gpuscout.flows.supervisor import end_with_parent

    end_with_parent()
    try:
        result = run_nightly("dask" if "--dask" in argv else "threads",
                             offline="--live" not in argv)
    except Exception as exc:  # one line, as from the CLI; the warehouse is as it was
        first = (str(exc).strip().splitlines() or [""])[0]
        text = first if isinstance(exc, GpuscoutError) else f"{type(exc).__name__}: {first}"
        print(f"error: the flow run failed: {text}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    # os._exit: a worker thread stuck in a library call must not keep the process alive.
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

"""Shared pieces of the reliability tests (imported by basename; not a test module).

`SnapshotServer` is an httpx transport that answers like the providers' servers would, from the
bundled recorded snapshots, a given time later than they were recorded; a `Fault` rewrites the
answers to the requests it targets (an exception, a status, a rewritten body). Refreshes run in
live mode through it, so every byte goes through the real HTTP client, adapters and pipeline.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from gpuscout.adapters.archive import FETCHED_AT_EXTENSION, ReplayTransport, load_captures
from gpuscout.adapters.fx import parse_rates
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.pipeline.refresh import RunReport, Source, refresh
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.segments import copy_warehouse

NIGHT = timedelta(days=1)

Action = Callable[[httpx.Request, Callable[[], httpx.Response]], httpx.Response]


def snapshot_fx() -> dict[str, float]:
    """The bundled ECB rates (EUR, GBP, ... in USD), as a refresh would have fetched them."""
    return dict(parse_rates(load_captures(SNAPSHOTS_DIR, "_fx")).usd_per_unit)


@dataclass
class Fault:
    """Rewrite the answer to every request `target` matches (each retry too)."""

    target: Callable[[httpx.Request], bool]
    action: Action
    hits: int = 0


@dataclass
class SnapshotServer(httpx.BaseTransport):
    """The bundled snapshots served as live answers, `shift` after they were recorded."""

    shift: timedelta = timedelta(0)
    fault: Fault | None = None
    requests: list[httpx.Request] = field(default_factory=list)
    root: Path = SNAPSHOTS_DIR

    def __post_init__(self) -> None:
        self._replay = ReplayTransport(self.root)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.fault is not None and self.fault.target(request):
            self.fault.hits += 1
            return self.fault.action(request, lambda: self.recorded(request))
        return self.recorded(request)

    def recorded(self, request: httpx.Request) -> httpx.Response:
        """The recorded answer (a FetchError, like the replay, when there is none)."""
        r = self._replay.handle_request(request)
        fetched = datetime.fromisoformat(r.extensions[FETCHED_AT_EXTENSION]) + self.shift
        # A plain in-memory response: the body is whatever the fault makes of it, never the
        # archived file read in place.
        return httpx.Response(r.status_code, headers=r.headers, content=r.read(),
                              request=request,
                              extensions={FETCHED_AT_EXTENSION: fetched.isoformat()})


# -- actions ------------------------------------------------------------------------------------


def raises(exc: Callable[[httpx.Request], Exception]) -> Action:
    def act(request: httpx.Request, recorded: Callable[[], httpx.Response]) -> httpx.Response:
        raise exc(request)
    return act


def answers(status: int, headers: dict[str, str] | None = None, body: bytes = b"") -> Action:
    def act(request: httpx.Request, recorded: Callable[[], httpx.Response]) -> httpx.Response:
        return httpx.Response(status, headers=headers, content=body, request=request)
    return act


def rewrites(transform: Callable[[bytes], bytes]) -> Action:
    def act(request: httpx.Request, recorded: Callable[[], httpx.Response]) -> httpx.Response:
        base = recorded()
        return httpx.Response(base.status_code, headers=base.headers,
                              content=transform(base.content), request=request,
                              extensions=base.extensions)
    return act


def json_edit(edit: Callable[[Any], object]) -> Callable[[bytes], bytes]:
    """A body transform that edits the JSON document in place (what `edit` returns is ignored)."""
    def transform(body: bytes) -> bytes:
        doc = json.loads(body)
        edit(doc)
        return json.dumps(doc).encode()
    return transform


def json_replace(make: Callable[[Any], Any]) -> Callable[[bytes], bytes]:
    """A body transform that replaces the JSON document with `make(document)`."""
    return lambda body: json.dumps(make(json.loads(body))).encode()


# -- runs and states ----------------------------------------------------------------------------


class NoSleepClient(HttpClient):
    """The HTTP client with its waits recorded instead of slept (Retry-After, backoff)."""

    waits: list[float] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("sleep", NoSleepClient.waits.append)
        super().__init__(*args, **kwargs)


def run_night(db: Path, providers: Sequence[str], server: SnapshotServer,
              fx: dict[str, float], record_dir: Path | None = None) -> RunReport:
    return refresh(list(providers), db=db, source=Source("live", None, record_dir), fx=fx,
                   transport=server)


def copy_db(template: Path, to: Path) -> Path:
    return copy_warehouse(template, to)


def open_versions(db: Path, provider: str) -> dict[str, tuple]:
    """offer_key -> (price_per_hour, currency, gpu_count, valid_from) of the provider's open
    versions."""
    with connect(db, read_only=True) as con:
        rows = con.execute("SELECT offer_key, price_per_hour, currency, gpu_count, valid_from "
                           "FROM offer_versions WHERE provider = ? AND valid_to IS NULL",
                           [provider]).fetchall()
    return {k: tuple(rest) for k, *rest in rows}


def query(db: Path, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    with connect(db, read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


@dataclass
class State:
    """What a refresh left of one provider, read in one read-only connection."""

    open: dict[str, tuple]  # as `open_versions`
    stale: set[bool]  # current_offers.stale values of the provider
    reasons: list[str]  # quarantine reasons of the run
    absurd: list[str]  # current offers priced outside $0.01-$100 per GPU-hour


def inspect(db: Path, provider: str, run_id: str) -> State:
    with connect(db, read_only=True) as con:
        rows = con.execute("SELECT offer_key, price_per_hour, currency, gpu_count, valid_from "
                           "FROM offer_versions WHERE provider = ? AND valid_to IS NULL",
                           [provider]).fetchall()
        stale = con.execute("SELECT DISTINCT stale FROM current_offers WHERE provider = ?",
                            [provider]).fetchall()
        reasons = con.execute("SELECT reason FROM quarantine WHERE run_id = ? AND provider = ?",
                              [run_id, provider]).fetchall()
        absurd = con.execute("SELECT offer_key FROM current_offers WHERE provider = ? AND NOT "
                             "price_usd_per_gpu_hour BETWEEN 0.01 AND 100", [provider]).fetchall()
    return State(open={k: tuple(rest) for k, *rest in rows}, stale={s for (s,) in stale},
                 reasons=[r for (r,) in reasons], absurd=[k for (k,) in absurd])


# -- two nights that differ: the crash test's old and new states ------------------------------

CRASH_PROVIDERS = ("vastai", "runpod", "lambda", "scaleway")


def _night_b(request: httpx.Request, body: bytes) -> bytes:
    """Night B's answer: prices up 10 % and one offer gone, per provider (Vast.ai: prices)."""
    host, path = request.url.host, request.url.path
    if host == "console.vast.ai":
        # Prices only: the bundled recording answers eight of Vast.ai's slices, so a refresh
        # from it is never complete and closes no offer that is gone.
        doc = json.loads(body)
        doc["offers"] = [{**a, "dph_total": round(a["dph_total"] * 1.1, 6)}
                         for a in doc["offers"]]
        return json.dumps(doc).encode()
    if host == "api.runpod.io":
        doc = json.loads(body)
        types = doc["data"]["gpuTypes"]
        doc["data"]["gpuTypes"] = [
            {**e, "securePrice": round(e["securePrice"] * 1.1, 4)}
            if isinstance(e.get("securePrice"), int | float) else e
            for e in types if e.get("id") != "NVIDIA L40S"]
        return json.dumps(doc).encode()
    if host == "lambda.ai":
        return body.replace(b"$2.99", b"$3.29")
    if path.endswith("/products/servers") and request.url.params.get("page") == "1":
        return body.replace(b'"hourly_price": 2.8665', b'"hourly_price": 3.1')
    return body


def night_b_fault() -> Fault:
    return Fault(lambda r: True, lambda request, recorded: _rewritten(request, recorded()))


def _rewritten(request: httpx.Request, base: httpx.Response) -> httpx.Response:
    return httpx.Response(base.status_code, headers=base.headers,
                          content=_night_b(request, base.content), request=request,
                          extensions=base.extensions)


def open_content(db: Path) -> dict[str, frozenset[tuple]]:
    """provider -> its open offers as (key, price, currency, GPUs, VRAM, region): what a
    provider's state is, whatever night opened each version."""
    with connect(db, read_only=True) as con:
        rows = con.execute("SELECT provider, offer_key, price_per_hour, currency, gpu_count, "
                           "vram_gb, region FROM offer_versions WHERE valid_to IS NULL"
                           ).fetchall()
    out: dict[str, set[tuple]] = {}
    for provider, *rest in rows:
        out.setdefault(provider, set()).add(tuple(rest))
    return {p: frozenset(v) for p, v in out.items()}

"""Collecting one provider in parts, so that a scaled-out refresh fetches each part in a task
of its own (AWS: one per region, and the spot feeds).

An adapter that can be fetched in parts has, besides `fetch`, two functions:

    def fetch_parts(client, creds) -> tuple[list[Capture], list[str]]
        what every part needs (AWS: the offer and region indexes), and the part names
    def fetch_part(client, creds, head, part) -> list[Capture]
        one part's captures; what it cannot read it leaves out (parse() reports incomplete)

`fetch` is those parts fetched in turn, so a provider collected in parts parses exactly the
captures it would have fetched in one go: `finish` hands them to the same `collected` as the
one-task path. Nothing here knows about Prefect; `flows/refresh.py` makes tasks of these steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, cast

import httpx

from gpuscout.adapters.archive import ArchiveWriter, Capture
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.redaction import redact_text
from gpuscout.adapters.registry import get_adapter
from gpuscout.core.catalog import Catalog
from gpuscout.core.clock import now_utc
from gpuscout.pipeline.normalize import USD_ONLY
from gpuscout.pipeline.refresh import Collected, Source, adapter_credentials, collected
from gpuscout.pipeline.settings import Settings


class PartedAdapter(Protocol):
    def fetch_parts(self, client: HttpClient,
                    creds: Any) -> tuple[list[Capture], list[str]]: ...

    def fetch_part(self, client: HttpClient, creds: Any, head: Sequence[Capture],
                   part: str) -> list[Capture]: ...


@dataclass
class Fetched:
    """Captures of one step (the head, or one part) and the requests that failed in it."""

    captures: list[Capture]
    errors: list[str] = field(default_factory=list)


@dataclass
class Head(Fetched):
    started_at: datetime = field(default_factory=now_utc)
    parts: list[str] = field(default_factory=list)


def in_parts(name: str) -> bool:
    """Whether the provider's adapter can be fetched in parts."""
    adapter = get_adapter(name)
    return callable(getattr(adapter, "fetch_parts", None)) and \
        callable(getattr(adapter, "fetch_part", None))


def _parted(name: str) -> PartedAdapter:
    if not in_parts(name):
        raise ValueError(f"{name} cannot be fetched in parts")
    return cast(PartedAdapter, get_adapter(name))


def _client(name: str, source: Source, transport: httpx.BaseTransport | None,
            recorder: ArchiveWriter | None) -> tuple[HttpClient, dict[str, str]]:
    creds = adapter_credentials(get_adapter(name), source.mode)
    return HttpClient(name, transport=transport, recorder=recorder,
                      secrets=tuple(creds.values())), creds


def fetch_head(name: str, *, source: Source, transport: httpx.BaseTransport | None,
               recorder: ArchiveWriter | None) -> Head:
    started = now_utc()
    client, creds = _client(name, source, transport, recorder)
    with client:
        captures, parts = _parted(name).fetch_parts(client, creds)
    return Head(captures=captures, errors=[redact_text(str(e)) for e in client.errors],
                started_at=started, parts=parts)


def fetch_one(name: str, head: Head, part: str, *, source: Source,
              transport: httpx.BaseTransport | None, recorder: ArchiveWriter | None) -> Fetched:
    client, creds = _client(name, source, transport, recorder)
    with client:
        captures = _parted(name).fetch_part(client, creds, head.captures, part)
    return Fetched(captures=captures, errors=[redact_text(str(e)) for e in client.errors])


def finish(name: str, head: Head, parts: Sequence[Fetched], *, settings: Settings,
           catalog: Catalog, fx: dict[str, float] | None = None) -> Collected:
    """The provider's captures in the order `fetch` would have returned them, parsed."""
    captures = [*head.captures, *(c for p in parts for c in p.captures)]
    errors = [*head.errors, *(e for p in parts for e in p.errors)]
    return collected(name, head.started_at, captures, errors, settings=settings,
                     catalog=catalog, fx=fx if fx is not None else dict(USD_ONLY))

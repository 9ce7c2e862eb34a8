"""The raw archive: every response as it came, so parsing can always be replayed.

Layout of an archive directory (the same for `--record DIR`, `--replay DIR` and the bundled
snapshots under `adapters/snapshots/`):

    DIR/<provider>/manifest.json    list of entries, one per response (see `ArchiveEntry`)
    DIR/<provider>/<file>           the response body, byte for byte as received (decoded from
                                    any transfer compression)

A manifest entry keeps the redacted URL, the method, a hash of the request body (GraphQL POSTs
share a URL), the status, selected response headers, the body's sha256 and when it was fetched.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict, Field

from adapters.errors import FetchError
from adapters.redaction import redact_url

MANIFEST = "manifest.json"
# Response headers worth keeping: what the body is, when it changed, and rate-limit state.
# Content-Length and Content-Encoding are dropped: the archived body is already decoded.
KEPT_HEADERS = ("content-type", "date", "etag", "last-modified", "retry-after",
                "x-ratelimit-remaining", "x-ratelimit-reset")
FETCHED_AT_EXTENSION = "gpuscout_fetched_at"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArchiveEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    url: str = Field(description="request URL with secrets masked")
    method: str = "GET"
    request_sha256: str | None = Field(None, description="sha256 of the request body, if any")
    status: int
    headers: dict[str, str] = Field(default_factory=dict)
    file: str
    sha256: str
    fetched_at: datetime
    note: str | None = Field(None, description="provenance remark for bundled snapshots")


class Capture(BaseModel):
    """One recorded response: what parse() reads."""

    model_config = ConfigDict(frozen=True)

    provider: str
    url: str
    method: str = "GET"
    status: int = 200
    headers: dict[str, str] = Field(default_factory=dict)
    body: bytes
    fetched_at: datetime

    @property
    def sha256(self) -> str:
        return sha256(self.body)

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def _slug(url: str) -> str:
    path = re.sub(r"[^A-Za-z0-9]+", "_", url.split("://", 1)[-1].split("?", 1)[0]).strip("_")
    return path[-60:] or "response"


def _extension(content_type: str | None) -> str:
    ct = (content_type or "").lower()
    if "json" in ct:
        return ".json"
    if "html" in ct:
        return ".html"
    if "csv" in ct:
        return ".csv"
    return ".bin"


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_manifest(provider_dir: Path) -> list[ArchiveEntry]:
    path = provider_dir / MANIFEST
    if not path.exists():
        return []
    return [ArchiveEntry.model_validate(e) for e in json.loads(path.read_text("utf-8"))]


class ArchiveWriter:
    """Appends captures to an archive directory; the manifest is rewritten atomically each time."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, capture: Capture, request_sha256: str | None = None) -> ArchiveEntry:
        pdir = self.root / capture.provider
        pdir.mkdir(parents=True, exist_ok=True)
        entries = read_manifest(pdir)
        name = (f"{len(entries):03d}_{_slug(capture.url)}"
                f"{_extension(capture.headers.get('content-type'))}")
        _write_atomic(pdir / name, capture.body)
        entry = ArchiveEntry(url=capture.url, method=capture.method,
                             request_sha256=request_sha256, status=capture.status,
                             headers=capture.headers, file=name, sha256=capture.sha256,
                             fetched_at=capture.fetched_at)
        entries.append(entry)
        payload = json.dumps([e.model_dump(mode="json") for e in entries], indent=1)
        _write_atomic(pdir / MANIFEST, payload.encode("utf-8"))
        return entry


def load_captures(root: Path, provider: str) -> list[Capture]:
    """Every capture of one provider in an archive, oldest first (used by tests and tools)."""
    pdir = root / provider
    return [Capture(provider=provider, url=e.url, method=e.method, status=e.status,
                    headers=e.headers, body=(pdir / e.file).read_bytes(),
                    fetched_at=e.fetched_at)
            for e in sorted(read_manifest(pdir), key=lambda e: e.fetched_at)]


class ReplayTransport(httpx.BaseTransport):
    """Serves recorded responses from an archive so adapters run the same code offline.

    A request matches an entry by method, redacted URL and request-body hash; when several
    captures match, the newest is served. A request with no recording is a terminal FetchError:
    replay never falls through to the network.
    """

    def __init__(self, root: Path, secrets: tuple[str, ...] = ()) -> None:
        self.root = root
        self.secrets = secrets
        self._index: dict[tuple[str, str, str | None], tuple[Path, ArchiveEntry]] = {}
        if not root.is_dir():
            raise FetchError(f"replay archive {root} does not exist", provider="replay",
                             transient=False)
        for pdir in sorted(p for p in root.iterdir() if p.is_dir()):
            for e in sorted(read_manifest(pdir), key=lambda e: e.fetched_at):
                self._index[(e.method, e.url, e.request_sha256)] = (pdir, e)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = redact_url(str(request.url), self.secrets)
        body = request.content
        key = (request.method, url, sha256(body) if body else None)
        hit = self._index.get(key) or self._index.get((request.method, url, None))
        if hit is None:
            raise FetchError("no recorded response for this request in the replay archive "
                             f"{self.root}", provider="replay", url=url, transient=False)
        pdir, entry = hit
        content = (pdir / entry.file).read_bytes()
        if sha256(content) != entry.sha256:
            raise FetchError(f"archived body {entry.file} does not match its sha256",
                             provider=pdir.name, url=url, transient=False)
        return httpx.Response(entry.status, headers=entry.headers, content=content,
                              request=request,
                              extensions={FETCHED_AT_EXTENSION: entry.fetched_at.isoformat()})


def now_utc() -> datetime:
    return datetime.now(UTC)

"""The raw archive: every response as it came, so parsing can always be replayed.

Layout of an archive directory (the same for `--record DIR`, `--replay DIR` and the bundled
snapshots under `adapters/snapshots/`):

    DIR/<provider>/manifest.json    list of entries, one per response (see `ArchiveEntry`)
    DIR/<provider>/<file>           the response body, byte for byte as received (decoded from
                                    any transfer compression)

A manifest entry keeps the redacted URL, the method, a hash of the request body (GraphQL POSTs
share a URL), the status, selected response headers, the body's sha256 and when it was fetched.

Bodies too big for memory (AWS's bulk price list runs to GBs) stay on disk: a `Capture` may hold
`body_path` instead of `body`, readers use `Capture.open()` / `iter_lines()`, and the replay
serves big archived files as a stream.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import uuid
import weakref
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO

import httpx
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from gpuscout.adapters.redaction import redact_url
from gpuscout.core.errors import FetchError

MANIFEST = "manifest.json"
MANIFEST_LOCK = ".manifest.lock"
# Response headers worth keeping: what the body is, when it changed, and rate-limit state.
# Content-Length and Content-Encoding are dropped: the archived body is already decoded.
KEPT_HEADERS = ("content-type", "date", "etag", "last-modified", "retry-after",
                "x-ratelimit-remaining", "x-ratelimit-reset")
FETCHED_AT_EXTENSION = "gpuscout_fetched_at"
# Set by ReplayTransport: the archived file a response comes from, so a streamed download can
# read it in place instead of copying it.
ARCHIVE_PATH_EXTENSION = "gpuscout_archive_path"
STREAM_CHUNK = 1 << 20
# Archived bodies above this size are replayed as a stream, their sha256 checked at the end.
REPLAY_STREAM_MIN_BYTES = 8 << 20
PART_SUFFIX = ".part"
# A recorded response comes from the past; a recorder whose clock ran a little ahead is
# tolerated. Anything later is refused: a capture "from 9999" would make every real refresh
# after it look out of order and lock its provider out.
MAX_CLOCK_SKEW = timedelta(days=1)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(STREAM_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _unlink_quietly(path: Path) -> None:
    path.unlink(missing_ok=True)


class _TemporaryBody:
    """Deletes a temporary body file once no capture (or copy of one) refers to it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        weakref.finalize(self, _unlink_quietly, path)


class ArchiveEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    url: str = Field(description="request URL with secrets masked")
    method: str = "GET"
    request_sha256: str | None = Field(default=None,
                                       description="sha256 of the request body, if any")
    status: int
    headers: dict[str, str] = Field(default_factory=dict)
    file: str
    sha256: str
    fetched_at: datetime
    note: str | None = Field(default=None,
                             description="provenance remark for bundled snapshots")

    @field_validator("file")
    @classmethod
    def _inside_the_archive(cls, v: str) -> str:
        """A body is a file of the provider's own folder, named plainly: never a path."""
        if not v or v in (".", "..") or Path(v).name != v or "\\" in v:
            raise ValueError(f"{v!r} is not a file name inside the archive folder")
        return v

    @field_validator("fetched_at")
    @classmethod
    def _in_the_past(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            raise ValueError("fetched_at must carry its time zone")
        if v > datetime.now(UTC) + MAX_CLOCK_SKEW:
            raise ValueError(f"fetched_at {v.isoformat()} is in the future")
        return v


class Capture(BaseModel):
    """One recorded response: what parse() reads.

    A small body is `body`; a streamed one (`HttpClient.download`) is the file `body_path`, with
    `body` empty. `open()` and `iter_lines()` read either kind without loading a file whole.
    """

    model_config = ConfigDict(frozen=True)

    provider: str
    url: str
    method: str = "GET"
    status: int = 200
    headers: dict[str, str] = Field(default_factory=dict)
    body: bytes = b""
    fetched_at: datetime
    body_path: Path | None = Field(default=None, description="file holding a streamed body")
    body_sha256: str | None = Field(default=None,
                                    description="sha256 of body_path, taken while written")
    # Keeps a temporary body file alive as long as a capture refers to it.
    _temporary: _TemporaryBody | None = PrivateAttr(default=None)

    @property
    def sha256(self) -> str:
        if self.body_path is None:
            return sha256(self.body)
        return self.body_sha256 or sha256_file(self.body_path)

    @property
    def size(self) -> int:
        return self.body_path.stat().st_size if self.body_path is not None else len(self.body)

    def open(self) -> BinaryIO:
        """The body as a binary file object (the caller closes it)."""
        return self.body_path.open("rb") if self.body_path is not None else io.BytesIO(self.body)

    def iter_lines(self, encoding: str = "utf-8") -> Iterator[str]:
        """Text lines with their line endings, read lazily: what `csv.reader` wants."""
        with self.open() as raw, io.TextIOWrapper(raw, encoding=encoding, newline="") as text:
            yield from text

    def read_bytes(self) -> bytes:
        """The whole body in memory: only for bodies known to be small."""
        return self.body_path.read_bytes() if self.body_path is not None else self.body

    def text(self) -> str:
        return self.read_bytes().decode("utf-8", errors="replace")

    def own_temporary_file(self) -> Capture:
        """Delete `body_path` once this capture and its copies are gone (temp downloads)."""
        assert self.body_path is not None
        self._temporary = _TemporaryBody(self.body_path)
        return self


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
    """A provider folder's manifest, every entry validated; a manifest that is not one (cut
    short, a body outside the folder, a capture from the future) is a FetchError naming it."""
    path = provider_dir / MANIFEST
    if not path.exists():
        return []
    try:
        raw = json.loads(path.read_text("utf-8"))
        if not isinstance(raw, list):
            raise ValueError("not a list of entries")
        return [ArchiveEntry.model_validate(e) for e in raw]
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # JSON and pydantic errors too
        raise FetchError(f"archive manifest {path} is unusable: {_why(exc)}",
                         provider=provider_dir.name, transient=False) from exc


def _why(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"entry field {where}: {first['msg']}"
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class ArchiveWriter:
    """Appends captures to an archive directory; the manifest is rewritten atomically each time."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def part_path(self, provider: str) -> Path:
        """A fresh file in the provider's folder for a body being streamed; `write` moves it."""
        pdir = self.root / provider
        pdir.mkdir(parents=True, exist_ok=True)
        return pdir / f".{uuid.uuid4().hex}{PART_SUFFIX}"

    def write(self, capture: Capture, request_sha256: str | None = None) -> ArchiveEntry:
        pdir = self.root / capture.provider
        pdir.mkdir(parents=True, exist_ok=True)
        # Parts of one provider may be fetched at once (threads or processes): the manifest is
        # read, extended and rewritten under an exclusive lock, so no entry is lost.
        with open(pdir / MANIFEST_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._write_locked(pdir, capture, request_sha256)

    def _write_locked(self, pdir: Path, capture: Capture,
                      request_sha256: str | None) -> ArchiveEntry:
        entries = read_manifest(pdir)
        name = (f"{len(entries):03d}_{_slug(capture.url)}"
                f"{_extension(capture.headers.get('content-type'))}")
        if capture.body_path is None:
            _write_atomic(pdir / name, capture.body)
        elif capture.body_path.parent == pdir and capture.body_path.name.endswith(PART_SUFFIX):
            os.replace(capture.body_path, pdir / name)  # our own streamed part: a rename
        else:
            tmp = pdir / f".{name}{PART_SUFFIX}"
            shutil.copyfile(capture.body_path, tmp)
            os.replace(tmp, pdir / name)
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


# What a replay passes for a credential it does not need: recorded URLs hold masked secrets.
REPLAY_PLACEHOLDER = "replay-placeholder"


class ReplayTransport(httpx.BaseTransport):
    """Serves recorded responses from an archive so adapters run the same code offline.

    A request matches an entry by method, redacted URL and request-body hash; when several
    captures match, the newest is served. A request with no recording is a terminal FetchError:
    replay never falls through to the network. The replay placeholder is masked on both sides,
    so a credential in a URL path (a team handle) replays an archive recorded live.
    """

    def __init__(self, root: Path, secrets: tuple[str, ...] = ()) -> None:
        self.root = root
        self.secrets = (*secrets, REPLAY_PLACEHOLDER)
        self._index: dict[tuple[str, str, str | None], tuple[Path, ArchiveEntry]] = {}
        # Provider folders whose manifest is unusable: that provider fails, the others replay.
        self._broken: dict[str, FetchError] = {}
        if not root.is_dir():
            raise FetchError(f"replay archive {root} does not exist", provider="replay",
                             transient=False)
        for pdir in sorted(p for p in root.iterdir() if p.is_dir()):
            try:
                entries = read_manifest(pdir)
            except FetchError as exc:
                self._broken[pdir.name] = exc
                continue
            for e in sorted(entries, key=lambda e: e.fetched_at):
                url = redact_url(e.url, self.secrets)
                self._index[(e.method, url, e.request_sha256)] = (pdir, e)

    def manifest_problem(self, provider: str) -> FetchError | None:
        """Why the provider's recordings cannot be replayed (its manifest), if they cannot."""
        return self._broken.get(provider)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = redact_url(str(request.url), self.secrets)
        body = request.content
        key = (request.method, url, sha256(body) if body else None)
        hit = self._index.get(key) or self._index.get((request.method, url, None))
        if hit is None:
            raise FetchError("no recorded response for this request in the replay archive "
                             f"{self.root}", provider="replay", url=url, transient=False)
        pdir, entry = hit
        path = pdir / entry.file
        if path.is_symlink() or not path.is_file():
            raise FetchError(f"archived body {entry.file} is not a file of the archive folder",
                             provider=pdir.name, url=url, transient=False)
        extensions = {FETCHED_AT_EXTENSION: entry.fetched_at.isoformat(),
                      ARCHIVE_PATH_EXTENSION: str(path)}
        if path.stat().st_size >= REPLAY_STREAM_MIN_BYTES:
            return httpx.Response(entry.status, headers=entry.headers, request=request,
                                  stream=_VerifiedFileStream(path, entry, url),
                                  extensions=extensions)
        content = path.read_bytes()
        if sha256(content) != entry.sha256:
            raise FetchError(f"archived body {entry.file} does not match its sha256",
                             provider=pdir.name, url=url, transient=False)
        return httpx.Response(entry.status, headers=entry.headers, content=content,
                              request=request, extensions=extensions)


class _VerifiedFileStream(httpx.SyncByteStream):
    """An archived file served in chunks; a body that does not match its sha256 fails at the end
    of the stream, before the reader can take it as complete."""

    def __init__(self, path: Path, entry: ArchiveEntry, url: str) -> None:
        self.path = path
        self.entry = entry
        self.url = url

    def __iter__(self) -> Iterator[bytes]:
        digest = hashlib.sha256()
        with self.path.open("rb") as f:
            while chunk := f.read(STREAM_CHUNK):
                digest.update(chunk)
                yield chunk
        if digest.hexdigest() != self.entry.sha256:
            raise FetchError(f"archived body {self.entry.file} does not match its sha256",
                             provider=self.path.parent.name, url=self.url, transient=False)


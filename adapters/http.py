"""The one HTTP client every adapter uses: timeouts, retries, Retry-After, redaction, recording.

Adapters call `client.get(...)` / `client.post_json(...)` and receive a `Capture`. The same code
runs live (httpx's default transport) and offline (`ReplayTransport`), and every final response
is written to the raw archive when a writer is attached. `client.download(...)` is the same GET
for bodies too big for memory: streamed to disk while hashed, in constant memory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from gpuscout.adapters.archive import (
    ARCHIVE_PATH_EXTENSION,
    FETCHED_AT_EXTENSION,
    KEPT_HEADERS,
    PART_SUFFIX,
    STREAM_CHUNK,
    ArchiveWriter,
    Capture,
    sha256,
)
from gpuscout.adapters.redaction import (
    RedactingLogFilter,
    StreamRedactor,
    redact_bytes,
    redact_headers,
    redact_text,
    redact_url,
)
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import AdapterError, FetchError


def _user_agent() -> str:
    """`gpuscout/<version> (GPU price inventory)`: names the tool and its version, and no
    HTTP library (some hosts refuse Python clients' user agents outright)."""
    try:
        version = metadata.version("gpuscout")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        version = "0"
    return f"gpuscout/{version} (GPU price inventory)"


USER_AGENT = _user_agent()
# httpx logs every request URL (INFO): masked like everything else that is kept.
logging.getLogger("httpx").addFilter(RedactingLogFilter())
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
# 408/425/429 and 5xx are worth another try; any other 4xx means the request itself is wrong.
TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_ATTEMPTS = 4
BACKOFF_BASE_S = 1.0
MAX_RETRY_AFTER_S = 120.0


def _retry_after_seconds(response: httpx.Response | None) -> float | None:
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - now_utc()).total_seconds())


class _RetryableStatus(Exception):
    def __init__(self, response: httpx.Response) -> None:
        self.response = response


@dataclass(frozen=True)
class _StreamedBody:
    path: Path
    sha256: str
    temporary: bool  # a temp file of ours, deleted with the last capture that refers to it


_T = TypeVar("_T")


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, _RetryableStatus):
        return True
    if isinstance(exc, FetchError):
        return exc.transient
    return isinstance(exc, httpx.TransportError)  # timeouts, resets, protocol errors


class HttpClient:
    """A per-provider client. `secrets` are masked wherever a URL, header or message is kept."""

    def __init__(self, provider: str, *, transport: httpx.BaseTransport | None = None,
                 recorder: ArchiveWriter | None = None, secrets: tuple[str, ...] = (),
                 timeout: httpx.Timeout = DEFAULT_TIMEOUT, max_attempts: int = MAX_ATTEMPTS,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        # A replay whose recordings of this provider are unusable fails this provider alone.
        problem = getattr(transport, "manifest_problem", None)
        if callable(problem) and isinstance(broken := problem(provider), FetchError):
            raise broken
        self.provider = provider
        self.recorder = recorder
        self.secrets = tuple(s for s in secrets if s)
        self.max_attempts = max_attempts
        self._sleep = sleep
        self._client = httpx.Client(transport=transport, timeout=timeout,
                                    headers={"User-Agent": USER_AGENT}, follow_redirects=True)
        self.requests_made = 0
        # `pace` waits only on the network: a replay or a test's transport is no server to spare.
        self._paced = transport is None
        self._last_sent: float | None = None
        # Every FetchError this client raised, including those an adapter caught to go on
        # without that part (AWS skips a region file it cannot read): the refresh names them in
        # the run log when the result is incomplete.
        self.errors: list[FetchError] = []

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def get(self, url: str, *, params: Mapping[str, Any] | None = None,
            headers: Mapping[str, str] | None = None) -> Capture:
        with self._noting_errors():
            return self._request("GET", url, params=params, headers=headers, content=None)

    def post_json(self, url: str, payload: Any, *, params: Mapping[str, Any] | None = None,
                  headers: Mapping[str, str] | None = None) -> Capture:
        content = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        with self._noting_errors():
            return self._request("POST", url, params=params, headers=hdrs, content=content)

    def download(self, url: str, *, params: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None) -> Capture:
        """GET a body of any size without holding it in memory: the capture's `body_path`.

        The body is streamed in chunks to the archive when recording (it is the archived file),
        else to a temporary file deleted once no capture refers to it; a replayed archive file
        is read in place. Retries, statuses and errors are those of `get`; a body cut short is
        retried like any truncated response.
        """
        with self._noting_errors():
            request = self._client.build_request("GET", url, params=params, headers=headers)
            shown_url = redact_url(str(request.url), self.secrets)
            response, body = self._with_retries(self._download_once, request, shown_url, "GET",
                                                None)
            if body is None:  # an error status: its (small) body was read and archived as usual
                self._record(response, shown_url, "GET", None)
                raise FetchError(f"HTTP {response.status_code}", provider=self.provider,
                                 url=shown_url, transient=False, status=response.status_code)
            return self._record_streamed(response, shown_url, body)

    def pace(self, seconds: float) -> None:
        """Wait until `seconds` have passed since this client's last request (on the network
        only): for a source that refuses bursts."""
        if self._paced and self._last_sent is not None:
            wait = seconds - (time.monotonic() - self._last_sent)
            if wait > 0:
                self._sleep(wait)

    def note(self, error: FetchError) -> None:
        """Record a failure the adapter found without raising (a listing it had to stop
        reading): the refresh names it in the run log like the client's own."""
        self.errors.append(error)

    # -- internals -------------------------------------------------------------------------

    @contextmanager
    def _noting_errors(self) -> Iterator[None]:
        try:
            yield
        except FetchError as exc:
            self.errors.append(exc)
            raise

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        response = exc.response if isinstance(exc, _RetryableStatus) else None
        after = _retry_after_seconds(response)
        if after is not None:
            return min(after, MAX_RETRY_AFTER_S)
        return BACKOFF_BASE_S * 2 ** (state.attempt_number - 1)

    def _request(self, method: str, url: str, *, params: Mapping[str, Any] | None,
                 headers: Mapping[str, str] | None, content: bytes | None) -> Capture:
        request = self._client.build_request(method, url, params=params, headers=headers,
                                             content=content)
        shown_url = redact_url(str(request.url), self.secrets)
        response = self._with_retries(self._send_once, request, shown_url, method, content)
        capture = self._record(response, shown_url, method, content)
        if response.status_code >= 400:
            raise FetchError(f"HTTP {response.status_code}", provider=self.provider,
                             url=shown_url, transient=False, status=response.status_code)
        return capture

    def _with_retries(self, send: Callable[[httpx.Request], _T], request: httpx.Request,
                      shown_url: str, method: str, content: bytes | None) -> _T:
        """`send(request)` with the retry policy; what is left after the last try raises."""
        retrying = Retrying(retry=retry_if_exception(_is_transient),
                            stop=stop_after_attempt(self.max_attempts), wait=self._wait,
                            sleep=self._sleep, reraise=True)
        try:
            return retrying(send, request)
        except _RetryableStatus as exc:
            response = exc.response
            self._record(response, shown_url, method, content)
            raise FetchError(f"HTTP {response.status_code} after {self.max_attempts} attempts",
                             provider=self.provider, url=shown_url, transient=True,
                             status=response.status_code) from None
        except httpx.TransportError as exc:
            msg = redact_text(f"{type(exc).__name__}: {exc}", self.secrets)
            raise FetchError(f"{msg} after {self.max_attempts} attempts",
                             provider=self.provider, url=shown_url, transient=True) from None
        except AdapterError:
            raise

    def _send_once(self, request: httpx.Request) -> httpx.Response:
        self.requests_made += 1
        self._last_sent = time.monotonic()
        response = self._client.send(request)
        response.read()  # a truncated body raises httpx.RemoteProtocolError here: transient
        if response.status_code in TRANSIENT_STATUS:
            raise _RetryableStatus(response)
        return response

    def _download_once(self, request: httpx.Request) -> tuple[httpx.Response,
                                                               _StreamedBody | None]:
        self.requests_made += 1
        self._last_sent = time.monotonic()
        response = self._client.send(request, stream=True)
        try:
            if response.status_code >= 400:
                response.read()
                if response.status_code in TRANSIENT_STATUS:
                    raise _RetryableStatus(response)
                return response, None
            archived = response.extensions.get(ARCHIVE_PATH_EXTENSION)
            if archived and self.recorder is None:
                # A replay: the archived file is the body. Streaming it through still checks
                # its sha256 (the replay stream fails at the end on a mismatch).
                digest = hashlib.sha256()
                for chunk in response.iter_bytes(STREAM_CHUNK):
                    digest.update(chunk)
                return response, _StreamedBody(Path(archived), digest.hexdigest(), False)
            target = self._new_body_file()
            try:
                digest = hashlib.sha256()
                redactor = StreamRedactor(self.secrets)
                with target.open("wb") as out:
                    # iter_bytes undoes any Content-Encoding, so the file is the decoded body;
                    # a connection cut short raises here (httpx.RemoteProtocolError: retried).
                    for chunk in response.iter_bytes(STREAM_CHUNK):
                        part = redactor.feed(chunk)  # secrets masked, as in any body
                        digest.update(part)
                        out.write(part)
                    rest = redactor.flush()
                    digest.update(rest)
                    out.write(rest)
            except BaseException:
                target.unlink(missing_ok=True)
                raise
            return response, _StreamedBody(target, digest.hexdigest(), self.recorder is None)
        finally:
            response.close()

    def _new_body_file(self) -> Path:
        if self.recorder is not None:
            return self.recorder.part_path(self.provider)
        fd, name = tempfile.mkstemp(prefix=f"gpuscout-{self.provider}-", suffix=PART_SUFFIX)
        os.close(fd)
        return Path(name)

    def _record_streamed(self, response: httpx.Response, shown_url: str,
                         body: _StreamedBody) -> Capture:
        fetched = response.extensions.get(FETCHED_AT_EXTENSION)
        kept = {k: v for k, v in response.headers.items() if k.lower() in KEPT_HEADERS}
        capture = Capture(provider=self.provider, url=shown_url, method="GET",
                          status=response.status_code,
                          headers=redact_headers(kept, self.secrets), body_path=body.path,
                          body_sha256=body.sha256,
                          fetched_at=datetime.fromisoformat(fetched) if fetched else now_utc())
        if self.recorder is not None:
            entry = self.recorder.write(capture)
            return capture.model_copy(
                update={"body_path": self.recorder.root / self.provider / entry.file})
        return capture.own_temporary_file() if body.temporary else capture

    def _record(self, response: httpx.Response, shown_url: str, method: str,
                content: bytes | None) -> Capture:
        fetched = response.extensions.get(FETCHED_AT_EXTENSION)
        fetched_at = datetime.fromisoformat(fetched) if fetched else now_utc()
        kept = {k: v for k, v in response.headers.items() if k.lower() in KEPT_HEADERS}
        # A body may echo a secret (an error quoting the request, an account listing): masked
        # before the parser, the archive or the quarantine can see it.
        capture = Capture(provider=self.provider, url=shown_url, method=method,
                          status=response.status_code,
                          headers=redact_headers(kept, self.secrets),
                          body=redact_bytes(response.content, self.secrets),
                          fetched_at=fetched_at)
        if self.recorder is not None:
            self.recorder.write(capture, sha256(content) if content else None)
        return capture

"""Masking of secrets in URLs, headers and text before anything is logged, archived or stored."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

MASK = "REDACTED"
MIN_SECRET_LEN = 4  # shorter values are not treated as secrets (they would mask ordinary text)

# Query parameters and headers that carry credentials in the APIs gpuscout reads.
SECRET_PARAMS = frozenset({
    "api_key", "apikey", "api-key", "key", "token", "access_token", "auth", "secret",
    "client_secret", "password", "signature", "sig", "x-amz-signature", "x-amz-credential",
})
SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
    "x-goog-api-key", "x-auth-token",
})


# Every credential value this process has read (see `remember_secrets`): masked wherever text is
# redacted, whichever call site, so that an error raised far from the HTTP client (a message
# quoting a URL, a body, a header) is masked as well.
_remembered: set[str] = set()
_remembered_guard = threading.Lock()


def remember_secrets(values: Iterable[str]) -> None:
    """Mask these values in every later `redact_text` / `redact_bytes` of this process."""
    with _remembered_guard:
        _remembered.update(v for v in values if v and len(v) >= MIN_SECRET_LEN)


def _variants(secret: str) -> set[str]:
    """The secret as it may appear in a URL, a form, or a JSON string."""
    return {secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1]}


def _needles(secrets: Iterable[str]) -> list[str]:
    with _remembered_guard:
        known = {*secrets, *_remembered}
    found = {v for s in known if s and len(s) >= MIN_SECRET_LEN for v in _variants(s)}
    return sorted(found, key=len, reverse=True)  # a longer form before a shorter one inside it


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Replace every occurrence of a known secret value (given or remembered)."""
    for s in _needles(secrets):
        text = text.replace(s, MASK)
    return text


def redact_bytes(data: bytes, secrets: Iterable[str] = ()) -> bytes:
    """`redact_text` for a response body, byte for byte everywhere else."""
    for s in _needles(secrets):
        data = data.replace(s.encode(), MASK.encode())
    return data


class StreamRedactor:
    """`redact_bytes` over a body read in chunks: a secret split across two chunks is caught by
    holding back the last (longest secret - 1) bytes until the next chunk or `flush`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._needles = [s.encode() for s in _needles(secrets)]
        self._keep = max((len(n) for n in self._needles), default=1) - 1
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        if not self._needles:
            return chunk
        data = self._pending + chunk
        for n in self._needles:
            data = data.replace(n, MASK.encode())
        cut = max(0, len(data) - self._keep)
        self._pending = data[cut:]
        return data[:cut]

    def flush(self) -> bytes:
        rest, self._pending = self._pending, b""
        return rest


def redact_url(url: str, secrets: Iterable[str] = ()) -> str:
    """Mask credential query parameters, user info, and any literal secret in the URL."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    if parts.username or parts.password:
        netloc = f"{MASK}@{netloc}"
    query = urlencode(
        [(k, MASK if k.lower() in SECRET_PARAMS else v)
         for k, v in parse_qsl(parts.query, keep_blank_values=True)],
        safe="{}:,[]\"'",
    )
    return redact_text(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)),
                       secrets)


def redact_headers(headers: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    secrets = tuple(secrets)
    return {k.lower(): MASK if k.lower() in SECRET_HEADERS else redact_text(v, secrets)
            for k, v in headers.items()}


_URL = re.compile(r"https?://[^\s\"'<>]+")


class RedactingLogFilter(logging.Filter):
    """Masks secrets in a log record: credential query parameters of any URL in it, and every
    known secret value. httpx logs each request's full URL at INFO, so a key passed as a query
    parameter would reach any log an operator keeps at that level."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record is not ours to fix
            return True
        masked = redact_text(_URL.sub(lambda m: redact_url(m.group(0)), text))
        if masked != text:
            record.msg, record.args = masked, None
        return True

"""Masking of secrets in URLs, headers and text before anything is logged, archived or stored."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "REDACTED"

# Query parameters and headers that carry credentials in the APIs gpuscout reads.
SECRET_PARAMS = frozenset({
    "api_key", "apikey", "api-key", "key", "token", "access_token", "auth", "secret",
    "client_secret", "password", "signature", "sig", "x-amz-signature", "x-amz-credential",
})
SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
    "x-goog-api-key", "x-auth-token",
})


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Replace every literal occurrence of a known secret value."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, MASK)
    return text


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

"""Errors the user or operator can act on. The CLI prints them as one line, without a traceback."""

from __future__ import annotations


class GpuscoutError(Exception):
    """Base of every error gpuscout raises on purpose; `str(err)` is the message shown."""


class UserInputError(GpuscoutError):
    """The command line or an input file is wrong (unknown model, nonsense option, bad path)."""


class DataError(GpuscoutError):
    """Stored or reference data is missing or inconsistent (empty warehouse, stale catalog)."""


class AdapterError(GpuscoutError):
    def __init__(self, message: str, *, provider: str, url: str | None = None) -> None:
        self.provider = provider
        self.url = url
        where = f" ({url})" if url else ""
        super().__init__(f"{provider}: {message}{where}")


class FetchError(AdapterError):
    """The provider could not be read: network, HTTP status, truncated body, missing replay."""

    def __init__(self, message: str, *, provider: str, url: str | None = None,
                 transient: bool, status: int | None = None) -> None:
        self.transient = transient
        self.status = status
        super().__init__(message, provider=provider, url=url)


class MissingCredentialsError(FetchError):
    """A live fetch needs a secret that is not set; the provider is skipped, not failed."""

    def __init__(self, provider: str, variable: str) -> None:
        super().__init__(f"set {variable} to fetch live (replay works without it)",
                         provider=provider, transient=False)
        self.variable = variable


class ParseError(AdapterError):
    """The recorded bytes do not have the shape the parser knows."""

    def __init__(self, message: str, *, provider: str, url: str | None = None,
                 field: str | None = None, snippet: str | None = None) -> None:
        self.field = field
        self.snippet = snippet[:200] if snippet else None
        detail = f" [field {field}]" if field else ""
        super().__init__(f"{message}{detail}", provider=provider, url=url)

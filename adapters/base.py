"""The contract every provider module fulfils.

A provider module (`adapters/<provider>.py`) is a plain module with:

    NAME: str                  the provider id used everywhere (warehouse, CLI, aliases)
    SOURCE_KIND: SourceKind    "api" or "html"
    CREDENTIALS: tuple[str, ...]   environment variables it reads for a live fetch (may be empty);
                                   optional unless fetch() raises MissingCredentialsError
    def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]
    def parse(captures: Sequence[Capture]) -> ParseResult

`fetch` does all the I/O through the shared client (which archives every response) and returns
the captures; `parse` is a pure function of those captures. A bad row becomes a `Reject` with a
reason; a body of the wrong shape raises `ParseError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Protocol

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.http import HttpClient
from gpuscout.core.models import ParsedOffer, ParseResult, Reject

SourceKind = Literal["api", "html"]


class Adapter(Protocol):
    NAME: str
    SOURCE_KIND: SourceKind
    CREDENTIALS: tuple[str, ...]

    def fetch(self, client: HttpClient, creds: Mapping[str, str]) -> list[Capture]: ...

    def parse(self, captures: Sequence[Capture]) -> ParseResult: ...


PageRead = tuple[list[ParsedOffer], list[Reject]] | tuple[list[ParsedOffer], list[Reject], bool]


def newest_wins(captures: Sequence[Capture], read: Callable[[Capture], PageRead]) -> ParseResult:
    """Read every capture, oldest first; when captures repeat an offer key, the newest wins.

    `read` returns a capture's offers and rejects, and optionally whether it was read whole
    (False: the page was cut short, so the result is incomplete and closes nothing).
    """
    newest: dict[str, ParsedOffer] = {}
    rejects: list[Reject] = []
    complete = True
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        offers, bad, *whole = read(capture)
        newest.update((o.offer_key, o) for o in offers)
        rejects.extend(bad)
        complete = complete and (whole[0] if whole else True)
    return ParseResult(offers=list(newest.values()), rejects=rejects, complete=complete)

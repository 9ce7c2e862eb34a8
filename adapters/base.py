"""The contract every provider module fulfils.

A provider module (`adapters/<provider>.py`) is a plain module with:

    NAME: str                  the provider id used everywhere (warehouse, CLI, aliases)
    SOURCE_KIND: SourceKind    "api" or "html"
    CREDENTIALS: tuple[str, ...]   environment variables it reads for a live fetch (may be empty);
                                   optional unless fetch() raises MissingCredentialsError
    OPTIONAL_CREDENTIALS: tuple[str, ...]   (may be left out: none) those of CREDENTIALS that
                                   only switch a keyless source to a keyed one; a replay never
                                   passes them, so it follows the keyless path it has captures of
    def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]
    def parse(captures: Sequence[Capture]) -> ParseResult

`fetch` does all the I/O through the shared client (which archives every response) and returns
the captures; `parse` is a pure function of those captures. A bad row becomes a `Reject` with a
reason; a body of the wrong shape raises `ParseError`. Every format `parse` reads is one that
`fetch` requests (an older layout of the same source included). The helpers the modules share
are in `adapters/toolkit.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.http import HttpClient
from gpuscout.core.models import ParseResult

SourceKind = Literal["api", "html"]


class Adapter(Protocol):
    NAME: str
    SOURCE_KIND: SourceKind
    CREDENTIALS: tuple[str, ...]

    def fetch(self, client: HttpClient, creds: Mapping[str, str]) -> list[Capture]: ...

    def parse(self, captures: Sequence[Capture]) -> ParseResult: ...

"""Refuse every network connection from this process: the anchors must run offline.

`install()` replaces socket connect, connect_ex, create_connection and getaddrinfo with
functions that record the attempt and raise `NetworkBlocked` (a ConnectionRefusedError, so
libraries treat it as an ordinary refused connection). Unix-domain sockets stay allowed (local
IPC, never the network). `attempts()` lists what was refused; the benches report it, and a
non-empty list means a tool tried to reach the network.
"""

from __future__ import annotations

import socket
from typing import Any

_ATTEMPTS: list[str] = []
_INSTALLED = False


class NetworkBlocked(ConnectionRefusedError):
    """A connection the bench refused."""


def _refuse(what: str, target: Any) -> NetworkBlocked:
    _ATTEMPTS.append(f"{what} {target!r}")
    return NetworkBlocked(f"bench: network blocked ({what} {target!r})")


def install() -> None:
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if self.family == socket.AF_UNIX:
            return real_connect(self, address)
        raise _refuse("connect", address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family == socket.AF_UNIX:
            return real_connect_ex(self, address)
        raise _refuse("connect_ex", address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        raise _refuse("create_connection", address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> list[Any]:
        _ATTEMPTS.append(f"getaddrinfo {host!r}")
        raise socket.gaierror(socket.EAI_NONAME, f"bench: network blocked (resolve {host!r})")

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.create_connection = create_connection  # type: ignore[assignment]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]


def attempts() -> list[str]:
    return list(_ATTEMPTS)

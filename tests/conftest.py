"""Shared fixtures. The network is blocked for every test: only loopback connections pass."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else None
    if isinstance(host, str):
        try:
            if ipaddress.ip_address(host).is_loopback:
                return _real_connect(self, address)
        except ValueError:
            if host == "localhost":
                return _real_connect(self, address)
    elif self.family == socket.AF_UNIX:
        return _real_connect(self, address)
    raise RuntimeError(f"network access blocked in tests: {address!r}")


@pytest.fixture(autouse=True)
def _block_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    yield


@pytest.fixture(autouse=True)
def _no_model_caches(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
                     ) -> None:
    # --model resolution reads the Hub only when asked, and the user's caches otherwise:
    # tests see empty caches and no opt-in, whatever the machine holds.
    empty = tmp_path_factory.mktemp("model-caches")
    for name in ("GPUSCOUT_ONLINE", "HF_HUB_OFFLINE", "HF_HOME", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(empty / "hf"))
    monkeypatch.setenv("GPUSCOUT_CACHE_DIR", str(empty / "gpuscout"))


@pytest.fixture(autouse=True)
def _no_user_warehouse(monkeypatch: pytest.MonkeyPatch,
                       tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reads the per-user warehouse: an estimate would take that user's own runs."""
    monkeypatch.setenv("GPUSCOUT_DB", str(tmp_path_factory.getbasetemp() / "no-user.duckdb"))

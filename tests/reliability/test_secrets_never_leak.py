"""Secrets: API keys planted in the providers' environment variables (and one in a Prefect Secret
block) never appear in logs, the raw archive, the warehouse or error messages.

A live refresh runs through the CLI (`gpuscout refresh --record DIR`) against a transport that
serves the bundled snapshots but echoes each request back at the provider: the URL with its key
query parameter and the Authorization header are copied into rows of the answer (one of them a
row the parser rejects, so its raw text goes to quarantine), into an error body, a rate-limit
body, and the text of a connection error. Then everything an operator or an attacker could read
is searched for every planted key, as it is and URL- or JSON-encoded.
"""

from __future__ import annotations

import json
import logging
import sys
import types
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, quote_plus

import httpx
import pytest
from reliability_harness import NoSleepClient, SnapshotServer
from typer.testing import CliRunner

from gpuscout.cli.app import app
from gpuscout.warehouse.connection import connect

KEYS = {  # in the environment
    "RUNPOD_API_KEY": "rp_PLANTED_9f8e7d6c5b4a39281706",
    "VAST_API_KEY": "vast-PLANTED-0a1b2c3d4e5f60718293",
    "SCW_SECRET_KEY": "scw-PLANTED-8c5e2a91-4b7d-4f3e-a6d0",
    "GCP_API_KEY": "AIzaPLANTED+gcp/key=with&odd%chars",
}
BLOCKS = {  # in a Prefect Secret block (GPUSCOUT_SECRET_BLOCKS=1)
    "JL_API_KEY": "jl.PLANTED.5d4c3b2a19080706",
}
PLANTED = {**KEYS, **BLOCKS}
PROVIDERS = ("runpod", "vastai", "scaleway", "gcp", "jarvislabs", "lambda")


def _secret_blocks_module() -> types.ModuleType:
    """`prefect.blocks.system` with a `Secret` that serves BLOCKS (no Prefect server here)."""
    from gpuscout.pipeline.settings import secret_block_name

    class Secret:
        def __init__(self, value: str) -> None:
            self._value = value

        @classmethod
        def load(cls, name: str) -> Secret:
            by_block = {secret_block_name(var): value for var, value in BLOCKS.items()}
            if name not in by_block:
                raise ValueError(f"Unable to find block document named {name}")
            return cls(by_block[name])

        def get(self) -> str:
            return self._value

    module = types.ModuleType("prefect.blocks.system")
    module.Secret = Secret  # type: ignore[attr-defined]
    return module


def _forms(secret: str) -> set[str]:
    return {secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1]}


def _echo(request: httpx.Request) -> str:
    return f"request {request.method} {request.url} authorization " \
           f"{request.headers.get('authorization', '-')} token " \
           f"{request.headers.get('x-auth-token', '-')}"


class EchoServer(SnapshotServer):
    """The snapshots, with the request echoed into what each provider answers."""

    seen: list[str]

    def __post_init__(self) -> None:
        super().__post_init__()
        self.seen = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        echo = _echo(request)
        self.seen.append(echo)
        host = request.url.host
        if host == "api.runpod.io":  # rows echo the request; one row is rejected
            return self._json(request, lambda doc: {"data": {"gpuTypes": [
                {**e, "note": echo, **({"securePrice": "see note"} if i == 0 else {})}
                for i, e in enumerate(doc["data"]["gpuTypes"])]}})
        if host == "console.vast.ai":
            return self._json(request, lambda asks: [
                {**a, "echo": echo, **({"dph_total": -1} if i == 0 else {})}
                for i, a in enumerate(asks)])
        if host == "cloudbilling.googleapis.com":  # rate limited once, quoting the request
            if sum("cloudbilling" in s for s in self.seen) == 1:
                return httpx.Response(429, headers={"Retry-After": "0"}, request=request,
                                      content=json.dumps({"error": echo}).encode())
            return self._json(request, lambda doc: {**doc, "echo": echo})
        if host == "api.scaleway.com":  # the token refused, the refusal quoting it
            return httpx.Response(401, request=request, headers={"content-type": "text/plain"},
                                  content=f"invalid credentials: {echo}".encode())
        if host == "backendn.jarvislabs.net":  # the connection fails, the error quoting it
            raise httpx.ConnectError(f"cannot connect: {echo}")
        return super().handle_request(request)

    def _json(self, request: httpx.Request, edit: Callable[[object], object]) -> httpx.Response:
        base = self.recorded(request)
        return httpx.Response(base.status_code, headers=base.headers, request=request,
                              content=json.dumps(edit(json.loads(base.content))).encode(),
                              extensions=base.extensions)


def _warehouse_text(db: Path) -> str:
    """Every table and view of the warehouse, every row, as text."""
    out = []
    with connect(db, read_only=True) as con:
        names = [n for (n,) in con.execute(
            "SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        for name in names:
            out.append(f"{name}: {con.execute(f'SELECT * FROM {name}').fetchall()}")
    assert "quarantine" in names and "refresh_run_log" in names and "offer_versions" in names
    return "\n".join(out)


def test_planted_keys_never_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 caplog: pytest.LogCaptureFixture) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    for name in BLOCKS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUSCOUT_SECRET_BLOCKS", "1")
    monkeypatch.setitem(sys.modules, "prefect.blocks.system", _secret_blocks_module())
    server = EchoServer()

    class EchoClient(NoSleepClient):
        def __init__(self, *args: object, **kwargs: object) -> None:
            kwargs["transport"] = server
            super().__init__(*args, **kwargs)

    monkeypatch.setattr("gpuscout.pipeline.refresh.HttpClient", EchoClient)
    caplog.set_level(logging.DEBUG)  # httpx logs every request URL at INFO
    archive, db = tmp_path / "archive", tmp_path / "w.duckdb"
    args = ["refresh", "--record", str(archive), "--db", str(db)]
    for p in PROVIDERS:
        args += ["--provider", p]
    runner = CliRunner()
    table = runner.invoke(app, args, catch_exceptions=False)
    as_json = runner.invoke(app, [*args, "--format", "json"], catch_exceptions=False)
    runs = runner.invoke(app, ["runs", "--db", str(db), "--format", "json"])

    # The test is not vacuous: every key went out, and every kind of echo came back.
    sent = "\n".join(server.seen)
    assert all(any(f in sent for f in _forms(value)) for value in PLANTED.values())
    statuses = {r["provider"]: r for r in json.loads(as_json.stdout)}
    assert statuses["scaleway"]["status"] == "failed" and "401" in statuses["scaleway"]["error"]
    assert statuses["jarvislabs"]["status"] == "failed"
    assert "ConnectError" in statuses["jarvislabs"]["error"]
    assert statuses["gcp"]["status"] == "ok" and statuses["runpod"]["quarantined"] >= 1
    with connect(db, read_only=True) as con:
        raw = con.execute("SELECT raw FROM quarantine WHERE provider IN ('runpod', 'vastai')"
                          ).fetchall()
    assert any("REDACTED" in r for (r,) in raw)  # the echo reached quarantine, masked
    assert any("httpx" in rec.name for rec in caplog.records)  # request logs were captured

    places = {
        "logs": caplog.text,
        "CLI output": table.output + as_json.output + runs.output,
        "run log errors": " ".join(str(r["error"]) for r in statuses.values()),
        "warehouse tables": _warehouse_text(db),
        "warehouse file": (db.read_bytes()).decode("latin-1"),
        **{f"archive {p.relative_to(archive)}": p.read_bytes().decode("utf-8", "replace")
           for p in sorted(archive.rglob("*")) if p.is_file()},
    }
    assert len([k for k in places if k.startswith("archive")]) >= 8
    leaks = [(place, var) for place, text in places.items() for var, value in PLANTED.items()
             if any(form in text for form in _forms(value))]
    assert not leaks, leaks

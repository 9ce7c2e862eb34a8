"""The refresh use case with a fake provider: failures keep the last good data, and say why."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, Reject
from gpuscout.pipeline import refresh as refresh_mod
from gpuscout.pipeline.normalize import USD_ONLY
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.warehouse.connection import connect

URL = "https://fake.test/offers"
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _body(offers: list[dict]) -> bytes:
    return json.dumps({"offers": offers}).encode()


def _fake_adapter(name: str = "fakecloud") -> SimpleNamespace:
    def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
        return [client.get(URL)]

    def parse(captures: Sequence[Capture]) -> ParseResult:
        (cap,) = captures
        try:
            rows = json.loads(cap.body)["offers"]
        except (ValueError, KeyError) as exc:
            raise ParseError("not an offers document", provider=name, url=cap.url) from exc
        offers, rejects = [], []
        for r in rows:
            if r.get("price") is None:
                rejects.append(Reject(provider=name, reason="no price", raw=json.dumps(r)))
                continue
            offers.append(ParsedOffer(
                provider=name, offer_key=r["key"], gpu_label=r["gpu"], gpu_count=r["n"],
                pricing_model=PricingModel.ON_DEMAND, price_per_hour=r["price"],
                source_url=cap.url, observed_at=cap.fetched_at))
        return ParseResult(offers=offers, rejects=rejects, complete=not rows or
                           not any(r.get("partial") for r in rows))

    return SimpleNamespace(NAME=name, SOURCE_KIND="api", CREDENTIALS=(), fetch=fetch,
                           parse=parse)


class Server:
    """An httpx transport whose next answers the test scripts."""

    def __init__(self) -> None:
        self.answers: list[httpx.Response | Exception] = []
        self.now = T0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return httpx.Response(answer.status_code, headers=answer.headers,
                              content=answer.content, request=request,
                              extensions={"gpuscout_fetched_at": self.now.isoformat()})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Server:
    fake = _fake_adapter()
    monkeypatch.setattr(refresh_mod, "PROVIDERS", {"fakecloud": "fake"})
    monkeypatch.setattr(refresh_mod, "get_adapter", lambda name: fake)
    monkeypatch.setattr("gpuscout.adapters.http.time.sleep", lambda s: None)
    return Server()


def _offers(n: int, price: float = 2.0) -> list[dict]:
    return [{"key": f"k{i}", "gpu": "h100-sxm-80gb", "n": 1, "price": price + i / 100}
            for i in range(n)]


def _run(server: Server, db: Path):
    return refresh(["fakecloud"], db=db, source=Source("live"), fx=USD_ONLY,
                   transport=httpx.MockTransport(server))


def _state(db: Path) -> list[tuple]:
    with connect(db, read_only=True) as con:
        return con.execute("SELECT offer_key, price_per_hour, valid_to FROM offer_versions "
                           "ORDER BY offer_key, valid_from").fetchall()


def test_good_refresh_loads_and_logs(server: Server, tmp_path: Path) -> None:
    server.answers = [httpx.Response(200, content=_body(_offers(12)))]
    report = _run(server, tmp_path / "w.duckdb")
    (rec,) = report.providers
    assert (report.status, rec.status, rec.offers_loaded, rec.new_offers) == ("ok", "ok", 12, 12)
    assert rec.unknown_labels == [] and rec.complete


@pytest.mark.parametrize("failure", [
    httpx.Response(500, content=b"boom"),
    httpx.Response(404, content=b"gone"),
    httpx.ReadTimeout("read timed out"),
    httpx.Response(200, content=b'{"offers": [{"key": "k0", "gpu": "h1'),  # truncated JSON
    httpx.Response(200, content=b"<html>maintenance</html>"),
])
def test_failed_refresh_keeps_last_good_data_and_marks_stale(server: Server, tmp_path: Path,
                                                              failure) -> None:
    db = tmp_path / "w.duckdb"
    server.answers = [httpx.Response(200, content=_body(_offers(12)))]
    _run(server, db)
    before = _state(db)
    server.now = T0 + timedelta(days=1)
    server.answers = [failure]
    report = _run(server, db)
    (rec,) = report.providers
    assert report.status == "failed" and rec.status == "failed" and rec.error
    assert _state(db) == before  # nothing closed, nothing rewritten
    with connect(db, read_only=True) as con:
        assert con.execute("SELECT DISTINCT stale FROM current_offers").fetchall() == [(True,)]
        assert con.execute("SELECT last_status FROM provider_status").fetchone() == ("failed",)


def test_collapse_is_held_back_as_drift_and_quarantined(server: Server,
                                                        tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    server.answers = [httpx.Response(200, content=_body(_offers(20)))]
    _run(server, db)
    before = _state(db)
    server.now = T0 + timedelta(days=1)
    server.answers = [httpx.Response(200, content=_body(_offers(3)))]
    (rec,) = _run(server, db).providers
    assert rec.status == "drift" and "collapsed" in (rec.error or "")
    assert _state(db) == before
    with connect(db, read_only=True) as con:
        held = con.execute("SELECT count(*) FROM quarantine WHERE reason LIKE 'refused:%'")
        assert held.fetchone() == (3,)


def test_incomplete_refresh_closes_nothing(server: Server, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    server.answers = [httpx.Response(200, content=_body(_offers(12)))]
    _run(server, db)
    server.now = T0 + timedelta(days=1)
    partial = _offers(8)
    partial[0]["partial"] = True
    server.answers = [httpx.Response(200, content=_body(partial))]
    (rec,) = _run(server, db).providers
    assert rec.status == "ok" and not rec.complete and rec.closed_offers == 0
    assert all(valid_to is None for _, _, valid_to in _state(db))


def test_bad_rows_are_quarantined_with_reasons(server: Server, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    rows = [*_offers(3), {"key": "x", "gpu": "h100-sxm-80gb", "n": 1, "price": None},
            {"key": "cheap", "gpu": "h100-sxm-80gb", "n": 1, "price": 0.0001},
            {"key": "mystery", "gpu": "Mystery GPU", "n": 1, "price": 1.0}]
    server.answers = [httpx.Response(200, content=_body(rows))]
    (rec,) = _run(server, db).providers
    assert (rec.offers_loaded, rec.quarantined, rec.unknown_labels) == (4, 2, ["Mystery GPU"])
    with connect(db, read_only=True) as con:
        reasons = sorted(r for (r,) in con.execute("SELECT reason FROM quarantine").fetchall())
    assert reasons[0].startswith("absurd price") and reasons[1] == "no price"


def test_transient_error_is_retried_then_succeeds(server: Server, tmp_path: Path) -> None:
    server.answers = [httpx.Response(429, headers={"Retry-After": "1"}),
                      httpx.Response(200, content=_body(_offers(12)))]
    (rec,) = _run(server, tmp_path / "w.duckdb").providers
    assert rec.status == "ok" and rec.offers_loaded == 12


def test_unknown_provider_is_a_user_error(server: Server, tmp_path: Path) -> None:
    from gpuscout.core.errors import UserInputError

    with pytest.raises(UserInputError, match="unknown provider nope"):
        refresh(["nope"], db=tmp_path / "w.duckdb", source=Source("live"))


def test_fx_rates_are_fetched_stored_and_fall_back(tmp_path: Path) -> None:
    """Offline, the bundled ECB file converts EUR; when it fails, the stored rates are used."""
    from gpuscout.adapters.registry import SNAPSHOTS_DIR

    replay = ReplayTransport(SNAPSHOTS_DIR)

    def fx_broken(request: httpx.Request) -> httpx.Response:
        if request.url.host == "www.ecb.europa.eu":
            return httpx.Response(200, content=b"<html/>")
        return replay.handle_request(request)

    broken = httpx.MockTransport(fx_broken)
    db = tmp_path / "w.duckdb"
    got = refresh(["lambda"], db=db, source=Source.offline(), transport=replay).fx
    assert got is not None
    assert got.origin == "fetched" and got.usd_per_unit["EUR"] == 1.1252
    fallback = refresh(["lambda"], db=db, source=Source.offline(), transport=broken).fx
    assert fallback is not None
    assert fallback.origin == "stored" and fallback.as_of == got.as_of
    assert fallback.usd_per_unit["EUR"] == 1.1252
    assert fallback.error and fallback.error.startswith("_fx: ")
    # a warehouse that never stored rates converts USD only
    none = refresh(["lambda"], db=tmp_path / "empty.duckdb", source=Source.offline(),
                   transport=broken).fx
    assert none is not None
    assert none.origin == "usd-only" and none.usd_per_unit == {"USD": 1.0}


def test_a_replay_passes_placeholders_for_required_keys_only(monkeypatch) -> None:
    """Required keys get the replay placeholder (recorded URLs hold them masked); a key that
    only switches to a keyed source is never passed to a replay, set or not, so the replay
    takes the keyless path it has captures of. A live fetch gets what is set."""
    from gpuscout.pipeline.refresh import REPLAY_PLACEHOLDER, adapter_credentials

    adapter = SimpleNamespace(NAME="x", CREDENTIALS=("NEEDED_KEY", "EXTRA_KEY"),
                              OPTIONAL_CREDENTIALS=("EXTRA_KEY",))
    monkeypatch.delenv("NEEDED_KEY", raising=False)
    monkeypatch.setenv("EXTRA_KEY", "secret-extra")
    assert adapter_credentials(adapter, "replay") == {"NEEDED_KEY": REPLAY_PLACEHOLDER}
    assert adapter_credentials(adapter, "live") == {"EXTRA_KEY": "secret-extra"}

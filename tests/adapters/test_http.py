"""adapters/http.py: retries, Retry-After, timeouts, truncation, redaction, replay (respx)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import httpx
import pytest
import respx

from gpuscout.adapters.archive import ArchiveWriter, Capture, ReplayTransport, read_manifest
from gpuscout.adapters.http import MAX_ATTEMPTS, USER_AGENT, HttpClient
from gpuscout.core.errors import FetchError

URL = "https://api.example.test/v1/offers"
SECRET = "SECRET123"
SECRET_URL = f"{URL}?api_key={SECRET}&region=us"


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as mock:
        yield mock


@pytest.fixture
def waits() -> list[float]:
    return []


@pytest.fixture
def client(waits: list[float]) -> Iterator[HttpClient]:
    with HttpClient("demo", sleep=waits.append) as c:
        yield c


def test_429_waits_the_retry_after_then_succeeds(router: respx.MockRouter, client: HttpClient,
                                                  waits: list[float]) -> None:
    route = router.get(URL).mock(side_effect=[
        httpx.Response(429, headers={"Retry-After": "7"}),
        httpx.Response(200, json={"ok": True}),
    ])
    capture = client.get(URL)
    assert (capture.status, capture.body) == (200, b'{"ok":true}')
    assert route.call_count == 2
    assert waits == [7.0]


def test_503_every_time_is_a_transient_fetch_error(router: respx.MockRouter,
                                                   client: HttpClient,
                                                   waits: list[float]) -> None:
    route = router.get(URL).mock(return_value=httpx.Response(503))
    with pytest.raises(FetchError) as err:
        client.get(URL)
    assert (err.value.transient, err.value.status) == (True, 503)
    assert route.call_count == MAX_ATTEMPTS == 4
    assert waits == [1.0, 2.0, 4.0]  # exponential backoff without Retry-After


def test_404_is_terminal_and_not_retried(router: respx.MockRouter, client: HttpClient,
                                         waits: list[float]) -> None:
    route = router.get(URL).mock(return_value=httpx.Response(404))
    with pytest.raises(FetchError) as err:
        client.get(URL)
    assert (err.value.transient, err.value.status) == (False, 404)
    assert route.call_count == 1
    assert waits == []


def test_timeout_is_retried(router: respx.MockRouter, client: HttpClient,
                            waits: list[float]) -> None:
    router.get(URL).mock(side_effect=[httpx.ReadTimeout("timed out"), httpx.Response(200)])
    assert client.get(URL).status == 200
    assert waits == [1.0]


def test_timeouts_every_time_are_a_transient_fetch_error(router: respx.MockRouter,
                                                         client: HttpClient) -> None:
    route = router.get(URL).mock(side_effect=httpx.ReadTimeout("timed out"))
    with pytest.raises(FetchError) as err:
        client.get(URL)
    assert err.value.transient is True
    assert "ReadTimeout" in str(err.value)
    assert route.call_count == MAX_ATTEMPTS


def test_truncated_body_is_transient(router: respx.MockRouter, client: HttpClient) -> None:
    truncated = httpx.RemoteProtocolError(
        "peer closed connection without sending complete message body (incomplete chunked read)")
    route = router.get(URL).mock(side_effect=truncated)
    with pytest.raises(FetchError) as err:
        client.get(URL)
    assert err.value.transient is True
    assert route.call_count == MAX_ATTEMPTS
    route.mock(side_effect=[truncated, httpx.Response(200, content=b"whole")])
    assert client.get(URL).body == b"whole"


def test_user_agent_is_set(router: respx.MockRouter, client: HttpClient) -> None:
    route = router.get(URL).mock(return_value=httpx.Response(200))
    client.get(URL)
    assert route.calls.last.request.headers["user-agent"] == USER_AGENT


def test_user_agent_names_gpuscout_and_its_version_and_no_http_library() -> None:
    # Some hosts refuse Python clients' user agents (python-httpx, python-requests) outright.
    assert USER_AGENT == f"gpuscout/{metadata.version('gpuscout')} (GPU price inventory)"
    assert "python" not in USER_AGENT.lower() and "httpx" not in USER_AGENT.lower()


def test_pace_spaces_requests_on_the_network_only(router: respx.MockRouter) -> None:
    router.get(URL).mock(return_value=httpx.Response(200))
    waits: list[float] = []
    live = HttpClient("p", sleep=waits.append)  # the network (respx stands in for it)
    live.pace(0.75)  # no request yet: nothing to wait for
    assert waits == []
    live.get(URL)
    live.pace(0.75)  # right after a request: most of the spacing is left to wait
    assert len(waits) == 1 and 0 < waits[0] <= 0.75
    replayed = HttpClient("p", transport=httpx.MockTransport(lambda r: httpx.Response(200)),
                          sleep=waits.append)
    replayed.get(URL)
    replayed.pace(0.75)  # a replay is no server to spare
    assert len(waits) == 1


def _files_text(root: Path) -> str:
    return "".join(p.read_text("utf-8", errors="replace") for p in root.rglob("*") if p.is_file())


def test_secrets_never_reach_capture_archive_or_errors(router: respx.MockRouter,
                                                        tmp_path: Path) -> None:
    router.get(URL, params={"region": "us"}).mock(side_effect=[
        httpx.Response(200, json={"offers": []}, headers={"ETag": f'"{SECRET}"'}),
        httpx.Response(401),
        httpx.ConnectError(f"cannot reach {SECRET_URL}"),
    ])
    auth = {"Authorization": f"Bearer {SECRET}"}
    with HttpClient("demo", recorder=ArchiveWriter(tmp_path), secrets=(SECRET,),
                    max_attempts=1, sleep=lambda s: None) as client:
        capture = client.get(SECRET_URL, headers=auth)
        with pytest.raises(FetchError) as status_err:
            client.get(SECRET_URL, headers=auth)
        with pytest.raises(FetchError) as transport_err:
            client.get(SECRET_URL, headers=auth)
    assert capture.url == f"{URL}?api_key=REDACTED&region=us"
    assert SECRET not in capture.model_dump_json()
    assert capture.headers["etag"] == '"REDACTED"'
    assert [e.url for e in read_manifest(tmp_path / "demo")] == [capture.url] * 2
    assert SECRET not in _files_text(tmp_path)
    for err in (status_err.value, transport_err.value):
        assert SECRET not in str(err)
        assert err.url == capture.url


def test_replay_serves_the_newest_capture_for_a_url(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path)
    newer = datetime(2025, 3, 1, tzinfo=UTC)
    # Written newest first: the replay goes by fetched_at, not by manifest order.
    for body, when in ((b"new", newer), (b"old", datetime(2025, 1, 1, tzinfo=UTC))):
        writer.write(Capture(provider="demo", url=URL, body=body, fetched_at=when,
                             headers={"content-type": "application/json"}))
    with HttpClient("demo", transport=ReplayTransport(tmp_path)) as client:
        capture = client.get(URL)
    assert (capture.body, capture.fetched_at) == (b"new", newer)


def test_replay_without_a_recording_is_a_terminal_fetch_error(tmp_path: Path) -> None:
    ArchiveWriter(tmp_path).write(Capture(provider="demo", url=URL, body=b"{}",
                                          fetched_at=datetime(2025, 1, 1, tzinfo=UTC)))
    calls: list[float] = []
    with HttpClient("demo", transport=ReplayTransport(tmp_path, secrets=(SECRET,)),
                    sleep=calls.append) as client, pytest.raises(FetchError) as err:
        client.get(f"{URL}/other", params={"api_key": SECRET})
    assert err.value.transient is False
    assert calls == []  # not retried
    assert SECRET not in str(err.value)

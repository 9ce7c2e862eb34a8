"""The streaming path of adapters/http.py and adapters/archive.py: `HttpClient.download`,
file-backed captures (`Capture.body_path`, `open`, `iter_lines`) and the streamed replay."""

from __future__ import annotations

import gc
import hashlib
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import respx

from gpuscout.adapters import archive
from gpuscout.adapters.archive import ArchiveWriter, Capture, ReplayTransport, read_manifest
from gpuscout.adapters.http import MAX_ATTEMPTS, HttpClient
from gpuscout.core.errors import FetchError

URL = "https://files.example.test/big/index.csv"
BODY = b'"a","b"\n"1","2"\n"3","4"\n'
WHEN = datetime(2025, 3, 1, tzinfo=UTC)


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as mock:
        yield mock


def _client(**kwargs: object) -> HttpClient:
    return HttpClient("demo", sleep=lambda s: None, **kwargs)  # type: ignore[arg-type]


def _chunks(n_chunks: int, size: int) -> Iterator[bytes]:
    line = b'"x","y"\n'
    chunk = line * (size // len(line))
    for _ in range(n_chunks):
        yield chunk


def test_download_streams_to_a_temp_file_that_goes_with_the_capture(
        router: respx.MockRouter) -> None:
    router.get(URL).mock(return_value=httpx.Response(
        200, content=BODY, headers={"content-type": "text/csv", "etag": '"e1"'}))
    with _client() as client:
        capture = client.download(URL)
    path = capture.body_path
    assert path is not None and path.is_file()
    assert capture.body == b"" and capture.size == len(BODY)
    assert capture.sha256 == hashlib.sha256(BODY).hexdigest() == capture.body_sha256
    assert (capture.status, capture.headers) == (200, {"content-type": "text/csv", "etag": '"e1"'})
    assert capture.read_bytes() == BODY and capture.text() == BODY.decode()
    with capture.open() as f:
        assert f.read() == BODY
    assert list(capture.iter_lines()) == ['"a","b"\n', '"1","2"\n', '"3","4"\n']
    copy = capture.model_copy(update={"url": URL + "?copy"})
    del capture
    gc.collect()
    assert path.is_file()  # a copy still refers to it
    del copy
    gc.collect()
    assert not path.exists()


def test_download_when_recording_streams_into_the_archive(router: respx.MockRouter,
                                                           tmp_path: Path) -> None:
    router.get(URL).mock(return_value=httpx.Response(200, content=BODY,
                                                     headers={"content-type": "text/csv"}))
    with _client(recorder=ArchiveWriter(tmp_path)) as client:
        capture = client.download(URL)
    (entry,) = read_manifest(tmp_path / "demo")
    assert capture.body_path == tmp_path / "demo" / entry.file
    assert entry.file.endswith(".csv") and entry.url == URL
    assert entry.sha256 == hashlib.sha256(BODY).hexdigest()
    assert (tmp_path / "demo" / entry.file).read_bytes() == BODY
    assert [p.name for p in (tmp_path / "demo").iterdir() if p.name.endswith(".part")] == []
    del capture
    gc.collect()
    assert (tmp_path / "demo" / entry.file).is_file()  # archived bodies are never deleted


def test_download_retries_a_503_then_succeeds(router: respx.MockRouter) -> None:
    route = router.get(URL).mock(side_effect=[httpx.Response(503), httpx.Response(200,
                                                                                  content=BODY)])
    with _client() as client:
        assert client.download(URL).read_bytes() == BODY
    assert route.call_count == 2


def test_download_of_a_404_is_terminal_and_archived(router: respx.MockRouter,
                                                    tmp_path: Path) -> None:
    route = router.get(URL).mock(return_value=httpx.Response(404, content=b"NoSuchKey"))
    with _client(recorder=ArchiveWriter(tmp_path)) as client, \
            pytest.raises(FetchError) as err:
        client.download(URL)
    assert (err.value.transient, err.value.status, route.call_count) == (False, 404, 1)
    (entry,) = read_manifest(tmp_path / "demo")
    assert (entry.status, (tmp_path / "demo" / entry.file).read_bytes()) == (404, b"NoSuchKey")


def test_download_cut_short_is_retried_and_leaves_no_partial_file(
        router: respx.MockRouter, tmp_path: Path) -> None:
    cut = httpx.RemoteProtocolError("peer closed connection without sending complete body")
    route = router.get(URL).mock(side_effect=cut)
    with _client(recorder=ArchiveWriter(tmp_path)) as client, \
            pytest.raises(FetchError) as err:
        client.download(URL)
    assert err.value.transient is True and route.call_count == MAX_ATTEMPTS
    assert not (tmp_path / "demo").exists() or list((tmp_path / "demo").iterdir()) == []


def test_download_holds_a_constant_amount_of_memory() -> None:
    # 64 MiB streamed in 1 MiB chunks: Python allocations stay near one chunk, not the body.
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, content=_chunks(64, 1 << 20)))
    tracemalloc.start()
    try:
        with HttpClient("demo", transport=transport) as client:
            capture = client.download(URL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert capture.size == 64 * ((1 << 20) // 8) * 8
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB"


def _archive_with(tmp_path: Path, body: bytes) -> Path:
    ArchiveWriter(tmp_path).write(Capture(provider="demo", url=URL, body=body, fetched_at=WHEN,
                                          headers={"content-type": "text/csv"}))
    return tmp_path


def test_replay_streams_a_big_file_and_download_reads_it_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "REPLAY_STREAM_MIN_BYTES", 1)  # every file counts as big
    root = _archive_with(tmp_path, BODY)
    (entry,) = read_manifest(root / "demo")
    with HttpClient("demo", transport=ReplayTransport(root)) as client:
        streamed = client.download(URL)
        whole = client.get(URL)
    assert streamed.body_path == root / "demo" / entry.file  # no copy was made
    assert (streamed.fetched_at, streamed.sha256) == (WHEN, entry.sha256)
    assert whole.body == BODY and whole.body_path is None
    del streamed
    gc.collect()
    assert (root / "demo" / entry.file).is_file()


def test_replay_of_a_tampered_big_file_fails_at_the_end_of_the_stream(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "REPLAY_STREAM_MIN_BYTES", 1)
    root = _archive_with(tmp_path, BODY)
    (entry,) = read_manifest(root / "demo")
    (root / "demo" / entry.file).write_bytes(BODY.replace(b"4", b"5"))
    with HttpClient("demo", transport=ReplayTransport(root)) as client, \
            pytest.raises(FetchError) as err:
        client.download(URL)
    assert err.value.transient is False and "sha256" in str(err.value)


def test_replay_and_record_copies_the_stream_into_the_new_archive(tmp_path: Path) -> None:
    root = _archive_with(tmp_path / "old", BODY)
    with HttpClient("demo", transport=ReplayTransport(root),
                    recorder=ArchiveWriter(tmp_path / "new")) as client:
        capture = client.download(URL)
    (entry,) = read_manifest(tmp_path / "new" / "demo")
    assert capture.body_path == tmp_path / "new" / "demo" / entry.file
    assert capture.read_bytes() == BODY and entry.fetched_at == WHEN


def test_archive_writer_copies_a_file_backed_capture(tmp_path: Path) -> None:
    source = tmp_path / "elsewhere.csv"
    source.write_bytes(BODY)
    capture = Capture(provider="demo", url=URL, body_path=source, fetched_at=WHEN,
                      headers={"content-type": "text/csv"})
    entry = ArchiveWriter(tmp_path / "arc").write(capture)
    assert (tmp_path / "arc" / "demo" / entry.file).read_bytes() == BODY
    assert source.is_file() and entry.sha256 == hashlib.sha256(BODY).hexdigest()


def test_in_memory_captures_read_the_same_way() -> None:
    capture = Capture(provider="demo", url=URL, body=BODY, fetched_at=WHEN)
    assert capture.size == len(BODY) and capture.read_bytes() == BODY
    with capture.open() as f:
        assert f.read() == BODY
    assert "".join(capture.iter_lines()) == BODY.decode()

"""A replay archive is checked before it is believed: one bad provider folder (a manifest cut
short, a capture "from the future", a body outside the archive) fails that provider alone, with
one line, and the others replay."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import gpuscout
from gpuscout.adapters.archive import MAX_CLOCK_SKEW, read_manifest
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import FetchError

PROVIDERS = ["lambda", "crusoe", "nebius", "civo"]


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    for name in [*PROVIDERS, "_fx"]:
        shutil.copytree(SNAPSHOTS_DIR / name, root / name)
    return root


def _edit(folder: Path, change: Any) -> None:
    path = folder / "manifest.json"
    entries = json.loads(path.read_text())
    change(entries[0])
    path.write_text(json.dumps(entries))


def test_one_bad_folder_fails_that_provider_alone(archive: Path, tmp_path: Path) -> None:
    manifest = archive / "lambda" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:100])  # cut short
    _edit(archive / "crusoe", lambda e: e.update(fetched_at="9999-12-31T00:00:00Z"))
    hostname = Path("/etc/hostname")
    if hostname.exists():
        digest = hashlib.sha256(hostname.read_bytes()).hexdigest()
        _edit(archive / "nebius", lambda e: e.update(file="../../../../etc/hostname",
                                                     sha256=digest))
    else:
        _edit(archive / "nebius", lambda e: e.update(file="../civo/manifest.json"))
    report = gpuscout.refresh(db=tmp_path / "w.duckdb", replay=archive, providers=PROVIDERS)
    status = {r.provider: (r.status, r.error or "") for r in report.providers}
    assert status["civo"] == ("ok", "")
    assert status["lambda"][0] == "failed" and "manifest" in status["lambda"][1]
    assert status["crusoe"][0] == "failed" and "in the future" in status["crusoe"][1]
    assert status["nebius"][0] == "failed" and "not a file name inside" in status["nebius"][1]
    assert all("\n" not in error for _, error in status.values())


def test_a_capture_a_little_ahead_is_tolerated_a_day_is_not(archive: Path) -> None:
    soon = (now_utc() + MAX_CLOCK_SKEW / 2).isoformat()
    _edit(archive / "civo", lambda e: e.update(fetched_at=soon))
    assert read_manifest(archive / "civo")
    later = (now_utc() + 2 * MAX_CLOCK_SKEW).isoformat()
    _edit(archive / "civo", lambda e: e.update(fetched_at=later))
    with pytest.raises(FetchError, match="in the future"):
        read_manifest(archive / "civo")


def test_a_symlinked_body_is_not_followed(archive: Path, tmp_path: Path) -> None:
    (entry,) = read_manifest(archive / "civo")[:1]
    body = archive / "civo" / entry.file
    outside = tmp_path / "outside.html"
    outside.write_bytes(body.read_bytes())
    body.unlink()
    body.symlink_to(outside)
    report = gpuscout.refresh(db=tmp_path / "w.duckdb", replay=archive, providers=["civo"])
    (record,) = report.providers
    assert record.status == "failed" and "not a file of the archive folder" in (record.error or "")

"""Shared pieces of the hostile-input tests: a warehouse with sealed history, the CLI run
in-process as a user runs it (exit status and stderr), and a byte-for-byte fingerprint of a
warehouse and its history folder."""

from __future__ import annotations

import hashlib
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from offer_factory import T0, make_offer

from gpuscout.cli.app import main
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, transaction
from gpuscout.warehouse.segments import segments_dir


def sealed_warehouse(path: Path, nights: int = 3) -> Path:
    """Ten offers whose prices move every night, the closed versions sealed into a segment:
    `offer_history` then reads both the file and its `.history` folder."""
    with connect(path) as con:
        for night in range(nights):
            at = T0 + timedelta(days=night)
            offers = [make_offer(f"k{i}", price=10.0 + i + night, observed_at=at)
                      for i in range(10)]
            with transaction(con):
                merge_offers(con, offers_to_table(offers), provider="testprov",
                             run_id=f"n{night}", complete=True)
    with connect(path, seal_rows=1):
        pass
    return path


def fingerprint(db: Path) -> dict[str, str]:
    """sha256 of the warehouse file and of every file in its history folder (sidecars such as
    the lock, which holds no data, are left out)."""
    files = [db, *sorted(segments_dir(db).glob("*"))] if db.exists() else []
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.is_file()}


def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        *args: str) -> tuple[int, str, str]:
    """`gpuscout ARGS` through the console entry point: (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["gpuscout", *args])
    with pytest.raises(SystemExit) as ended:
        main()
    out = capsys.readouterr()
    code = ended.value.code
    return (code if isinstance(code, int) else 0), out.out, out.err


def one_line(err: str) -> str:
    """The error a command printed: exactly one line, starting `error:`."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(("error:", "interrupted:")), err
    return lines[0]

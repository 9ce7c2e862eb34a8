"""The provider checklist through the Python API: typed rows, ages counted to `today`."""

from __future__ import annotations

from datetime import date

import gpuscout
from gpuscout.pipeline.profiles import PROVIDERS


def test_provider_checklist_returns_typed_rows() -> None:
    rows = gpuscout.provider_checklist(today=date(2026, 12, 5))
    assert all(isinstance(r, gpuscout.ChecklistRow) for r in rows)
    assert sorted(r.provider for r in rows) == sorted(PROVIDERS)
    aws = next(r for r in rows if r.provider == "aws")
    notice = next(c for c in aws.cells if c.fact == "spot_notice_s")
    assert (notice.state, notice.value, notice.text) == ("value", 120, "2m")
    assert notice.age_days == (date(2026, 12, 5) - notice.verified_at).days
    later = gpuscout.provider_checklist(today=date(2028, 1, 1))
    assert next(r for r in later if r.provider == "aws").stale_facts  # a year on, all stale

from __future__ import annotations

from datetime import date

import pytest

from gpuscout.pipeline.checklist import (
    COLUMNS,
    STALE_AFTER_DAYS,
    age,
    checklist_row,
    duration,
    provider_checklist,
)
from gpuscout.pipeline.profiles import FACTS, PROVIDERS, load_profiles, parse_profiles

TODAY = date(2026, 12, 5)


def _row(fact: str, value: str, unit: str = "", *, read: str = "2026-12-01",
         provider: str = "aws") -> dict[str, str]:
    return {"provider": provider, "fact": fact, "value": value, "unit": unit,
            "source_url": f"https://example.com/{fact}", "verified_at": read, "notes": ""}


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0"), (1, "1s"), (5, "5s"), (30, "30s"), (60, "1m"), (90, "90s"), (120, "2m"),
    (3600, "1h"), (86400, "1d"), (172800, "2d"),
])
def test_duration(seconds, text) -> None:
    assert duration(seconds) == text


@pytest.mark.parametrize(("days", "text"), [(0, "0d"), (59, "59d"), (60, "2mo"),
                                            (400, "13mo"), (730, "2y"), (2252, "6y")])
def test_age(days, text) -> None:
    assert age(days) == text


def test_every_column_is_a_fact() -> None:
    assert {c.fact for c in COLUMNS} <= set(FACTS)
    assert len({c.key for c in COLUMNS}) == len(COLUMNS)


def test_cells_say_yes_no_value_varies_unknown_with_age() -> None:
    profile = parse_profiles([
        _row("billing_increment_s", "60", "s"),
        _row("persistent_storage", "yes"),
        _row("storage_usd_per_gb_month", "0.07", "USD/GB-month"),
        _row("egress_usd_per_gb", "varies", "USD/GB"),
        _row("ssh", "no"),
        _row("multinode_fabric", "InfiniBand"),
        # read 366 days before TODAY: stale; 365 days: not yet
        _row("spot_available", "yes", read="2025-12-04"),
        _row("jupyter", "yes", read="2025-12-05"),
    ])["aws"]
    row = checklist_row(profile, TODAY)
    cells = {c.fact: c for c in row.cells}
    assert [c.fact for c in row.cells] == [c.fact for c in COLUMNS]
    assert (cells["billing_increment_s"].state, cells["billing_increment_s"].text) == ("value",
                                                                                      "1m")
    assert cells["billing_increment_s"].value == 60
    assert (cells["persistent_storage"].state, cells["persistent_storage"].text) == ("yes", "✓")
    assert cells["storage_usd_per_gb_month"].text == "0.07"
    assert (cells["egress_usd_per_gb"].state, cells["egress_usd_per_gb"].text) == ("varies", "~")
    assert (cells["ssh"].state, cells["ssh"].text) == ("no", "✗")
    assert cells["multinode_fabric"].text == "IB"
    assert (cells["docker_images"].state, cells["docker_images"].text) == ("unknown", "?")
    assert cells["docker_images"].age_days is None and not cells["docker_images"].stale
    assert cells["spot_available"].age_days == STALE_AFTER_DAYS + 1
    assert cells["spot_available"].stale and not cells["jupyter"].stale
    assert row.stale_facts == ["spot_available"]
    assert row.known == 8 and row.age_days == 366 and row.oldest_verified == date(2025, 12, 4)
    flat = row.flat()
    assert flat["egress_usd_per_gb"] == "varies" and flat["docker_images"] == "unknown"
    assert flat["billing_increment_s"] == 60 and flat["spot_available_age_days"] == 366


def test_every_provider_has_a_row_most_known_first() -> None:
    rows = provider_checklist(today=TODAY)
    assert sorted(r.provider for r in rows) == sorted(PROVIDERS)
    assert [r.known for r in rows] == sorted((r.known for r in rows), reverse=True)
    profiles = load_profiles()
    for r in rows:  # the cells are the profile's facts, nothing made up
        for c in r.cells:
            assert (c.source_url is None) == (c.fact not in profiles[r.provider].sources)

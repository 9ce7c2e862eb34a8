from __future__ import annotations

from gpuscout.pipeline import profile_coverage
from gpuscout.pipeline.profiles import parse_profiles


def test_the_stored_report_is_current() -> None:
    """PROVIDER_FACTS.md is generated from the CSV: after editing the facts, run
    `python -m gpuscout.pipeline.profile_coverage --write`."""
    assert profile_coverage.REPORT.read_text(encoding="utf-8") == profile_coverage.render()


def _row(provider: str, fact: str, value: str, unit: str = "", read: str = "2026-12-01"):
    return {"provider": provider, "fact": fact, "value": value, "unit": unit,
            "source_url": f"https://example.com/{provider}", "verified_at": read, "notes": ""}


def test_counts_known_varies_na_and_unknown() -> None:
    profiles = parse_profiles([
        _row("aws", "storage_usd_per_gb_month", "0.08", "USD/GB-month"),
        _row("gcp", "storage_usd_per_gb_month", "varies", "USD/GB-month"),
        _row("oci", "persistent_storage", "no"),  # nothing to price: n/a, not unknown
        _row("azure", "ssh", "yes", read="2026-01-01"),
    ])
    text = profile_coverage.render(profiles)
    n = len(profiles)
    # known 1, varies 1, n/a 1, the rest unknown; 3 of n answered
    assert (f"| storage_usd_per_gb_month | 1 | 1 | 1 | {n - 3} | {3 / n:.0%} | no |"
            in text)
    assert f"| ssh | 1 | 0 | 0 | {n - 1} |" in text
    assert "counted to 2026-12-01," in text  # the newest date in the rows
    # the azure row is 334 days older than that: not stale; an older one would be listed
    assert "None." in text
    old = profile_coverage.render(parse_profiles([_row("azure", "ssh", "yes", read="2025-01-01"),
                                                  _row("aws", "ssh", "yes", read="2026-03-01")]))
    assert "| azure | ssh | 2025-01-01 | 424 | https://example.com/azure |" in old
    assert "| oci | 30 of 30 |" not in text and "| aws | 1 of 30 |" in text

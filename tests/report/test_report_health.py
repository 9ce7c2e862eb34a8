"""The report's provider health table: last problem and why, price age, keys and what they add."""

from __future__ import annotations

from datetime import UTC, datetime

from selectolax.lexbor import LexborHTMLParser as HTMLParser

from gpuscout.pipeline.health import KeyState, ProviderHealth
from gpuscout.report import ReportData, build_report

AT = datetime(2026, 9, 23, 4, 0, tzinfo=UTC)


def _health() -> list[ProviderHealth]:
    return [
        ProviderHealth(provider="latitude", source="html", offers=18, spot_offers=0,
                       last_status="drift", last_success_at=datetime(2026, 9, 22, tzinfo=UTC),
                       stale=True, unknown_labels=[], last_problem_status="drift",
                       last_problem_at=AT, price_age_days=1.2,
                       last_problem_error="latitude: drift: stock empty on 100% of 18 offers "
                                          "(filled on 100% in the last good load)", keys=[]),
        ProviderHealth(provider="gcp", source="api", offers=0, spot_offers=0,
                       last_status="skipped", stale=True, unknown_labels=[],
                       last_problem_status="skipped", last_problem_at=AT,
                       last_problem_error="gcp: set GCP_API_KEY to fetch live",
                       keys=[KeyState(variable="GCP_API_KEY", set=False, required=True,
                                      adds="the provider itself")]),
    ]


def test_the_health_section_says_why_and_what_a_key_adds() -> None:
    data = ReportData(generated_at=AT, source="test", history=[], vram=[], spot=[],
                      freshness=[], job={"model": "x"}, recommendation=None,
                      recommendation_error="none", health=_health())
    tree = HTMLParser(build_report(data))
    rows = [[td.text() for td in tr.css("td")] for tr in tree.css("#health table.health tr")
            if tr.css("td")]
    assert [r[:3] for r in rows] == [["latitude", "drift", "2026-09-22 00:00:00"],
                                     ["gcp", "skipped", "never"]]
    assert rows[0][3] == "1.2" and rows[1][3] == "-"
    assert rows[0][4] == ("drift 2026-09-23 04:00: latitude: drift: stock empty on 100% of 18 "
                          "offers (filled on 100% in the last good load)")
    assert rows[0][5] == "none"
    assert rows[1][5] == "GCP_API_KEY not set (needed): the provider itself"
    assert [tr.attributes.get("class") for tr in tree.css("#health tbody tr")] == ["stale"] * 2

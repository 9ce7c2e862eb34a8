"""pipeline/fx.py on the bundled ECB daily reference-rate file."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from gpuscout.adapters.archive import Capture, ReplayTransport, load_captures
from gpuscout.adapters.fx import ECB_DAILY_URL, FX_SOURCE, FxTable, fetch_rates, parse_rates
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Offer, ParsedOffer, PricingModel
from gpuscout.pipeline.normalize import normalize_one

FILE = SNAPSHOTS_DIR / FX_SOURCE / "eurofxref-daily_2025-05-09.xml"


def _bundled() -> Capture:
    (capture,) = load_captures(SNAPSHOTS_DIR, FX_SOURCE)
    return capture


def _with_text(text: str) -> Capture:
    return _bundled().model_copy(update={"body": text.encode()})


def _text() -> str:
    return FILE.read_text("utf-8")


def test_bundled_file_gives_usd_per_unit_from_eur_rates() -> None:
    table = parse_rates([_bundled()])
    assert table.as_of == date(2025, 5, 9)
    assert table.source_url == ECB_DAILY_URL
    assert len(table.usd_per_unit) == 31  # 30 ECB currencies + EUR itself
    assert table.usd_per_unit["USD"] == 1.0
    assert table.usd_per_unit["EUR"] == 1.1252
    assert table.usd_per_unit["GBP"] == pytest.approx(1.1252 / 0.84770)
    assert table.usd_per_unit["JPY"] == pytest.approx(1.1252 / 163.36)
    assert table.usd_per_unit["CHF"] == pytest.approx(1.1252 / 0.9353)
    assert table.usd_per_unit["PLN"] == pytest.approx(1.1252 / 4.2393)
    assert "HRK" not in table.usd_per_unit  # Croatia joined the euro in 2023


def test_table_feeds_normalization_of_a_euro_price() -> None:
    fx = parse_rates([_bundled()]).usd_per_unit
    parsed = ParsedOffer(provider="scaleway", offer_key="fr-par-2|H100-1-80G|on_demand",
                         gpu_label="H100-PCIe", gpu_count=1, vram_gb_per_gpu=80,
                         pricing_model=PricingModel.ON_DEMAND, price_per_hour=2.8665,
                         currency="EUR", source_url="https://example.invalid",
                         observed_at=datetime(2026, 7, 30, tzinfo=UTC))
    offer, _ = normalize_one(parsed, load_catalog(), fx)
    assert isinstance(offer, Offer)
    assert (offer.currency, offer.price_per_hour) == ("EUR", 2.8665)
    assert offer.price_usd_per_hour == pytest.approx(2.8665 * 1.1252)


def test_offline_fetch_serves_the_bundled_file() -> None:
    with HttpClient(FX_SOURCE, transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = fetch_rates(client)
    assert [c.body for c in captures] == [FILE.read_bytes()]
    assert captures[0].url == ECB_DAILY_URL
    assert captures[0].fetched_at == datetime(2025, 5, 9, 14, 0, tzinfo=UTC)
    assert parse_rates(captures).as_of == date(2025, 5, 9)


def test_the_newest_day_wins_across_days_and_captures() -> None:
    older = _text().replace("2025-05-09", "2025-05-08").replace("'1.1252'", "'1.1200'")
    two_days = _text().replace("\t\t<Cube time='2025-05-09'>",
                               older.split("\t<Cube>\n", 1)[1].rsplit("\t</Cube>\n", 1)[0]
                               + "\t\t<Cube time='2025-05-09'>")
    assert two_days.count("<Cube time=") == 2
    assert parse_rates([_with_text(two_days)]).usd_per_unit["EUR"] == 1.1252
    table = parse_rates([_with_text(older), _bundled()])
    assert (table.as_of, table.usd_per_unit["EUR"]) == (date(2025, 5, 9), 1.1252)


def test_table_is_a_frozen_model() -> None:
    table = parse_rates([_bundled()])
    assert isinstance(table, FxTable)
    with pytest.raises(ValueError):
        table.as_of = date(2020, 1, 1)  # type: ignore[misc]


@pytest.mark.parametrize(("text", "field"), [
    ("<html><body>503 Service Unavailable</body></html", None),
    ('{"rates": {"USD": 1.1252}}', None),
    ("<html><body>maintenance</body></html>", "Envelope"),
    ("<?xml version='1.0'?><gesmes:Envelope xmlns:gesmes='http://www.gesmes.org/xml/2002-08-01'/>",
     "Cube/@time"),
])
def test_wrong_shape_is_a_parse_error(text: str, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        parse_rates([_with_text(text)])
    assert err.value.field == field
    assert err.value.url == ECB_DAILY_URL
    assert err.value.provider == FX_SOURCE


@pytest.mark.parametrize(("old", "new", "field"), [
    ("currency=", "curr=", "Cube/@currency"),  # attribute renamed
    ("rate=", "value=", "Cube/@rate"),
    ("<Cube currency='USD' rate='1.1252'/>", "", "Cube/@currency"),  # no USD
    ("rate='1.1252'", "rate='n/a'", "Cube/@rate"),
    ("rate='163.36'", "rate='-163.36'", "Cube/@rate"),
    ("currency='GBP'", "currency='USD'", "Cube/@currency"),  # listed twice
    ("time='2025-05-09'", "time='09/05/2025'", "Cube/@time"),
    ("time=", "date=", "Cube/@time"),
])
def test_malformed_file_is_a_parse_error(old: str, new: str, field: str) -> None:
    assert old in _text()
    with pytest.raises(ParseError) as err:
        parse_rates([_with_text(_text().replace(old, new))])
    assert err.value.field == field


def test_no_capture_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_rates([])

"""adapters/civo.py on the recorded 2026-08 Civo pricing page (NVIDIA GPUs section)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import civo
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "civo"
PAGE = "pricing_gpu_index_055204a_2026-08-22.html"

ON_DEMAND = PricingModel.ON_DEMAND
RESERVED = PricingModel.RESERVED
# The H200 Small row's on-demand hourly print: unique in the page.
H200_SMALL_ON_DEMAND = ('<div id="price-value-hourly" data-option="hourly" class="price-value">'
                        '$3.49<span>per hour</span></div>')


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _mutated(old: str, new: str) -> Capture:
    return with_replaced(_capture(), old, new, exactly_once=True)


def _parse() -> ParseResult:
    return civo.parse([_capture()])


def _by_key() -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in _parse().offers}


class TestCivoInvariants(OfferInvariants):
    NAME = "civo"
    # The page does not say whether its A100s are PCIe or SXM cards.
    EXPECTED_UNKNOWN = frozenset({"NVIDIA A100 40GB", "NVIDIA A100 80GB"})

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return _parse().offers


def test_census() -> None:
    result = _parse()
    assert result.rejects == [] and result.complete is True
    # 17 rows x (on-demand + 4 terms) = 85, less the B200's N/A on-demand and 6-month prices.
    assert len(result.offers) == 83
    assert {o.gpu_label for o in result.offers} == {
        "NVIDIA L40S 48GB", "NVIDIA A100 40GB", "NVIDIA A100 80GB", "NVIDIA H100 SXM",
        "NVIDIA H200 SXM", "NVIDIA B200"}
    assert {(o.gpu_label, int(o.gpu_count)) for o in result.offers if
            o.pricing_model is ON_DEMAND} == {
        (label, n) for label in ("NVIDIA L40S 48GB", "NVIDIA A100 40GB", "NVIDIA A100 80GB")
        for n in (1, 2, 4, 8)} | {("NVIDIA H100 SXM", 1), ("NVIDIA H100 SXM", 8),
                                  ("NVIDIA H200 SXM", 1), ("NVIDIA H200 SXM", 8)}
    assert all(o.currency == "USD" and o.price_kind is PriceKind.LISTED and o.region is None
               for o in result.offers)
    # Nothing from the CPU instance table before the section or the object store after it.
    assert all(o.price_per_hour >= 0.69 for o in result.offers)


def test_h200_small_on_demand_offer_in_full() -> None:
    key = "NVIDIA H200 SXM|1x|on_demand"
    assert _by_key()[key].model_dump() == {
        "provider": "civo", "offer_key": key, "instance_type": None,
        "gpu_label": "NVIDIA H200 SXM", "gpu_count": 1, "vram_gb_per_gpu": 141.0,
        "pricing_model": ON_DEMAND, "price_per_hour": 3.49, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": 23.0,
        "ram_gb": 169.0, "disk_gb": 400.0, "interconnect": None, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None,
        "source_url": "https://www.civo.com/pricing",
        "observed_at": datetime(2026, 8, 22, tzinfo=UTC),
        "provider_data": {"size": "Small", "price_per_gpu_hour": 3.49, "monthly_price": 2547.7},
    }


def test_every_term_of_the_h200_small() -> None:
    offers = _by_key()
    assert {term: offers[f"NVIDIA H200 SXM|1x|reserved|{term} months"].price_per_hour
            for term in (6, 12, 24, 36)} == {6: 3.29, 12: 3.19, 24: 3.09, 36: 2.99}
    assert offers["NVIDIA H200 SXM|1x|reserved|36 months"].provider_data["term"] == "36 months"
    assert offers["NVIDIA H200 SXM|1x|reserved|36 months"].pricing_model is RESERVED


def test_prices_are_whole_instance_prices() -> None:
    offers = _by_key()
    l40s = offers["NVIDIA L40S 48GB|8x|on_demand"]
    assert (l40s.gpu_count, l40s.price_per_hour, l40s.vcpus, l40s.ram_gb, l40s.disk_gb) == (
        8, 10.32, 96, 768, 1600)
    assert l40s.provider_data["price_per_gpu_hour"] == 1.29
    h100 = offers["NVIDIA H100 SXM|8x|on_demand"]
    assert (h100.price_per_hour, h100.vram_gb_per_gpu, h100.vcpus, h100.ram_gb) == (
        23.92, 80, 184, 1024)


def test_b200_is_sold_on_terms_only() -> None:
    b200 = [o for o in _parse().offers if o.gpu_label == "NVIDIA B200"]
    assert {o.provider_data["term"]: o.price_per_hour for o in b200} == {
        "12 months": 35.92, "24 months": 31.92, "36 months": 30.32}
    assert all(o.pricing_model is RESERVED and o.gpu_count == 8 and o.vram_gb_per_gpu == 180
               and o.vcpus == 220 and o.ram_gb is None and o.provider_data["ram"] == "2.5TB"
               for o in b200)
    # The 12-month block prints its monthly price as N/A: the hourly one still counts.
    assert "monthly_price" not in b200[0].provider_data


def test_a100_twins_keep_their_own_prices() -> None:
    offers = _by_key()
    assert offers["NVIDIA A100 40GB|1x|on_demand"].price_per_hour == 1.09
    assert offers["NVIDIA A100 40GB|1x|on_demand"].vram_gb_per_gpu == 40
    assert offers["NVIDIA A100 80GB|1x|on_demand"].price_per_hour == 1.79
    assert offers["NVIDIA A100 80GB|1x|on_demand"].vram_gb_per_gpu == 80


def test_every_raw_label_resolves_or_is_expected_unknown() -> None:
    catalog = load_catalog()
    expected = {
        "NVIDIA L40S 48GB": "l40s-48gb",
        "NVIDIA H100 SXM": "h100-sxm-80gb",
        "NVIDIA H200 SXM": "h200-sxm-141gb",
        "NVIDIA B200": "b200-sxm-180gb",
    }
    for label, gpu_id in expected.items():
        res = catalog.resolve("civo", label)
        assert isinstance(res, Resolved) and res.gpu_id == gpu_id, (label, res)
    for label, vram in (("NVIDIA A100 40GB", 40), ("NVIDIA A100 80GB", 80)):
        assert isinstance(catalog.resolve("civo", label, vram), Unknown)


def test_a_row_naming_another_gpu_is_rejected() -> None:
    detail = '<div class="product-detail">1 x NVIDIA A100 - 40GB</div>'
    result = civo.parse([_mutated(detail, '<div class="product-detail">1 x NVIDIA A100 - '
                                          '80GB</div>')])
    assert "NVIDIA A100 40GB|1x|on_demand" not in {o.offer_key for o in result.offers}
    assert [r.reason for r in result.rejects] == [
        "NVIDIA A100 40GB: product detail '1 x NVIDIA A100 - 80GB' names another GPU"]
    assert len(result.offers) == 78


def test_a_row_without_product_detail_is_rejected() -> None:
    detail = '<div class="product-detail">8 x NVIDIA B200 - 180GB</div>'
    result = civo.parse([_mutated(detail, "")])
    assert [r.reason for r in result.rejects] == [
        "NVIDIA B200: row without an 'N x NVIDIA <model>' product detail ('')"]
    assert len(result.offers) == 80


def test_an_unrecognised_price_is_rejected_not_read() -> None:
    result = civo.parse([_mutated(H200_SMALL_ON_DEMAND, H200_SMALL_ON_DEMAND.replace(
        "$3.49", "\u00a32.79"))])
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("NVIDIA H200 SXM|1x|on_demand",
         "NVIDIA H200 SXM Small: unrecognised price '\u00a32.79 per hour'")]
    assert len(result.offers) == 82


def test_a_price_outside_every_term_block_is_rejected() -> None:
    old = ('<td data-title="Commitment price" class="pricing-data commitment-pricing">\n'
           '                              <div id="6_months" class="hidden">\n'
           '                                <div id="price-value-hourly" data-option="hourly"'
           ' class="price-value">$0.99<span>per hour</span></div>')
    new = old.replace('<div id="6_months" class="hidden">', '<div id="6_months" class="hidden">'
                      '</div><div class="hidden">')
    result = civo.parse([_mutated(old, new)])
    assert [r.reason for r in result.rejects] == [
        "NVIDIA A100 40GB Small: commitment cell without '<N>_months' terms, or with a price "
        "outside them"]
    assert "NVIDIA A100 40GB|1x|on_demand" in {o.offer_key for o in result.offers}


def test_a_row_with_a_cell_missing_is_rejected() -> None:
    result = civo.parse([_mutated('<td data-title="RAM">2.5TB</td>', "")])
    assert [r.reason for r in result.rejects] == ["NVIDIA B200: expected 7 cells, found 6"]


def test_renamed_on_demand_column_is_a_parse_error() -> None:
    capture = _capture()
    body = capture.body.replace(b'<th width="15%">On-demand</th>',
                                b'<th width="15%">Pay as you go</th>')
    with pytest.raises(ParseError) as err:
        civo.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == "on-demand"
    assert err.value.url == "https://www.civo.com/pricing"


def test_renamed_captions_are_a_parse_error() -> None:
    capture = _capture()
    body = capture.body.replace(b"GPU pricing</caption>", b"GPU prices</caption>")
    with pytest.raises(ParseError) as err:
        civo.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == "caption"


def test_an_empty_gpu_table_is_a_parse_error() -> None:
    capture = _capture()
    text = capture.text()
    start = text.index("<tbody>", text.index("<caption>NVIDIA B200 GPU pricing</caption>"))
    end = text.index("</tbody>", start)
    body = (text[:start + len("<tbody>")] + text[end:]).encode()
    with pytest.raises(ParseError) as err:
        civo.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == "tbody tr"


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("civo", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = civo.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / PAGE).read_bytes()
    assert capture.url == "https://www.civo.com/pricing"
    assert capture.fetched_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert len(civo.parse(captures).offers) == 83

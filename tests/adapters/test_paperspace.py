"""adapters/paperspace.py on the recorded 2024 Paperspace pricing cards."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import paperspace
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Interconnect, ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "paperspace"
PAGE = "paperspace_20240123092147.html"
URL = "https://www.paperspace.com/pricing"
FOOTNOTE_H100 = ("$2.24/hour pricing is for a 3-year commitment. On-demand pricing for H100 is "
                 "$6.00/hour ($8.96) under our special promo price.")
# Every card name on the page -> canonical GPU (None: knowingly unknown).
LABELS = {"H100": "h100-sxm-80gb", "A100-80G": "a100-sxm-80gb", "A4000": "rtx-a4000-16gb",
          "A6000": "rtx-a6000-48gb", "V100": "v100-sxm2-16gb", "A5000": "rtx-a5000-24gb",
          "P6000": "quadro-p6000-24gb", "RTX5000": "quadro-rtx-5000-16gb",
          "P5000": "quadro-p5000-16gb", "RTX4000": "quadro-rtx-4000-8gb",
          "P4000": "quadro-p4000-8gb", "M4000": "quadro-m4000-8gb"}


def _parse() -> ParseResult:
    return paperspace.parse([load_capture(SNAP, PAGE)])


def _offers() -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in _parse().offers}


def _mutated(old: str, new: str) -> Capture:
    capture = load_capture(SNAP, PAGE)
    return with_replaced(capture, old, new)


class TestPaperspaceInvariants(OfferInvariants):
    NAME = "paperspace"
    EXPECTED_UNKNOWN = frozenset()  # the Quadro rows joined the catalog

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return _parse().offers


def test_single_gpu_cards() -> None:
    single = {k: (o.pricing_model.value, o.price_per_hour) for k, o in _offers().items()
              if o.gpu_count == 1}
    assert single == {
        "H100|1x|reserved|36mo": ("reserved", 2.24),
        "A100-80G|1x|reserved|36mo": ("reserved", 1.15),
        "A4000|1x|on_demand": ("on_demand", 0.76), "A6000|1x|on_demand": ("on_demand", 1.89),
        "V100|1x|on_demand": ("on_demand", 2.3), "A5000|1x|on_demand": ("on_demand", 1.38),
        "P6000|1x|on_demand": ("on_demand", 1.1), "RTX5000|1x|on_demand": ("on_demand", 0.82),
        "P5000|1x|on_demand": ("on_demand", 0.78), "RTX4000|1x|on_demand": ("on_demand", 0.56),
        "P4000|1x|on_demand": ("on_demand", 0.51), "M4000|1x|on_demand": ("on_demand", 0.45),
    }
    assert all(o.price_kind is PriceKind.LISTED for o in _offers().values() if o.gpu_count == 1)


def test_multi_gpu_variants_follow_the_stated_rule() -> None:
    offers = _offers()
    multi = {k: o.price_per_hour for k, o in offers.items() if o.gpu_count > 1}
    assert len(multi) == 22
    assert multi["H100|8x|reserved|36mo"] == 17.92
    assert multi["A100-80G|8x|reserved|36mo"] == 9.2
    assert multi["A6000|4x|on_demand"] == 7.56
    assert multi["V100|2x|on_demand"] == 4.6
    assert "M4000|2x|on_demand" not in multi  # "Multi-GPU types: none"
    assert "H100|2x|reserved|36mo" not in multi  # H100 lists 8x only
    a6000 = offers["A6000|4x|on_demand"]
    assert (a6000.instance_type, a6000.gpu_count, a6000.vcpus, a6000.ram_gb) \
        == ("A6000x4", 4, 32.0, 180.0)
    assert all(offers[k].price_kind is PriceKind.DERIVED for k in multi)


def test_h100_reserved_8x_in_full() -> None:
    offer = _offers()["H100|8x|reserved|36mo"]
    assert offer.model_dump() == {
        "provider": "paperspace", "offer_key": "H100|8x|reserved|36mo",
        "instance_type": "H100x8", "gpu_label": "H100", "gpu_count": 8,
        "vram_gb_per_gpu": None, "pricing_model": PricingModel.RESERVED,
        "price_per_hour": 17.92, "currency": "USD", "price_kind": PriceKind.DERIVED,
        "region": None, "zone": None, "vcpus": 160.0, "ram_gb": 2048.0, "disk_gb": None,
        "interconnect": Interconnect.NVSWITCH, "interconnect_gbps": None, "network": None,
        "network_gbps": None, "billing_increment_s": None, "availability": "unknown",
        "available_count": None, "source_url": URL,
        "observed_at": datetime(2024, 1, 23, 9, 21, 47, tzinfo=UTC),
        "provider_data": {
            "machine": "H100", "specs": "NVIDIA HGX H100 GPU | 256 GB RAM | 20 vCPU",
            "price_per_gpu_hour": 2.24, "term": "3 years", "commitment_months": 36,
            "footnote": FOOTNOTE_H100,
            "multi_gpu_rule": "page: multiply the specs and price by the number of GPUs",
            "board": "HGX"},
    }


def test_reserved_prices_carry_their_term_and_hidden_prices_are_ignored() -> None:
    offers = _offers()
    a100 = offers["A100-80G|1x|reserved|36mo"]
    assert (a100.provider_data["term"], a100.provider_data["footnote"]) \
        == ("3 years", "$1.15/hour pricing is for a 3-year commitment.")
    h100 = offers["H100|1x|reserved|36mo"]
    # The card also holds a hidden "3.09" block with A100 specs: never read.
    assert (h100.price_per_hour, h100.vcpus, h100.ram_gb, h100.interconnect) \
        == (2.24, 20.0, 256.0, None)
    assert not any(o.price_per_hour == 3.09 for o in offers.values())
    assert not any("on_demand" in k for k in offers if k.startswith(("H100|", "A100-80G|")))


def test_vram_is_read_only_where_the_card_states_it() -> None:
    offers = _offers()
    assert offers["V100|1x|on_demand"].vram_gb_per_gpu == 16.0
    assert offers["P6000|1x|on_demand"].vram_gb_per_gpu == 24.0
    assert offers["A6000|1x|on_demand"].vram_gb_per_gpu is None  # "NVIDIA A6000 GPU"


def test_footnote_promo_price_is_rejected() -> None:
    result = _parse()
    assert [r.reason for r in result.rejects] == [
        "H100: on-demand price $6.00 is only in a footnote as a promo price with a second, "
        "unexplained figure"]
    assert result.rejects[0].raw == FOOTNOTE_H100


def test_marked_price_without_its_footnote_is_rejected() -> None:
    result = paperspace.parse([_mutated("**$1.15/hour pricing is for a 3-year commitment.",
                                        "Prices exclude VAT.")])
    assert not any(k.startswith("A100-80G|") for k in {o.offer_key for o in result.offers})
    assert "A100-80G: price 1.15** has no footnote '**' to explain it" \
        in [r.reason for r in result.rejects]


def test_footnote_without_a_term_is_rejected() -> None:
    result = paperspace.parse([_mutated("$1.15/hour pricing is for a 3-year commitment.",
                                        "$1.15/hour pricing is a limited offer.")])
    reasons = [r.reason for r in result.rejects]
    assert any(r.startswith("A100-80G: footnote '**' does not state a commitment term")
               for r in reasons)


def test_without_the_multiply_rule_variants_are_rejected() -> None:
    result = paperspace.parse([_mutated("Multiply the specs and price", "Ask us for the specs")])
    assert all(o.gpu_count == 1 for o in result.offers)
    assert "A4000 2x: multi-GPU variant without a price or a stated price rule" \
        in [r.reason for r in result.rejects]


def test_every_label_resolves_or_is_knowingly_unknown() -> None:
    catalog = load_catalog()
    offers = _parse().offers
    assert {o.gpu_label for o in offers} == set(LABELS)
    for offer in offers:
        res = catalog.resolve("paperspace", offer.gpu_label, offer.vram_gb_per_gpu)
        expected = LABELS[offer.gpu_label]
        if expected is None:
            assert isinstance(res, Unknown), offer.offer_key
        else:
            assert isinstance(res, Resolved) and res.gpu_id == expected, offer.offer_key


def test_renamed_price_class_is_a_parse_error() -> None:
    capture = load_capture(SNAP, PAGE)
    body = capture.body.replace(b"instance-price-2", b"instance-cost")
    with pytest.raises(ParseError) as err:
        paperspace.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == "h1.instance-price-2"
    assert err.value.url == URL


def test_page_without_cards_is_a_parse_error() -> None:
    capture = Capture(provider="paperspace", url=URL,
                      body=b'{"machines": []}', fetched_at=datetime(2024, 1, 1, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        paperspace.parse([capture])
    assert err.value.field == ".instance-blocks-flex"


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("paperspace", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = paperspace.fetch(client, {})
    assert len(captures) == 1
    assert captures[0].body == (SNAP / PAGE).read_bytes()
    assert captures[0].url == URL
    assert captures[0].fetched_at == datetime(2024, 1, 23, 9, 21, 47, tzinfo=UTC)
    assert len(paperspace.parse(captures).offers) == 34

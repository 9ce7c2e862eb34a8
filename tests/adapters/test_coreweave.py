"""adapters/coreweave.py on the recorded 2023 CoreWeave pricing table (GPU component prices)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import coreweave
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "coreweave"
PAGE = "coreweave_20230921194906.html"
URL = "https://www.coreweave.com/gpu-cloud-pricing"
HGX_H100 = "hgx-h100|gpu_component|on_demand"
# Every label the page prints -> canonical GPU (None: knowingly unknown).
LABELS = {
    ("NVIDIA HGX H100", 80): "h100-sxm-80gb", ("NVIDIA H100 PCIe", 80): "h100-pcie-80gb",
    ("A100 80GB NVLINK", 80): "a100-sxm-80gb", ("A100 80GB PCIe", 80): "a100-pcie-80gb",
    ("A100 40GB NVLINK", 40): "a100-sxm-40gb", ("A100 40GB PCIe", 40): "a100-pcie-40gb",
    ("A40", 48): "a40-48gb", ("RTX A6000", 48): "rtx-a6000-48gb",
    ("RTX A5000", 24): "rtx-a5000-24gb", ("RTX A4000", 16): "rtx-a4000-16gb",
    ("Quadro RTX 5000", 16): "quadro-rtx-5000-16gb", ("Quadro RTX 4000", 8): "quadro-rtx-4000-8gb",
    ("Tesla V100 NVLINK", None): None,  # the excerpt cuts this row before its VRAM
}


def _parse() -> ParseResult:
    return coreweave.parse([load_capture(SNAP, PAGE)])


def _mutated(old: str, new: str) -> Capture:
    capture = load_capture(SNAP, PAGE)
    return with_replaced(capture, old, new)


class TestCoreweaveInvariants(OfferInvariants):
    NAME = "coreweave"
    EXPECTED_UNKNOWN = frozenset()  # the Quadro RTX 4000/5000 rows joined the catalog

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return _parse().offers


def test_every_row_is_a_one_gpu_component_price() -> None:
    result = _parse()
    assert {o.offer_key: o.price_per_hour for o in result.offers} == {
        "hgx-h100|gpu_component|on_demand": 4.76,
        "h100-pcie|gpu_component|on_demand": 4.25,
        "nvidia-a100-80gb|gpu_component|on_demand": 2.21,
        "a100-80gb-pcie|gpu_component|on_demand": 2.21,
        "a100-40gb-nvlink|gpu_component|on_demand": 2.06,
        "a100-40gb-pcie|gpu_component|on_demand": 2.06,
        "a40|gpu_component|on_demand": 1.28,
        "rtx-a6000|gpu_component|on_demand": 1.28,
        "rtx-a5000|gpu_component|on_demand": 0.77,
        "rtx-a4000|gpu_component|on_demand": 0.61,
        "quadro-rtx-5000|gpu_component|on_demand": 0.57,
        "quadro-rtx-4000|gpu_component|on_demand": 0.24,
    }
    for offer in result.offers:
        # Never presented as a whole instance: one GPU, CPU and RAM explicitly not included.
        assert offer.gpu_count == 1
        assert offer.provider_data["price_scope"] == "gpu_component"
        assert offer.vcpus is None and offer.ram_gb is None


def test_hgx_h100_offer_in_full() -> None:
    offer = {o.offer_key: o for o in _parse().offers}[HGX_H100]
    assert offer.model_dump() == {
        "provider": "coreweave", "offer_key": HGX_H100, "instance_type": "hgx-h100",
        "gpu_label": "NVIDIA HGX H100", "gpu_count": 1, "vram_gb_per_gpu": 80.0,
        "pricing_model": PricingModel.ON_DEMAND, "price_per_hour": 4.76, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": None, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None, "source_url": URL,
        "observed_at": datetime(2023, 9, 21, 19, 49, 6, tzinfo=UTC),
        "provider_data": {"price_scope": "gpu_component",
                          "billed_separately": "vCPU and RAM (rates not on the page)",
                          "max_vcpus_per_gpu": 48.0, "max_ram_gb_per_gpu": 256.0,
                          "reserve_url": "/hgx-h100-reserve-capacity"},
    }


def test_smaller_cards_carry_their_own_limits() -> None:
    offer = {o.offer_key: o for o in _parse().offers}["rtx-a4000|gpu_component|on_demand"]
    assert (offer.gpu_label, offer.vram_gb_per_gpu) == ("RTX A4000", 16.0)
    assert (offer.provider_data["max_vcpus_per_gpu"],
            offer.provider_data["max_ram_gb_per_gpu"]) == (36.0, 128.0)


def test_row_cut_by_the_excerpt_is_rejected_and_marks_the_page_incomplete() -> None:
    result = _parse()
    assert [r.reason for r in result.rejects] == [
        "incomplete row: expected 4 value cells, found 0"]
    assert 'data-product="tesla-v100-nvlink"' in result.rejects[0].raw
    assert result.complete is False


def test_every_label_resolves_or_is_knowingly_unknown() -> None:
    catalog = load_catalog()
    for (label, vram), expected in LABELS.items():
        res = catalog.resolve("coreweave", label, vram)
        if expected is None:
            assert isinstance(res, Unknown), label
        else:
            assert isinstance(res, Resolved) and res.gpu_id == expected, label
    # The cut V100 row: its VRAM, once read, picks the SXM2 size; never a guess without it.
    assert catalog.resolve("coreweave", "Tesla V100 NVLINK", 32).gpu_id == "v100-sxm2-32gb"
    assert {o.gpu_label for o in _parse().offers} | {"Tesla V100 NVLINK"} \
        == {label for label, _ in LABELS}


def test_a_price_that_is_not_a_dollar_amount_is_rejected() -> None:
    result = coreweave.parse([_mutated("<strong>$0.24</strong>", "<strong>Contact us</strong>")])
    assert "quadro-rtx-4000|gpu_component|on_demand" not in {o.offer_key for o in result.offers}
    assert "unrecognised GPU component price 'Contact us'" in [r.reason for r in result.rejects]


def test_without_the_component_header_the_price_is_refused() -> None:
    # An instance-priced table must never be read as component prices, or the reverse.
    capture = _mutated("GPU Component<br/>Cost Per Hour", "Instance<br/>Cost Per Hour")
    with pytest.raises(ParseError) as err:
        coreweave.parse([capture])
    assert err.value.field == "GPU Component Cost Per Hour"
    assert err.value.url == URL


def test_renamed_product_attribute_is_a_parse_error() -> None:
    capture = load_capture(SNAP, PAGE)
    body = capture.body.replace(b"data-product=", b"data-sku=")
    with pytest.raises(ParseError) as err:
        coreweave.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == "data-product"


def test_page_without_rows_is_a_parse_error() -> None:
    capture = Capture(provider="coreweave", url=URL,
                      body=b"<html><body><h1>Pricing</h1><p>Contact sales.</p></body></html>",
                      fetched_at=datetime(2023, 9, 21, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        coreweave.parse([capture])
    assert err.value.field == ".table-body-row"
    assert err.value.snippet is not None and "Contact sales" in err.value.snippet


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("coreweave", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = coreweave.fetch(client, {})
    assert len(captures) == 1
    assert captures[0].body == (SNAP / PAGE).read_bytes()
    assert captures[0].url == URL
    assert captures[0].fetched_at == datetime(2023, 9, 21, 19, 49, 6, tzinfo=UTC)
    assert len(coreweave.parse(captures).offers) == 12

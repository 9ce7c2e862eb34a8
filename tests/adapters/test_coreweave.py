"""adapters/coreweave.py on the recorded CoreWeave pricing pages: the 2026 per-instance region
tables (bundled snapshot) and the 2023 GPU component table (tests/fixtures/coreweave)."""

from __future__ import annotations

from datetime import UTC, datetime
from hashlib import sha256

import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import coreweave
from gpuscout.adapters.archive import Capture, ReplayTransport, read_manifest
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import (
    Interconnect,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
)

SNAP = SNAPSHOTS_DIR / "coreweave"
PAGE = "pricing_gpu_index_055204a_2026-08-22.html"
URL = "https://www.coreweave.com/pricing"
FIX = FIXTURES / "coreweave"
OLD_PAGE = "coreweave_20230921194906.html"  # the 2023 GPU component layout
OLD_URL = "https://www.coreweave.com/gpu-cloud-pricing"
HGX_H100 = "hgx-h100|gpu_component|on_demand"
B200_NA = "nvidia-b200|north-america"
# The North America B200 row's two labelled prices: this text occurs once on the page.
B200_NA_PRICES = ('On-Demand Price: <span class="item-value">$68.80</span> / Hour<br/></span>\n'
                  '      <span class="spot-price">Spot Price: <span class="item-value">$34.11')
# Every label the 2026 page prints -> canonical GPU (None: knowingly unknown).
LABELS_2026 = {
    ("NVIDIA GB200 NVL72", 186): "gb200-186gb", ("NVIDIA HGX B300", 270): "b300-sxm-288gb",
    ("NVIDIA HGX B200", 180): "b200-sxm-180gb", ("NVIDIA HGX H100", 80): "h100-sxm-80gb",
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 96): "rtx-pro-6000-96gb",
    ("NVIDIA HGX H200", 141): "h200-sxm-141gb", ("NVIDIA GH200", 96): "gh200-96gb",
    ("NVIDIA L40", 48): "l40-48gb", ("NVIDIA L40S", 48): "l40s-48gb",
    ("NVIDIA A100", 80): None,  # the page states neither SXM nor PCIe
    ("NVIDIA GB300 NVL72", 279): "gb300-288gb",  # contact sales only: no offer yet
}
# Every label the 2023 page prints -> canonical GPU (None: knowingly unknown).
LABELS_2023 = {
    ("NVIDIA HGX H100", 80): "h100-sxm-80gb", ("NVIDIA H100 PCIe", 80): "h100-pcie-80gb",
    ("A100 80GB NVLINK", 80): "a100-sxm-80gb", ("A100 80GB PCIe", 80): "a100-pcie-80gb",
    ("A100 40GB NVLINK", 40): "a100-sxm-40gb", ("A100 40GB PCIe", 40): "a100-pcie-40gb",
    ("A40", 48): "a40-48gb", ("RTX A6000", 48): "rtx-a6000-48gb",
    ("RTX A5000", 24): "rtx-a5000-24gb", ("RTX A4000", 16): "rtx-a4000-16gb",
    ("Quadro RTX 5000", 16): "quadro-rtx-5000-16gb", ("Quadro RTX 4000", 8): "quadro-rtx-4000-8gb",
    ("Tesla V100 NVLINK", None): None,  # the excerpt cuts this row before its VRAM
}


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _parse() -> ParseResult:
    return coreweave.parse([_capture()])


def _offers() -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in _parse().offers}


def _mutated(old: str, new: str, *, exactly_once: bool = False) -> Capture:
    return with_replaced(_capture(), old, new, exactly_once=exactly_once)


def _old_capture() -> Capture:
    return load_capture(FIX, OLD_PAGE)


def _old_parse() -> ParseResult:
    return coreweave.parse([_old_capture()])


def _old_mutated(old: str, new: str) -> Capture:
    return with_replaced(_old_capture(), old, new)


class TestCoreweaveInvariants(OfferInvariants):
    NAME = "coreweave"
    EXPECTED_UNKNOWN = frozenset({"NVIDIA A100"})  # listed as unmapped: form factor not stated

    @pytest.fixture(params=["2026", "2023"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return (_parse() if request.param == "2026" else _old_parse()).offers


# -- 2026: per-instance prices by region -------------------------------------------------------


def test_both_region_tables_are_read_and_nothing_else() -> None:
    result = _parse()
    assert result.rejects == [] and result.complete is True
    by_region = {r: sorted(o.offer_key.split("|", 1)[0] + "|" + o.pricing_model.value
                           for o in result.offers if o.region == r)
                 for r in {o.region for o in result.offers}}
    assert {r: len(keys) for r, keys in by_region.items()} == {"north-america": 17, "europe": 15}
    assert {o.provider_data["region_heading"] for o in result.offers} == {"NORTH AMERICA",
                                                                         "EUROPE"}
    # Europe has no spot L40 / L40S; GH200 and GB200 have no spot anywhere.
    assert set(by_region["north-america"]) - set(by_region["europe"]) == {
        "nvidia-l40|spot", "nvidia-l40s|spot"}
    assert {o.pricing_model for o in result.offers} == {PricingModel.ON_DEMAND, PricingModel.SPOT}
    assert all(o.price_kind is PriceKind.LISTED and o.source_url == URL for o in result.offers)


def test_every_price_is_the_whole_instance() -> None:
    prices = {k: (o.gpu_count, o.price_per_hour) for k, o in _offers().items()
              if o.region == "north-america"}
    assert prices == {
        "nvidia-gb200-nvl72|north-america|on_demand": (4, 42.00),
        "nvidia-b300|north-america|spot": (8, 35.84),
        "nvidia-b200|north-america|on_demand": (8, 68.80),
        "nvidia-b200|north-america|spot": (8, 34.11),
        "nvidia-rtx-pro-6000-blackwell-server-edition|north-america|on_demand": (8, 20.00),
        "nvidia-rtx-pro-6000-blackwell-server-edition|north-america|spot": (8, 11.09),
        "hgx-h100|north-america|on_demand": (8, 49.24),
        "hgx-h100|north-america|spot": (8, 19.71),
        "hgx-h200|north-america|on_demand": (8, 50.44),
        "hgx-h200|north-america|spot": (8, 20.93),
        "nvidia-gh200|north-america|on_demand": (1, 6.50),
        "nvidia-l40|north-america|on_demand": (8, 10.00),
        "nvidia-l40|north-america|spot": (8, 6.27),
        "nvidia-l40s|north-america|on_demand": (8, 18.00),
        "nvidia-l40s|north-america|spot": (8, 7.88),
        "nvidia-a100|north-america|on_demand": (8, 21.60),
        "nvidia-a100|north-america|spot": (8, 9.65),
    }
    europe = {k: o.price_per_hour for k, o in _offers().items() if o.region == "europe"}
    assert europe["nvidia-b200|europe|spot"] == 34.87
    assert europe["nvidia-b300|europe|spot"] == 36.70
    assert europe["hgx-h200|europe|spot"] == 20.64
    assert europe["nvidia-a100|europe|spot"] == 9.51


def test_b200_offer_in_full() -> None:
    offer = _offers()[f"{B200_NA}|on_demand"]
    assert offer.model_dump() == {
        "provider": "coreweave", "offer_key": f"{B200_NA}|on_demand",
        "instance_type": "nvidia-b200", "gpu_label": "NVIDIA HGX B200", "gpu_count": 8.0,
        "vram_gb_per_gpu": 180.0, "pricing_model": PricingModel.ON_DEMAND,
        "price_per_hour": 68.80, "currency": "USD", "price_kind": PriceKind.LISTED,
        "region": "north-america", "zone": None, "vcpus": 128.0, "ram_gb": 2048.0,
        "disk_gb": 61440.0, "interconnect": Interconnect.NVSWITCH, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None, "source_url": URL,
        "observed_at": datetime(2026, 8, 22, tzinfo=UTC),
        "provider_data": {"region_heading": "NORTH AMERICA", "local_storage_tb": 61.44},
    }


def test_gb200_instance_is_four_gpus_from_the_footnoted_count() -> None:
    for region in ("north-america", "europe"):
        offer = _offers()[f"nvidia-gb200-nvl72|{region}|on_demand"]
        assert (offer.gpu_count, offer.price_per_hour, offer.vram_gb_per_gpu) == (4, 42.00, 186)
        assert offer.provider_data["gpu_count_cell"] == "4^1"
        assert (offer.vcpus, offer.ram_gb, offer.disk_gb) == (144, 960, 30720)
        assert f"nvidia-gb200-nvl72|{region}|spot" not in _offers()  # spot "N/A"


def test_b300_is_spot_only_and_gh200_one_gpu() -> None:
    offers = _offers()
    b300 = {k: o.price_per_hour for k, o in offers.items() if k.startswith("nvidia-b300|")}
    assert b300 == {"nvidia-b300|north-america|spot": 35.84, "nvidia-b300|europe|spot": 36.70}
    assert offers["nvidia-b300|europe|spot"].vram_gb_per_gpu == 270
    for region in ("north-america", "europe"):
        gh200 = offers[f"nvidia-gh200|{region}|on_demand"]
        assert (gh200.gpu_count, gh200.price_per_hour) == (1, 6.50)
        assert (gh200.vcpus, gh200.ram_gb, gh200.interconnect) == (72, 480, None)
        assert f"nvidia-gh200|{region}|spot" not in offers


def test_contact_sales_cpu_rows_and_inference_prices_yield_nothing() -> None:
    result = _parse()
    labels = {o.gpu_label for o in result.offers}
    assert "NVIDIA GB300 NVL72" not in labels  # "Contact sales": no price, no offer, no error
    assert not [o for o in result.offers if "Genoa" in o.gpu_label]  # the CPU section
    assert "AMD Genoa (9274F)" in _capture().text()
    # Inference platform prices (B200 $8.60, H100 $6.16, GB200 $10.50 ...) are another product.
    inference = {8.60, 6.16, 10.50, 2.50, 6.31, 1.25, 2.25, 2.70}
    assert not {o.price_per_hour for o in result.offers} & inference
    assert result.rejects == []


def test_the_unlabelled_grid_copies_are_never_read() -> None:
    # The desktop grid repeats each price in a bare cell; only the labelled span counts.
    capture = _mutated("\t<div>$68.80</div>", "\t<div>$99.99</div>")
    assert {o.price_per_hour for o in coreweave.parse([capture]).offers
            if o.instance_type == "nvidia-b200" and o.pricing_model is PricingModel.ON_DEMAND} \
        == {68.80}


def test_every_2026_label_resolves_or_is_knowingly_unknown() -> None:
    catalog = load_catalog()
    for (label, vram), expected in LABELS_2026.items():
        res = catalog.resolve("coreweave", label, vram)
        if expected is None:
            assert isinstance(res, Unknown), label
        else:
            assert isinstance(res, Resolved) and res.gpu_id == expected, label
    assert {(o.gpu_label, o.vram_gb_per_gpu) for o in _parse().offers} \
        | {("NVIDIA GB300 NVL72", 279)} == set(LABELS_2026)


# -- 2026: faults ------------------------------------------------------------------------------


def test_a_renamed_on_demand_label_in_one_row_rejects_that_row() -> None:
    capture = _mutated(B200_NA_PRICES, B200_NA_PRICES.replace("On-Demand Price:",
                                                              "On Demand Price:"),
                       exactly_once=True)
    result = coreweave.parse([capture])
    keys = {o.offer_key for o in result.offers}
    # Neither a spot-only row nor a guess: the whole row is refused and named.
    assert not {f"{B200_NA}|on_demand", f"{B200_NA}|spot"} & keys
    assert "nvidia-b200|europe|on_demand" in keys and len(keys) == 30
    assert [r.reason for r in result.rejects] == [
        "REGION: NORTH AMERICA: NVIDIA HGX B200: unrecognised price label 'On Demand Price'"]
    assert result.complete is False


def test_a_renamed_on_demand_label_everywhere_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        coreweave.parse([_mutated("On-Demand Price:", "Price on demand:")])
    assert err.value.field == "On-Demand Price"
    assert err.value.url == URL


def test_a_price_that_is_not_a_dollar_amount_is_rejected() -> None:
    capture = _mutated(B200_NA_PRICES, B200_NA_PRICES.replace("$68.80", "€68.80"),
                       exactly_once=True)
    result = coreweave.parse([capture])
    keys = {o.offer_key for o in result.offers}
    assert f"{B200_NA}|on_demand" not in keys and f"{B200_NA}|spot" in keys
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        (f"{B200_NA}|on_demand", "REGION: NORTH AMERICA: unrecognised On-Demand Price '€68.80'")]
    assert result.complete is False


def test_an_unreadable_gpu_count_rejects_the_row() -> None:
    capture = _mutated('<div class="table-meta-value">1</div>\n\t\t\t\t<div>GPU Count</div>',
                       '<div class="table-meta-value">one</div>\n\t\t\t\t<div>GPU Count</div>')
    result = coreweave.parse([capture])
    assert not [o for o in result.offers if o.instance_type == "nvidia-gh200"]
    assert [r.reason for r in result.rejects] == [
        "REGION: NORTH AMERICA: NVIDIA GH200: unreadable 'GPU Count' ['one']",
        "REGION: EUROPE: NVIDIA GH200: unreadable 'GPU Count' ['one']"]


def test_a_renamed_gpu_count_label_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        coreweave.parse([_mutated("<div>GPU Count</div>", "<div>GPUs</div>")])
    assert err.value.field == "GPU Count"


def test_no_region_tables_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        coreweave.parse([_mutated("REGION:", "Location")])
    assert err.value.field == "REGION:"
    assert "no region table" in str(err.value)


def test_region_tables_without_rows_are_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        coreweave.parse([_mutated('role="listitem"', 'role="presentation"')])
    assert err.value.field == "div[role=listitem]"
    assert "REGION: NORTH AMERICA table has no rows" in str(err.value)


def test_without_the_gpu_instances_section_the_page_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        coreweave.parse([_mutated("On-demand GPU instances", "Our hardware")])
    assert err.value.field == "On-demand GPU instances"


def test_page_without_any_known_layout_is_a_parse_error() -> None:
    capture = Capture(provider="coreweave", url=URL,
                      body=b"<html><body><h1>Pricing</h1><p>Contact sales.</p></body></html>",
                      fetched_at=datetime(2026, 8, 22, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        coreweave.parse([capture])
    assert err.value.field == "On-demand GPU instances"
    assert err.value.snippet is not None and "Contact sales" in err.value.snippet


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("coreweave", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = coreweave.fetch(client, {})
    assert len(captures) == 1
    assert captures[0].body == (SNAP / PAGE).read_bytes()
    assert captures[0].url == URL == coreweave.PRICING_URL
    assert captures[0].fetched_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert len(coreweave.parse(captures).offers) == 32


def test_fixture_matches_its_manifest() -> None:
    entries = read_manifest(FIX)
    assert [e.file for e in entries] == [OLD_PAGE]
    assert sha256((FIX / OLD_PAGE).read_bytes()).hexdigest() == entries[0].sha256
    assert entries[0].url == OLD_URL


# -- 2023: GPU component prices (tests/fixtures/coreweave) -------------------------------------


def test_every_row_is_a_one_gpu_component_price() -> None:
    result = _old_parse()
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
    offer = {o.offer_key: o for o in _old_parse().offers}[HGX_H100]
    assert offer.model_dump() == {
        "provider": "coreweave", "offer_key": HGX_H100, "instance_type": "hgx-h100",
        "gpu_label": "NVIDIA HGX H100", "gpu_count": 1, "vram_gb_per_gpu": 80.0,
        "pricing_model": PricingModel.ON_DEMAND, "price_per_hour": 4.76, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": None, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None, "source_url": OLD_URL,
        "observed_at": datetime(2023, 9, 21, 19, 49, 6, tzinfo=UTC),
        "provider_data": {"price_scope": "gpu_component",
                          "billed_separately": "vCPU and RAM (rates not on the page)",
                          "max_vcpus_per_gpu": 48.0, "max_ram_gb_per_gpu": 256.0,
                          "reserve_url": "/hgx-h100-reserve-capacity"},
    }


def test_smaller_cards_carry_their_own_limits() -> None:
    offer = {o.offer_key: o for o in _old_parse().offers}["rtx-a4000|gpu_component|on_demand"]
    assert (offer.gpu_label, offer.vram_gb_per_gpu) == ("RTX A4000", 16.0)
    assert (offer.provider_data["max_vcpus_per_gpu"],
            offer.provider_data["max_ram_gb_per_gpu"]) == (36.0, 128.0)


def test_row_cut_by_the_excerpt_is_rejected_and_marks_the_page_incomplete() -> None:
    result = _old_parse()
    assert [r.reason for r in result.rejects] == [
        "incomplete row: expected 4 value cells, found 0"]
    assert 'data-product="tesla-v100-nvlink"' in result.rejects[0].raw
    assert result.complete is False


def test_every_2023_label_resolves_or_is_knowingly_unknown() -> None:
    catalog = load_catalog()
    for (label, vram), expected in LABELS_2023.items():
        res = catalog.resolve("coreweave", label, vram)
        if expected is None:
            assert isinstance(res, Unknown), label
        else:
            assert isinstance(res, Resolved) and res.gpu_id == expected, label
    # The cut V100 row: its VRAM, once read, picks the SXM2 size; never a guess without it.
    assert catalog.resolve("coreweave", "Tesla V100 NVLINK", 32).gpu_id == "v100-sxm2-32gb"
    assert {o.gpu_label for o in _old_parse().offers} | {"Tesla V100 NVLINK"} \
        == {label for label, _ in LABELS_2023}


def test_a_component_price_that_is_not_a_dollar_amount_is_rejected() -> None:
    result = coreweave.parse([_old_mutated("<strong>$0.24</strong>",
                                           "<strong>Contact us</strong>")])
    assert "quadro-rtx-4000|gpu_component|on_demand" not in {o.offer_key for o in result.offers}
    assert "unrecognised GPU component price 'Contact us'" in [r.reason for r in result.rejects]


def test_without_the_component_header_the_price_is_refused() -> None:
    # An instance-priced table must never be read as component prices, or the reverse.
    capture = _old_mutated("GPU Component<br/>Cost Per Hour", "Instance<br/>Cost Per Hour")
    with pytest.raises(ParseError) as err:
        coreweave.parse([capture])
    assert err.value.field == "GPU Component Cost Per Hour"
    assert err.value.url == OLD_URL


def test_renamed_product_attribute_is_a_parse_error() -> None:
    capture = _old_capture()
    body = capture.body.replace(b"data-product=", b"data-sku=")
    with pytest.raises(ParseError) as err:
        coreweave.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == "data-product"


def test_an_archive_of_both_layouts_keeps_both_kinds_of_offer() -> None:
    result = coreweave.parse([_capture(), _old_capture()])
    scopes = [o.provider_data.get("price_scope") for o in result.offers]
    assert (scopes.count("gpu_component"), scopes.count(None)) == (12, 32)

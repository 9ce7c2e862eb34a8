"""adapters/sesterce.py on the console's offers book of 2026-08-25 (flight data)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import sesterce
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, Interconnect, ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "sesterce"
PAGE = "compute_gpu_index_7f72e1f_2026-08-25.html"
Q = '\\"'  # a quote inside a flight chunk, as the page's bytes spell it: \"


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _flight(field: str, value: str) -> str:
    return f"{Q}{field}{Q}:{value}"


class TestSesterceInvariants(OfferInvariants):
    NAME = "sesterce"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return sesterce.parse([_capture()]).offers


def test_each_gpu_configuration_once_per_region() -> None:
    result = sesterce.parse([_capture()])
    assert (len(result.offers), result.rejects, result.complete) == (27, [], True)
    per_config = Counter((o.instance_type, o.gpu_label, o.gpu_count, o.price_per_hour)
                         for o in result.offers)
    assert per_config == {
        ("H200x8", "H200 SXM5", 8, 28.16): 1,
        ("RTXPro6000x8", "RTXPro6000 PCIE", 8, 30.008000000000003): 5,
        ("A100_sxm4_80Gx8", "A100_80G SXM4", 8, 24.552000000000003): 8,
        ("H100", "H100 PCIE", 1, 2.189): 1,
        ("H100_sxm5", "H100 SXM5", 1, 4.796): 4,
        ("A100_sxm4", "A100 SXM4", 1, 2.189): 8,
    }
    assert Counter(o.availability for o in result.offers) == {
        Availability.IN_STOCK: 13, Availability.OUT_OF_STOCK: 14}
    assert {o.pricing_model for o in result.offers} == {PricingModel.ON_DEMAND}


def test_the_price_is_the_whole_configuration_and_vram_is_per_gpu() -> None:
    offers = {o.offer_key: o for o in sesterce.parse([_capture()]).offers}
    h200 = offers["H200x8|AZ_22|vm|tokyo-japan-5|on_demand"]
    assert (h200.price_per_hour, h200.vram_gb_per_gpu, h200.interconnect) == (
        28.16, 141, Interconnect.NVLINK)
    assert (h200.vcpus, h200.ram_gb, h200.disk_gb, h200.region) == (
        208, 1904, 30000, "tokyo-japan-5")
    assert h200.provider_data == {"price_per_gpu_hour": 3.52, "gpu_name": "H200",
                                  "deployment_type": "vm", "cloud_tag": "AZ_22",
                                  "location": "tokyo-japan-5"}
    assert h200.observed_at == datetime(2026, 8, 25, tzinfo=UTC)
    tokyo = offers["RTXPro6000x8|AZ_02|baremetal|TYO4|on_demand"]
    assert (tokyo.availability, tokyo.vram_gb_per_gpu, tokyo.interconnect) == (
        Availability.OUT_OF_STOCK, 96, None)
    mumbai = offers["A100_sxm4|AZ_07|vm|mumbai-india-1|on_demand"]
    assert (mumbai.vram_gb_per_gpu, mumbai.provider_data["country"]) == (40, "IN")


def test_labels_carry_the_form_factor_and_resolve() -> None:
    catalog = load_catalog()
    got = {o.gpu_label: getattr(catalog.resolve("sesterce", o.gpu_label, o.vram_gb_per_gpu),
                                "gpu_id", None)
           for o in sesterce.parse([_capture()]).offers}
    assert got == {"H200 SXM5": "h200-sxm-141gb", "RTXPro6000 PCIE": "rtx-pro-6000-96gb",
                   "A100_80G SXM4": "a100-sxm-80gb", "H100 PCIE": "h100-pcie-80gb",
                   "H100 SXM5": "h100-sxm-80gb", "A100 SXM4": "a100-sxm-40gb"}


def test_cpu_machines_are_no_offers() -> None:
    assert b"cpu_small" in _capture().body
    assert "CPU" not in {o.gpu_label for o in sesterce.parse([_capture()]).offers}


def test_a_spot_price_is_read_where_the_book_offers_spot() -> None:
    capture = with_replaced(_capture(), _flight("spotOfferAvailable", "false") + ","
                            + _flight("hourlySpotPrice", "0") + "," + _flight("hourlyPrice",
                                                                              "28.16"),
                            _flight("spotOfferAvailable", "true") + ","
                            + _flight("hourlySpotPrice", "14.08") + ","
                            + _flight("hourlyPrice", "28.16"), exactly_once=True)
    spot = [o for o in sesterce.parse([capture]).offers if o.pricing_model is PricingModel.SPOT]
    assert [(o.offer_key, o.price_per_hour) for o in spot] == [
        ("H200x8|AZ_22|vm|tokyo-japan-5|spot", 14.08)]


def test_a_configuration_without_a_price_is_a_reject_per_region() -> None:
    capture = with_replaced(_capture(), _flight("hourlyPrice", "28.16"),
                            _flight("hourlyPrice", "null"), exactly_once=True)
    result = sesterce.parse([capture])
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("H200x8|AZ_22|vm|tokyo-japan-5|on_demand", "on_demand price is not a price: None")]
    assert len(result.offers) == 26


def test_the_reference_strings_elsewhere_do_not_count_as_the_book() -> None:
    assert _capture().body.count(b"filteredOffers") == 2  # the array and one reference
    assert len(sesterce.parse([_capture()]).offers) == 27


@pytest.mark.parametrize(("old", "new", "field"), [
    ("self.__next_f.push", "self.__nxt_f.push", "__next_f"),
    (f"{Q}filteredOffers{Q}:[", f"{Q}offers{Q}:[", "filteredOffers"),
    (f"{Q}filteredOffers{Q}:[{{", f"{Q}filteredOffers{Q}:[{{,", "filteredOffers"),
])
def test_a_reshaped_flight_payload_is_a_parse_error(old: str, new: str, field: str) -> None:
    with pytest.raises(ParseError) as err:
        sesterce.parse([with_replaced(_capture(), old, new, exactly_once=True)])
    assert err.value.field == field


def test_two_offers_arrays_are_a_parse_error() -> None:
    capture = _capture()
    extra = '<script>self.__next_f.push([1,"' + json.dumps('{"filteredOffers":[]}')[1:-1] + \
        '"])</script>'
    with pytest.raises(ParseError, match="2 filteredOffers arrays"):
        sesterce.parse([capture.model_copy(update={"body": capture.body + extra.encode()})])


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("sesterce", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = sesterce.fetch(client, {})
    assert [c.url for c in captures] == [sesterce.COMPUTE_URL]
    assert captures[0].body == (SNAP / PAGE).read_bytes()

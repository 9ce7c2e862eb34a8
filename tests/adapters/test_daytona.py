"""adapters/daytona.py on the GPU rate card of 2026-09-23."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from invariants import OfferInvariants, load_capture, with_json_edit

from gpuscout.adapters import daytona
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "daytona"
CARD = "gpu_pricing_gpuhunt_b57dbe8_2026-09-23.json"


def _capture(edit: Any = None) -> Capture:
    return with_json_edit(load_capture(SNAP, CARD), edit)


class TestDaytonaInvariants(OfferInvariants):
    NAME = "daytona"
    EXPECTED_UNKNOWN = frozenset({"H100", "H200"})  # the card names no form factor

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return daytona.parse([_capture()]).offers


def test_every_gpu_on_demand_and_spot_at_the_gpu_rate() -> None:
    result = daytona.parse([_capture()])
    assert (result.rejects, result.complete) == ([], True)
    got = {o.offer_key: (o.gpu_count, o.pricing_model, o.price_per_hour) for o in result.offers}
    assert got == {
        "B300|on_demand": (1, PricingModel.ON_DEMAND, 7.1),
        "B300|spot": (1, PricingModel.SPOT, 4.08),
        "B200|on_demand": (1, PricingModel.ON_DEMAND, 6.25),
        "B200|spot": (1, PricingModel.SPOT, 3.59),
        "MI355X|on_demand": (1, PricingModel.ON_DEMAND, 5.99),
        "MI355X|spot": (1, PricingModel.SPOT, 3.44),
        "H200|on_demand": (1, PricingModel.ON_DEMAND, 4.54),
        "H200|spot": (1, PricingModel.SPOT, 2.61),
        "H100|on_demand": (1, PricingModel.ON_DEMAND, 3.95),
        "H100|spot": (1, PricingModel.SPOT, 2.27),
        "RTX-PRO-6000|on_demand": (1, PricingModel.ON_DEMAND, 3.03),
        "RTX-PRO-6000|spot": (1, PricingModel.SPOT, 1.74),
        "RTX-5090|on_demand": (1, PricingModel.ON_DEMAND, 1.29),
        "RTX-5090|spot": (1, PricingModel.SPOT, 0.74),
        "RTX-4090|on_demand": (1, PricingModel.ON_DEMAND, 0.99),
        "RTX-4090|spot": (1, PricingModel.SPOT, 0.57),
    }


def test_the_price_is_the_gpu_component_and_the_resource_rates_ride_along() -> None:
    offers = {o.offer_key: o for o in daytona.parse([_capture()]).offers}
    h100, spot = offers["H100|on_demand"], offers["H100|spot"]
    assert h100.provider_data == {
        "price_scope": "gpu_component", "price_basis": "per GPU", "capacity_type": "on_demand",
        "usd_vcpuPerHour": 0.0504, "usd_memoryGiBPerHour": 0.0162,
        "usd_diskGiBPerHour": 0.000108}
    assert (spot.provider_data["usd_vcpuPerHour"], spot.provider_data["usd_memoryGiBPerHour"],
            spot.provider_data["usd_diskGiBPerHour"]) == (0.03, 0.0093, 0.000062)
    assert (h100.billing_increment_s, h100.region, h100.vcpus, h100.ram_gb) == (
        1, None, None, None)
    assert h100.observed_at == datetime(2026, 9, 23, 8, 43, 9, tzinfo=UTC)
    assert h100.source_url == daytona.PRICING_URL


def test_labels_resolve_where_the_card_names_the_gpu_exactly() -> None:
    catalog = load_catalog()
    got = {label: getattr(catalog.resolve("daytona", label), "gpu_id", None)
           for label in ("B300", "B200", "MI355X", "RTX-PRO-6000", "RTX-5090", "RTX-4090")}
    assert got == {"B300": "b300-sxm-288gb", "B200": "b200-sxm-180gb", "MI355X": "mi355x-288gb",
                   "RTX-PRO-6000": "rtx-pro-6000-96gb", "RTX-5090": "rtx-5090-32gb",
                   "RTX-4090": "rtx-4090-24gb"}
    assert isinstance(catalog.resolve("daytona", "H100"), Unknown)
    assert isinstance(catalog.resolve("daytona", "B300"), Resolved)


def test_a_gpu_without_a_spot_rate_is_a_reject_and_keeps_its_on_demand_offer() -> None:
    result = daytona.parse([_capture(lambda d: d["gpus"][0].update(spotPricePerHour=0))])
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("B300|spot", "spotPricePerHour is not a price: 0")]
    assert "B300|on_demand" in {o.offer_key for o in result.offers}


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d.pop("gpus"), "gpus"),
    (lambda d: d.update(gpus={"H100": 3.95}), "gpus"),
    (lambda d: d.update(currency="EUR"), "currency"),
    (lambda d: [g.update(hourlyOnDemand=g.pop("onDemandPricePerHour")) for g in d["gpus"]],
     "onDemandPricePerHour"),
    (lambda d: [g.update(name=g.pop("type")) for g in d["gpus"]], "type"),
])
def test_a_reshaped_card_is_a_parse_error(edit: Any, field: str) -> None:
    with pytest.raises(ParseError) as err:
        daytona.parse([_capture(edit)])
    assert err.value.field == field


def test_a_body_that_is_not_json_is_a_parse_error() -> None:
    capture = _capture().model_copy(update={"body": b"<html>maintenance</html>"})
    with pytest.raises(ParseError):
        daytona.parse([capture])


def test_offline_fetch_serves_the_bundled_card() -> None:
    with HttpClient("daytona", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = daytona.fetch(client, {})
    assert [c.url for c in captures] == [daytona.PRICING_URL]
    assert captures[0].body == (SNAP / CARD).read_bytes()

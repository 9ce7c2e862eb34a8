"""adapters/computepulse.py on the aggregator's chip books recorded 2026-08-22."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture, with_json_edit

from gpuscout.adapters import computepulse
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "computepulse"
H100 = "listings_nvidia-h100_gpu_index_055204a_2026-08-22.json"
B300 = "listings_nvidia-b300_gpu_index_055204a_2026-08-22.json"
RTX = "listings_nvidia-rtx-4090_gpu_index_055204a_2026-08-22.json"
MI325X = "listings_amd-mi325x_gpu_index_38e515c_2026-08-22.json"
BASE = "https://compute-pulse.com/api/listings"


def _page(file: str, edit: Any = None) -> Capture:
    return with_json_edit(load_capture(SNAP, file), edit)


def _all(**edits: Any) -> list[Capture]:
    files = {"h100": H100, "b300": B300, "rtx": RTX, "mi325x": MI325X}
    return [_page(file, edits.get(name)) for name, file in files.items()]


def _whole(doc: dict[str, Any]) -> None:
    """A book read whole: its one page holds every listing it counts."""
    doc["page"].update(total=len(doc["data"]), next_offset=None)


class TestComputePulseInvariants(OfferInvariants):
    NAME = "computepulse"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return computepulse.parse(_all()).offers


def test_every_listing_of_the_four_books() -> None:
    result = computepulse.parse(_all())
    got = {o.offer_key: (o.gpu_count, o.pricing_model, o.price_per_hour, o.currency)
           for o in result.offers}
    assert got == {
        "Vast.ai|H100 SXM|2x|ap-japan|spot|112cpu|504gb": (2, PricingModel.SPOT, 0.604, "USD"),
        "Vast.ai|H100 SXM|1x|us|on_demand|26cpu|221gb": (1, PricingModel.ON_DEMAND, 1.387, "USD"),
        "Cyfuture AI|H100 SXM|8x|-|reserved|128cpu|1536gb": (8, PricingModel.RESERVED, 1646.0,
                                                            "INR"),
        "Verda|B300|8x|-|spot|240cpu|2040gb": (8, PricingModel.SPOT, 30.0, "USD"),
        "Verda|B300 SXM|2x|-|spot|-|-": (2, PricingModel.SPOT, 7.5, "USD"),
        "Verda|B300 SXM|8x|-|spot|-|-": (8, PricingModel.SPOT, 30.0, "USD"),
        "TensorPool|B300 SXM|1x|-|on_demand|-|-": (1, PricingModel.ON_DEMAND, 5.49, "USD"),
        "GPU.ai|B300|8x|ca|on_demand|224cpu|1920gb": (8, PricingModel.ON_DEMAND, 50.62, "USD"),
        "Verda|B300|8x|eu|on_demand|240cpu|2040gb": (8, PricingModel.ON_DEMAND, 61.64, "USD"),
        "Scaleway|B300|8x|-|on_demand|-|-": (8, PricingModel.ON_DEMAND, 60.0, "EUR"),
        "Scaleway|B300|4x|-|on_demand|-|-": (4, PricingModel.ON_DEMAND, 34.08, "EUR"),
        "Scaleway|B300|2x|-|on_demand|-|-": (2, PricingModel.ON_DEMAND, 18.96, "EUR"),
        "Vast.ai|RTX4090|2x|-|spot|32cpu|62gb": (2, PricingModel.SPOT, 0.268, "USD"),
        "Vast.ai|RTX4090|1x|us|spot|24cpu|62gb": (1, PricingModel.SPOT, 0.135, "USD"),
        "Vast.ai|RTX4090|1x|us|spot|12cpu|62gb": (1, PricingModel.SPOT, 0.136, "USD"),
        "SwissGPU|RTX4090|1x|-|on_demand|-|-": (1, PricingModel.ON_DEMAND, 0.4, "CHF"),
    }


def test_a_reserved_price_needs_its_term() -> None:
    result = computepulse.parse(_all())
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("Hyperstack|H100 PCIe|1x|-|reserved|-|-",
         "reserved price without a stated term (min_duration_hours)")]
    cyfuture = next(o for o in result.offers if o.provider_data["cloud"] == "Cyfuture AI")
    assert (cyfuture.provider_data["min_duration_hours"], cyfuture.provider_data["reserved_term"],
            cyfuture.provider_data["aggregator_usd_per_gpu_hour"]) == (
        8640, "at least 8640 hours", 2.1499)


def test_the_resold_cloud_is_kept_and_named_as_the_warehouse_names_it() -> None:
    offers = {o.offer_key: o for o in computepulse.parse(_all()).offers}
    got = {(o.provider_data["cloud"], o.provider_data["resold_from"]) for o in offers.values()}
    assert got == {("Vast.ai", "vastai"), ("Cyfuture AI", "cyfuture-ai"),
                   ("Verda", "datacrunch"), ("TensorPool", "tensorpool"), ("GPU.ai", "gpuai"),
                   ("Scaleway", "scaleway"), ("SwissGPU", "swissgpu")}
    scaleway = offers["Scaleway|B300|8x|-|on_demand|-|-"]
    assert scaleway.provider_data == {
        "cloud": "Scaleway", "resold_from": "scaleway", "price_per_gpu_hour": 7.5,
        "aggregator_usd_per_gpu_hour": 8.7743, "source_kind": "open_api",
        "source_url": "https://www.scaleway.com/en/pricing/gpu/", "human_verified": False,
        "verification_level": 0}
    verda = offers["Verda|B300|8x|eu|on_demand|240cpu|2040gb"]
    assert (verda.availability, verda.vram_gb_per_gpu, verda.vcpus, verda.ram_gb) == (
        Availability.OUT_OF_STOCK, 288, 240, 2040)
    assert verda.observed_at == datetime(2026, 8, 22, 18, 7, 8, tzinfo=UTC)
    assert offers["GPU.ai|B300|8x|ca|on_demand|224cpu|1920gb"].availability is \
        Availability.IN_STOCK


def test_labels_resolve_with_their_variant() -> None:
    catalog = load_catalog()
    got = {o.gpu_label: getattr(catalog.resolve("computepulse", o.gpu_label, o.vram_gb_per_gpu),
                                "gpu_id", None)
           for o in computepulse.parse(_all()).offers}
    assert got == {"H100 SXM": "h100-sxm-80gb", "B300": "b300-sxm-288gb",
                   "B300 SXM": "b300-sxm-288gb", "RTX4090": "rtx-4090-24gb"}


def test_trimmed_or_unfinished_books_leave_the_listing_incomplete() -> None:
    # as recorded: H100 and RTX 4090 point at an unrecorded page 2, B300 counts 98 listings
    assert computepulse.parse(_all()).complete is False
    whole = _all(h100=_whole, b300=_whole, rtx=_whole)
    assert computepulse.parse(whole).complete is True
    assert computepulse.parse(_all(h100=_whole, rtx=_whole)).complete is False  # B300: 9 of 98


def test_a_book_read_over_two_pages_is_whole() -> None:
    def first(doc: dict[str, Any]) -> None:
        doc["page"].update(total=4, next_offset=2)
        doc["data"] = doc["data"][:2]

    def second(doc: dict[str, Any]) -> None:
        doc["page"].update(total=4, offset=2, next_offset=None)
        doc["data"] = doc["data"][2:]

    page2 = _page(H100, second)
    page2 = page2.model_copy(update={"url": page2.url.replace("offset=0", "offset=2")})
    captures = [_page(H100, first), page2, *_all(b300=_whole, rtx=_whole)[1:]]
    result = computepulse.parse(captures)
    assert result.complete is True
    assert sum(o.gpu_label.startswith("H100") for o in result.offers) == 3  # and 1 reject


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda r: r.update(billing_type="custom"),
     "billing_type 'custom' is not on_demand, spot or reserved"),
    (lambda r: r["links"].update(gpu="https://compute-pulse.com/gpu/nvidia-b200"),
     "listed in the nvidia-h100 book but linked to 'https://compute-pulse.com/gpu/nvidia-b200'"),
    (lambda r: r.update(price_per_gpu_hour=None), "price_per_gpu_hour is not a price: None"),
    (lambda r: r.update(currency="credits", price_native=5.0),
     "currency 'credits' is no currency code"),
    (lambda r: r.update(gpu_count=0), "listing without a provider, gpu_model and whole "
                                      "gpu_count: 'Vast.ai', 'H100', 0"),
])
def test_a_bad_listing_is_a_reject(edit: Any, reason: str) -> None:
    result = computepulse.parse(_all(h100=lambda d: edit(d["data"][0])))
    assert reason in {r.reason for r in result.rejects}
    assert len(result.offers) == 15


def test_a_stated_currency_without_its_amount_keeps_the_usd_price() -> None:
    result = computepulse.parse(_all(h100=lambda d: d["data"][1].update(currency="EUR")))
    offer = next(o for o in result.offers if o.offer_key.startswith("Vast.ai|H100 SXM|1x"))
    assert (offer.price_per_hour, offer.currency) == (1.387, "USD")


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["meta"].update(catalog_status="seed_fallback"), "catalog_status"),
    (lambda d: d["meta"].update(price_unit="EUR per GPU hour"), "price_unit"),
    (lambda d: d.pop("page"), "page"),
    (lambda d: d["page"].update(next_offset="200"), "page"),
    (lambda d: d.pop("data"), "data"),
    (lambda d: [r.update(price=r.pop("price_per_gpu_hour")) for r in d["data"]],
     "price_per_gpu_hour"),
])
def test_a_reshaped_page_is_a_parse_error(edit: Any, field: str) -> None:
    with pytest.raises(ParseError) as err:
        computepulse.parse(_all(h100=edit))
    assert err.value.field == field


def test_offline_fetch_reads_the_recorded_pages_and_leaves_out_the_missing_ones() -> None:
    with HttpClient("computepulse", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = computepulse.fetch(client, {})
        errors = client.errors
    assert [c.url for c in captures] == [
        f"{BASE}?gpu={chip}&sort=price_asc&limit=200&offset=0" for chip in computepulse.CHIPS]
    assert {e.url for e in errors} == {
        f"{BASE}?gpu={chip}&sort=price_asc&limit=200&offset=200"
        for chip in ("nvidia-h100", "nvidia-rtx-4090")}
    assert computepulse.parse(captures).complete is False


def test_fetch_follows_next_offset_until_null() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        offset = int(request.url.params["offset"])
        following = {0: 200, 200: 400, 400: None}[offset] if request.url.params["gpu"] == \
            "nvidia-h100" else None
        return httpx.Response(200, json={
            "data": [], "page": {"total": 0, "limit": 200, "offset": offset,
                                 "next_offset": following},
            "meta": {"catalog_status": "live_or_cached", "price_unit": "USD per GPU hour"}})

    with HttpClient("computepulse", transport=httpx.MockTransport(handler)) as client:
        captures = computepulse.fetch(client, {})
    assert [u for u in seen if "nvidia-h100" in u] == [
        f"{BASE}?gpu=nvidia-h100&sort=price_asc&limit=200&offset={n}" for n in (0, 200, 400)]
    assert len(captures) == 6
    assert computepulse.parse(captures).complete is True


def test_fetch_raises_when_nothing_can_be_read() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404)

    with (HttpClient("computepulse", transport=httpx.MockTransport(handler)) as client,
          pytest.raises(FetchError)):
        computepulse.fetch(client, {})

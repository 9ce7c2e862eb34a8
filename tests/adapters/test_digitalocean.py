"""adapters/digitalocean.py on the recorded 2026 docs pricing page (served by the replay), the
2025 marketing pricing page (tests/fixtures) and a /v2/sizes body."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import digitalocean
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "digitalocean"
FIX = FIXTURES / "digitalocean"
DOCS = "droplets_pricing_gpu_index_055204a_2026-08-22.html"  # served by the replay
CARDS = "digitalocean_20250707231929.html"  # tests/fixtures: the 2025 marketing page
SIZES = "gpuhunt_fixture_v2_sizes.json"
DOCS_URL = "https://docs.digitalocean.com/products/droplets/details/pricing/"
URL = "https://www.digitalocean.com/pricing/gpu-droplets"
H100_1X = "gpu-h100x1-80gb|on_demand"
ON_DEMAND = PricingModel.ON_DEMAND
SPOT = PricingModel.SPOT
# Every GPU label in the three files -> canonical GPU (None: knowingly unknown).
LABELS = {"NVIDIA H100": None, "nvidia_h100": None, "NVIDIA H200": None,
          "AMD Instinct™ MI300X": "mi300x-192gb", "amd_mi300x": "mi300x-192gb",
          "AMD MI300X": "mi300x-192gb", "AMD MI325X": "mi325x-256gb",
          "AMD MI350X": "mi350x-288gb", "AMD MI355X": "mi355x-288gb",
          "NVIDIA RTX 4000 Ada Generation": "rtx-4000-ada-20gb",
          "NVIDIA RTX 4000": "rtx-4000-ada-20gb",
          "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada-48gb",
          "NVIDIA RTX 6000": "rtx-6000-ada-48gb",
          "NVIDIA L40S": "l40s-48gb", "NVIDIA L40s": "l40s-48gb",
          "NVIDIA B300, air-cooled": "b300-sxm-288gb",
          "NVIDIA B300, liquid-cooled": "b300-sxm-288gb"}


def _docs_capture() -> Capture:
    return load_capture(SNAP, DOCS)


def _docs(capture: Capture | None = None) -> ParseResult:
    return digitalocean.parse([capture or _docs_capture()])


def _docs_mutated(old: str, new: str, *, exactly_once: bool = True) -> Capture:
    return with_replaced(_docs_capture(), old, new, exactly_once=exactly_once)


def _synthetic(body: str) -> Capture:
    return Capture(provider="digitalocean", url=DOCS_URL, body=body.encode(),
                   fetched_at=datetime(2026, 8, 22, tzinfo=UTC))


def _page(capture: Capture | None = None) -> dict[str, ParsedOffer]:
    """The 2025 marketing page's offers by key."""
    result = digitalocean.parse([capture or load_capture(FIX, CARDS)])
    return {o.offer_key: o for o in result.offers}


def _mutated(old: str, new: str) -> Capture:
    capture = load_capture(FIX, CARDS)
    return with_replaced(capture, old, new)


def _sizes_capture(body: bytes | None = None) -> Capture:
    capture = load_capture(FIX, SIZES)
    return capture if body is None else capture.model_copy(update={"body": body})


class TestDigitalOceanInvariants(OfferInvariants):
    NAME = "digitalocean"
    EXPECTED_UNKNOWN = frozenset({"NVIDIA H100", "nvidia_h100", "NVIDIA H200"})

    @pytest.fixture(params=["docs", "cards", "sizes"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        capture = {"docs": _docs_capture, "cards": lambda: load_capture(FIX, CARDS),
                   "sizes": _sizes_capture}[request.param]()
        return digitalocean.parse([capture]).offers


# -- docs pricing page (2026) ------------------------------------------------------------------


def test_docs_on_demand_table() -> None:
    offers = [o for o in _docs().offers if o.pricing_model is ON_DEMAND]
    assert {o.offer_key: (o.gpu_label, o.gpu_count, o.price_per_hour,
                          o.provider_data["price_per_gpu_hour"]) for o in offers} == {
        "AMD MI300X|1x|on_demand": ("AMD MI300X", 1, 2.59, 2.59),
        "AMD MI300X|8x|on_demand": ("AMD MI300X", 8, 20.72, 2.59),
        "AMD MI325X|1x|on_demand": ("AMD MI325X", 1, 3.80, 3.80),
        "AMD MI325X|8x|on_demand": ("AMD MI325X", 8, 30.40, 3.80),
        "NVIDIA H100|1x|on_demand": ("NVIDIA H100", 1, 4.41, 4.41),
        "NVIDIA H100|8x|on_demand": ("NVIDIA H100", 8, 35.28, 4.41),
        "NVIDIA L40s|1x|on_demand": ("NVIDIA L40s", 1, 1.57, 1.57),
        "NVIDIA RTX 4000|1x|on_demand": ("NVIDIA RTX 4000", 1, 0.76, 0.76),
        "NVIDIA RTX 6000|1x|on_demand": ("NVIDIA RTX 6000", 1, 1.57, 1.57),
        "NVIDIA H200|1x|on_demand": ("NVIDIA H200", 1, 4.47, 4.47),
        "NVIDIA H200|8x|on_demand": ("NVIDIA H200", 8, 35.76, 4.47),
    }


def test_docs_spot_table_both_b300_coolings() -> None:
    offers = [o for o in _docs().offers if o.pricing_model is SPOT]
    assert {o.offer_key: (o.gpu_count, o.price_per_hour) for o in offers} == {
        "AMD MI350X|1x|spot": (1, 4.00), "AMD MI350X|8x|spot": (8, 32.00),
        "AMD MI355X|1x|spot": (1, 4.50), "AMD MI355X|8x|spot": (8, 36.00),
        "NVIDIA B300, air-cooled|1x|spot": (1, 11.19),
        "NVIDIA B300, air-cooled|8x|spot": (8, 89.52),
        "NVIDIA B300, liquid-cooled|1x|spot": (1, 11.19),
        "NVIDIA B300, liquid-cooled|8x|spot": (8, 89.52),
    }
    assert all(o.price_kind is PriceKind.LISTED for o in offers)


def test_docs_8x_droplet_in_full() -> None:
    key = "NVIDIA H200|8x|on_demand"
    offer = next(o for o in _docs().offers if o.offer_key == key)
    assert offer.model_dump() == {
        "provider": "digitalocean", "offer_key": key, "instance_type": None,
        "gpu_label": "NVIDIA H200", "gpu_count": 8, "vram_gb_per_gpu": None,
        "pricing_model": ON_DEMAND, "price_per_hour": 35.76, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": None, "interconnect_gbps": None,
        "network": None, "network_gbps": None,
        "billing_increment_s": 1,  # "billed per second with a minimum charge of 60 seconds"
        "availability": "unknown", "available_count": None, "source_url": DOCS_URL,
        "observed_at": datetime(2026, 8, 22, tzinfo=UTC),
        "provider_data": {"plan": "NVIDIA H200 (8x)", "price_per_gpu_hour": 4.47},
    }


def test_docs_price_is_per_droplet() -> None:
    for offer in _docs().offers:
        per_gpu = offer.provider_data["price_per_gpu_hour"]
        assert isinstance(per_gpu, float)
        assert per_gpu * offer.gpu_count == pytest.approx(offer.price_per_hour), offer.offer_key


def test_docs_contract_rows_are_rejected_and_nothing_else() -> None:
    result = _docs()
    assert result.complete is True
    reason = ("'Per contract after contacting sales' (Contract GPU Droplet Pricing): "
              "a contract price quoted by sales, not a listed price")
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("AMD MI350X|1x|reserved", f"AMD MI350X: {reason}"),
        ("AMD MI350X|8x|reserved", f"AMD MI350X (8x): {reason}"),
        ("NVIDIA B300|1x|reserved", f"NVIDIA B300: {reason}"),
        ("NVIDIA B300|8x|reserved", f"NVIDIA B300 (8x): {reason}"),
    ]
    # The bare "NVIDIA B300" exists only in the contract table; CPU and bandwidth prices
    # ($0.01 minimum charge, $0.01 per GiB) are never read.
    assert "NVIDIA B300" not in {o.gpu_label for o in result.offers}
    assert min(o.price_per_hour for o in result.offers) == 0.76


def test_docs_unreadable_price_is_one_reject() -> None:
    result = _docs(_docs_mutated("$4.47 per hour", "$4.47 per month"))
    assert "NVIDIA H200|1x|on_demand" not in {o.offer_key for o in result.offers}
    assert len(result.offers) == 18
    assert [r.reason for r in result.rejects if r.offer_key == "NVIDIA H200|1x|on_demand"] == [
        "NVIDIA H200: unrecognised price '$4.47 per month' (On-Demand GPU Droplet Pricing)"]


def test_docs_count_not_at_the_end_is_never_one_gpu() -> None:
    result = _docs(_docs_mutated("NVIDIA H200 (8x)</td>", "NVIDIA H200 (8x)*</td>"))
    assert not any(o.gpu_label.startswith("NVIDIA H200 (8x)") for o in result.offers)
    assert not any(o.price_per_hour == 35.76 for o in result.offers)
    assert "'NVIDIA H200 (8x)*': a GPU count '(Nx)' that is not at the end of the plan: the " \
           "GPUs per Droplet are unknown" in [r.reason for r in result.rejects]


def test_docs_renamed_column_is_a_parse_error() -> None:
    capture = _docs_mutated(">Price</th>", ">Cost</th>", exactly_once=False)
    with pytest.raises(ParseError) as err:
        _docs(capture)
    assert err.value.field == "GPU, Price"
    assert err.value.url == DOCS_URL


def test_docs_missing_on_demand_section_is_a_parse_error() -> None:
    capture = _docs_mutated('<h2 id="on-demand-gpu-droplet-pricing">On-Demand GPU Droplet Pricing',
                            '<h2 id="on-demand-gpu-droplet-pricing">On-Demand GPU Droplet Prices')
    with pytest.raises(ParseError) as err:
        _docs(capture)
    assert err.value.field == digitalocean.ON_DEMAND_HEADING


def test_docs_section_twice_or_two_tables_is_a_parse_error() -> None:
    twice = _docs_mutated('<h2 id="contract-gpu-droplet-pricing">Contract GPU Droplet Pricing',
                          '<h2 id="contract-gpu-droplet-pricing">Spot GPU Droplet Pricing')
    with pytest.raises(ParseError, match="appears twice"):
        _docs(twice)
    # the spot section swallows the contract table when its heading is gone
    merged = _docs_mutated('<h2 id="contract-gpu-droplet-pricing">', "<h3>")
    with pytest.raises(ParseError, match="has 2 tables") as err:
        _docs(merged)
    assert err.value.field == "Spot GPU Droplet Pricing"


def test_docs_unknown_gpu_section_is_rejected_row_by_row() -> None:
    capture = _docs_mutated('<h2 id="spot-gpu-droplet-pricing">Spot GPU Droplet Pricing',
                            '<h2 id="spot-gpu-droplet-pricing">Reserved GPU Droplet Pricing')
    result = _docs(capture)
    assert {o.pricing_model for o in result.offers} == {ON_DEMAND}
    assert len(result.offers) == 11
    unread = [r.reason for r in result.rejects if "does not read" in r.reason]
    assert len(unread) == 8
    assert unread[0] == ("'Reserved GPU Droplet Pricing' is a GPU pricing section this adapter "
                         "does not read: ['AMD MI350X', '$4.00 per hour']")


def test_docs_empty_table_is_a_parse_error() -> None:
    body = ("<h2>On-Demand GPU Droplet Pricing</h2><div><table><thead><tr><th>GPU</th>"
            "<th>Price</th></tr></thead><tbody></tbody></table></div>")
    with pytest.raises(ParseError, match="has no rows") as err:
        digitalocean.parse([_synthetic(body)])
    assert err.value.field == "On-Demand GPU Droplet Pricing"


def test_docs_and_cards_together_keep_both_layouts_keys() -> None:
    result = digitalocean.parse([load_capture(FIX, CARDS), _docs_capture()])
    keys = {o.offer_key for o in result.offers}
    assert {"NVIDIA H100|8x|on_demand", "gpu-h100x8-640gb|on_demand"} <= keys
    assert len(keys) == 19 + 7


# -- marketing pricing page (2025) -------------------------------------------------------------


def test_page_on_demand_cards() -> None:
    assert {k: (o.gpu_count, o.price_per_hour, o.provider_data["price_per_gpu_hour"])
            for k, o in _page().items()} == {
        "gpu-h100x8-640gb|on_demand": (8, 23.92, 2.99),
        "gpu-mi300x8-1536gb|on_demand": (8, 15.92, 1.99),
        "gpu-h100x1-80gb|on_demand": (1, 3.39, 3.39),
        "gpu-mi300x1-192gb|on_demand": (1, 1.99, 1.99),
        "gpu-rtx4000x1-20gb|on_demand": (1, 0.76, 0.76),
        "gpu-rtx6000x1-48gb|on_demand": (1, 1.57, 1.57),
        # The L40S card links to size=undefined: no slug, so the key is built from the card.
        "NVIDIA L40S|1x|48GB|on_demand": (1, 1.57, 1.57),
    }


def test_promo_price_is_the_price_and_the_struck_one_is_kept_aside() -> None:
    offer = _page()[H100_1X]
    assert offer.model_dump() == {
        "provider": "digitalocean", "offer_key": H100_1X, "instance_type": "gpu-h100x1-80gb",
        "gpu_label": "NVIDIA H100", "gpu_count": 1, "vram_gb_per_gpu": 80.0,
        "pricing_model": PricingModel.ON_DEMAND, "price_per_hour": 3.39, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": 20.0,
        "ram_gb": 257.7,  # 240 GiB
        "disk_gb": 773.1,  # 720 GiB boot disk
        "interconnect": None, "interconnect_gbps": None, "network": None, "network_gbps": None,
        "billing_increment_s": None, "availability": "unknown", "available_count": None,
        "source_url": URL, "observed_at": datetime(2025, 7, 7, 23, 19, 29, tzinfo=UTC),
        "provider_data": {"droplet": "NVIDIA H100", "size_slug": "gpu-h100x1-80gb",
                          "price_per_gpu_hour": 3.39, "scratch_disk_gb": 5497.6,  # 5 TiB
                          "transfer": "15,000 GiB", "promo": True,
                          "list_price_per_gpu_hour": 6.74, "promo_footnote": "*"},
    }
    assert not any(o.price_per_hour == 6.74 for o in _page().values())


def test_eight_gpu_droplet_details() -> None:
    offer = _page()["gpu-mi300x8-1536gb|on_demand"]
    assert (offer.gpu_label, offer.vram_gb_per_gpu, offer.vcpus, offer.ram_gb, offer.disk_gb) \
        == ("AMD Instinct™ MI300X", 192.0, 160.0, 2061.6, 2061.6)  # 1,920 GiB; 1.875 TiB
    assert offer.provider_data["droplet"] == "AMD Instinct™ MI300Xx8"
    assert "promo" not in offer.provider_data
    assert "scratch_disk_gb" not in _page()["gpu-rtx6000x1-48gb|on_demand"].provider_data


def test_reserved_floor_prices_are_rejected() -> None:
    result = digitalocean.parse([load_capture(FIX, CARDS)])
    assert [r.reason for r in result.rejects] == [
        "NVIDIA H100x8: reserved price for a 12-month contract is a floor ('as low as') "
        "quoted by sales, not a price",
        "AMD Instinct™ MI300Xx8: reserved price for a 12-month contract is a floor "
        "('as low as') quoted by sales, not a price",
    ]
    assert all(o.pricing_model is PricingModel.ON_DEMAND for o in result.offers)


def test_per_droplet_price_is_never_read_as_per_gpu() -> None:
    capture = _mutated('">/GPU/hour*</span>', '">/hour*</span>')
    result = digitalocean.parse([capture])
    assert H100_1X not in {o.offer_key for o in result.offers}
    assert "NVIDIA H100: unrecognised price '$3.39/hour*'" in [r.reason for r in result.rejects]


def test_two_prices_without_a_strike_through_are_rejected() -> None:
    capture = _mutated("gpu-droplets__StyledStrikeThrough-sc-ea4a25d2-0 dvynub", "plain")
    result = digitalocean.parse([capture])
    assert H100_1X not in {o.offer_key for o in result.offers}
    assert "NVIDIA H100: two prices and neither is struck through" \
        in [r.reason for r in result.rejects]


def test_renamed_price_container_is_a_parse_error() -> None:
    capture = load_capture(FIX, CARDS)
    body = capture.body.replace(b"StyledPriceContainer", b"StyledCost")
    with pytest.raises(ParseError) as err:
        digitalocean.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == digitalocean.PRICE_BOX
    assert err.value.url == URL


def test_page_without_sections_or_cards_is_a_parse_error() -> None:
    capture = Capture(provider="digitalocean", url=URL, body=b"<html><p>Sold out</p></html>",
                      fetched_at=datetime(2025, 7, 7, tzinfo=UTC))
    with pytest.raises(ParseError, match="nor GPU Droplet pricing cards") as err:
        digitalocean.parse([capture])
    assert err.value.field == digitalocean.ON_DEMAND_HEADING


def test_api_sizes_one_offer_per_gpu_size_and_region() -> None:
    result = digitalocean.parse([_sizes_capture()])
    assert result.rejects == []
    offers = {o.offer_key: o for o in result.offers}
    assert set(offers) == {"gpu-h100x8-640gb|nyc1|on_demand", "gpu-mi300x8-1536gb|nyc1|on_demand"}
    h100 = offers["gpu-h100x8-640gb|nyc1|on_demand"]
    assert (h100.gpu_label, h100.gpu_count, h100.vram_gb_per_gpu, h100.price_per_hour,
            h100.region, h100.availability, h100.vcpus, h100.ram_gb, h100.disk_gb) == (
        "nvidia_h100", 8, 80.0, 23.92, "nyc1", Availability.IN_STOCK, 160.0, 2061.6, 2046.0)
    assert h100.provider_data == {
        "description": "H100 GPU - 8X", "size_slug": "gpu-h100x8-640gb",
        "price_monthly": 17796.48, "transfer_tb": 60.0, "networking_throughput_mbps": 10000,
        "scratch_disk_gb": 43980.5}
    mi300 = offers["gpu-mi300x8-1536gb|nyc1|on_demand"]
    assert (mi300.gpu_label, mi300.vram_gb_per_gpu, mi300.price_per_hour) \
        == ("amd_mi300x", 192.0, 15.92)
    assert h100.source_url == "https://api.digitalocean.com/v2/sizes"


def test_api_and_page_agree_on_the_8x_prices() -> None:
    sizes = digitalocean.parse([_sizes_capture()]).offers
    api = {o.instance_type: o.price_per_hour for o in sizes}
    page = {o.instance_type: o.price_per_hour for o in _page().values()}
    assert api == {k: page[k] for k in api} == {"gpu-h100x8-640gb": 23.92,
                                                "gpu-mi300x8-1536gb": 15.92}


def test_api_renamed_price_field_is_a_parse_error() -> None:
    body = load_capture(FIX, SIZES).body.replace(b'"price_hourly"', b'"hourly_price"')
    with pytest.raises(ParseError) as err:
        digitalocean.parse([_sizes_capture(body)])
    assert err.value.field == "price_hourly"


def test_api_wrong_shape_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        digitalocean.parse([_sizes_capture(b"<html>rate limited</html>")])
    assert "not JSON" in str(err.value)
    with pytest.raises(ParseError) as err:
        digitalocean.parse([_sizes_capture(json.dumps([{"slug": "x"}]).encode())])
    assert err.value.field == "sizes"


def test_every_label_resolves_or_is_knowingly_unknown() -> None:
    catalog = load_catalog()
    offers = [*_docs().offers, *_page().values(), *digitalocean.parse([_sizes_capture()]).offers]
    assert {o.gpu_label for o in offers} == set(LABELS)
    for offer in offers:
        res = catalog.resolve("digitalocean", offer.gpu_label, offer.vram_gb_per_gpu)
        expected = LABELS[offer.gpu_label]
        if expected is None:
            # DigitalOcean never says SXM or PCIe (H100) or SXM or NVL (H200), and VRAM
            # cannot settle either.
            assert isinstance(res, Unknown) and "unmapped" in res.reason, offer.offer_key
        else:
            assert isinstance(res, Resolved) and res.gpu_id == expected, offer.offer_key


def test_offline_fetch_serves_the_bundled_docs_page() -> None:
    with HttpClient("digitalocean", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = digitalocean.fetch(client, {})
    assert len(captures) == 1
    assert captures[0].body == (SNAP / DOCS).read_bytes()
    assert captures[0].url == DOCS_URL == digitalocean.PRICING_URL
    assert captures[0].fetched_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert len(digitalocean.parse(captures).offers) == 19


# -- fetch with a token: the API ---------------------------------------------------------------

TOKEN = {"DIGITALOCEAN_TOKEN": "dop_v1_SECRET_TOKEN"}
SIZES_URL = "https://api.digitalocean.com/v2/sizes"


class _Seen(httpx.BaseTransport):
    """Passes requests on to another transport and keeps them."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.inner.handle_request(request)


@pytest.mark.parametrize("archive", [SNAPSHOTS_DIR, FIXTURES], ids=["snapshots", "fixtures"])
def test_fetch_with_a_token_replays_the_recorded_sizes(archive: Path) -> None:
    transport = _Seen(ReplayTransport(archive))
    with HttpClient("digitalocean", transport=transport,
                    secrets=tuple(TOKEN.values())) as client:
        captures = digitalocean.fetch(client, TOKEN)
    assert [(r.method, str(r.url)) for r in transport.requests] == [("GET", SIZES_URL)]
    assert transport.requests[0].headers["authorization"] == "Bearer dop_v1_SECRET_TOKEN"
    assert [c.body for c in captures] == [(FIX / SIZES).read_bytes()]
    assert captures[0].url == SIZES_URL
    assert captures[0].fetched_at == datetime(2025, 8, 29, tzinfo=UTC)
    assert "SECRET" not in captures[0].model_dump_json()
    result = digitalocean.parse(captures)
    assert result.rejects == []
    assert {o.offer_key: o.price_per_hour for o in result.offers} == {
        "gpu-h100x8-640gb|nyc1|on_demand": 23.92, "gpu-mi300x8-1536gb|nyc1|on_demand": 15.92}


def _paged(next_links: dict[str, str | None], seen: list[httpx.Request]) -> httpx.MockTransport:
    """The recorded sizes body on every page, with `links.pages.next` set per page URL (the
    recorded body has one page and `"links": {}`)."""
    doc = json.loads((FIX / SIZES).read_bytes())

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        link = next_links[str(request.url)]
        return httpx.Response(200, json={**doc, "links": {"pages": {"next": link}} if link
                                         else {}})
    return httpx.MockTransport(handler)


def test_fetch_follows_every_next_page_with_the_token() -> None:
    page2 = f"{SIZES_URL}?page=2&per_page=20"
    seen: list[httpx.Request] = []
    with HttpClient("digitalocean", transport=_paged({SIZES_URL: page2, page2: None}, seen),
                    secrets=tuple(TOKEN.values())) as client:
        captures = digitalocean.fetch(client, TOKEN)
    assert [str(r.url) for r in seen] == [SIZES_URL, page2]
    assert {r.headers["authorization"] for r in seen} == {"Bearer dop_v1_SECRET_TOKEN"}
    assert [c.url for c in captures] == [SIZES_URL, page2]
    assert len(digitalocean.parse(captures).offers) == 2  # the same sizes twice: newest wins


@pytest.mark.parametrize(("link", "message"), [
    (SIZES_URL, "loops"),
    ("https://api.digitalocean.com.example/v2/sizes?page=2", "leaves api.digitalocean.com"),
])
def test_a_next_link_that_loops_or_leaves_the_api_is_a_fetch_error(link: str,
                                                                   message: str) -> None:
    seen: list[httpx.Request] = []
    with (HttpClient("digitalocean", transport=_paged({SIZES_URL: link}, seen)) as client,
          pytest.raises(FetchError, match=message)):
        digitalocean.fetch(client, TOKEN)
    assert [str(r.url) for r in seen] == [SIZES_URL]  # the token went nowhere else


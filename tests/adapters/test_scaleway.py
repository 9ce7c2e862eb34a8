"""adapters/scaleway.py on the recorded fr-par-2 Instance type and availability pages."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import http, scaleway
from gpuscout.adapters.archive import Capture, ReplayTransport, read_manifest
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "scaleway"
FIX = FIXTURES / "scaleway"
SERVERS = [f"instance_v1_products_servers_fr-par-2_page{n}_2026-07-30.json" for n in (1, 2, 3)]
STOCK = [f"instance_v1_products_servers_availability_fr-par-2_page{n}_2026-07-30.json"
         for n in (1, 2, 3)]
CATALOG = "product_catalog_v2alpha1_public_products_H100-SXM-2-80G_fr-par-2_2026-07-30.json"
PAGE1_URL = "https://api.scaleway.com/instance/v1/zones/fr-par-2/products/servers?page=1"
GPU_IDS = {"B300-SXM": "b300-sxm-288gb", "H100-SXM": "h100-sxm-80gb",
           "H100-PCIe": "h100-pcie-80gb", "L4": "l4-24gb", "L40S": "l40s-48gb",
           "P100": "p100-pcie-16gb"}


def _captures() -> list[Capture]:
    return [load_capture(SNAP, f) for f in SERVERS + STOCK]


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


def _edit(file: str, change: Any) -> list[Capture]:
    """All bundled captures, with `change(servers)` applied to the `servers` object of `file`."""
    out = []
    for capture in _captures():
        if capture.url == load_capture(SNAP, file).url:
            doc = json.loads(capture.body)
            change(doc["servers"])
            capture = capture.model_copy(update={"body": json.dumps(doc).encode()})
        out.append(capture)
    return out


class TestScalewayInvariants(OfferInvariants):
    NAME = "scaleway"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return scaleway.parse(_captures()).offers


def test_bundled_pages_counts() -> None:
    result = scaleway.parse(_captures())
    assert (len(result.offers), len(result.rejects), result.complete) == (17, 0, True)
    assert {o.gpu_label for o in result.offers} == set(GPU_IDS)
    assert {o.currency for o in result.offers} == {"EUR"}
    assert {(o.pricing_model, o.price_kind) for o in result.offers} == {
        (PricingModel.ON_DEMAND, PriceKind.LISTED)}


def test_h100_sxm_2_exact_values() -> None:
    o = _by_key(scaleway.parse(_captures()).offers)["fr-par-2|H100-SXM-2-80G|on_demand"]
    assert (o.instance_type, o.gpu_label, o.gpu_count, o.vram_gb_per_gpu) == (
        "H100-SXM-2-80G", "H100-SXM", 2, 80.0)
    assert (o.price_per_hour, o.currency) == (6.6198, "EUR")
    assert (o.region, o.zone, o.availability) == ("fr-par", "fr-par-2", Availability.IN_STOCK)
    assert (o.vcpus, o.ram_gb, o.interconnect, o.network) == (32, 240.0, None, None)
    assert o.provider_data == {
        "monthly_price": 4832.454, "gpu_manufacturer": "NVIDIA", "arch": "x86_64",
        "availability": "available", "internal_bandwidth_gbps": 20.0,
        "scratch_storage_max_gb": 3200.0}
    assert o.source_url == PAGE1_URL
    assert o.observed_at == datetime(2026, 7, 30, 12, 55, 10, tzinfo=UTC)


@pytest.mark.parametrize(("type_name", "label", "count", "vram", "price", "stock"), [
    ("B300-SXM-8-288G", "B300-SXM", 8, 288.0, 60.0, Availability.OUT_OF_STOCK),
    ("H100-1-80G", "H100-PCIe", 1, 80.0, 2.8665, Availability.OUT_OF_STOCK),
    ("L4-4-24G", "L4", 4, 24.0, 3.15, Availability.LOW),
    ("L40S-1-48G", "L40S", 1, 48.0, 1.469916, Availability.LOW),
    ("RENDER-S", "P100", 1, 16.0, 1.221, Availability.IN_STOCK),
])
def test_known_offers(type_name: str, label: str, count: int, vram: float, price: float,
                      stock: Availability) -> None:
    o = _by_key(scaleway.parse(_captures()).offers)[f"fr-par-2|{type_name}|on_demand"]
    assert (o.gpu_label, o.gpu_count, o.vram_gb_per_gpu, o.price_per_hour, o.availability) == (
        label, count, vram, price, stock)


def test_every_gpu_label_resolves_to_its_gpu() -> None:
    catalog = load_catalog()
    for o in scaleway.parse(_captures()).offers:
        res = catalog.resolve("scaleway", o.gpu_label, o.vram_gb_per_gpu)
        assert isinstance(res, Resolved) and res.gpu_id == GPU_IDS[o.gpu_label], o.offer_key


def test_hourly_price_is_eur_per_hour_for_the_whole_instance() -> None:
    # The public catalog prices the same Instance ("2 x H100-SXM") in EUR per minute.
    product = json.loads((FIX / CATALOG).read_bytes())["products"][0]
    price = product["price"]["retail_price"]
    assert (price["currency_code"], product["unit_of_measure"]["unit"]) == ("EUR", "minute")
    assert product["properties"]["hardware"]["gpu"]["count"] == 2
    per_hour = (price["units"] + price["nanos"] / 1e9) * 60
    o = _by_key(scaleway.parse(_captures()).offers)["fr-par-2|H100-SXM-2-80G|on_demand"]
    assert o.price_per_hour == pytest.approx(per_hour)


def test_without_availability_pages_stock_is_unknown() -> None:
    result = scaleway.parse([load_capture(SNAP, f) for f in SERVERS])
    assert len(result.offers) == 17 and result.complete
    assert {o.availability for o in result.offers} == {Availability.UNKNOWN}


def test_a_missing_page_makes_the_result_incomplete() -> None:
    gap = [load_capture(SNAP, f) for f in (SERVERS[0], SERVERS[2], *STOCK)]
    assert scaleway.parse(gap).complete is False
    # Pages 1-2 with X-Total-Count 135: 100 types read, so page 3 is missing.
    short = [load_capture(SNAP, f) for f in (SERVERS[0], SERVERS[1], *STOCK)]
    result = scaleway.parse(short)
    assert result.complete is False
    assert len(result.offers) == 16  # RENDER-S is on page 3


def test_bad_records_are_rejected_with_reasons() -> None:
    def change(servers: dict[str, Any]) -> None:
        servers["H100-1-80G"]["mig_profile"] = "1g.10gb"
        servers["H100-2-80G"]["end_of_service"] = True
        servers["B300-SXM-2-288G"]["hourly_price"] = "18.96"
        del servers["B300-SXM-4-288G"]["gpu_info"]

    result = scaleway.parse(_edit(SERVERS[0], change))
    assert sorted((r.offer_key or "", r.reason) for r in result.rejects) == [
        ("fr-par-2|B300-SXM-2-288G|on_demand", "hourly_price is not a price: '18.96'"),
        ("fr-par-2|B300-SXM-4-288G|on_demand", "GPU Instance type without gpu_info.gpu_name"),
        ("fr-par-2|H100-1-80G|on_demand", "MIG profile '1g.10gb': a GPU slice of unstated size"),
        ("fr-par-2|H100-2-80G|on_demand",
         "end_of_service: the Instance type is no longer sold"),
    ]
    assert len(result.offers) == 17 - 4


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>502 Bad Gateway</body></html>", None),
    (b'{"message": "authentication is denied", "type": "denied_authentication"}', "servers"),
    (b'{"servers": [{"name": "L4-1-24G"}]}', "servers"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    capture = load_capture(SNAP, SERVERS[0]).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        scaleway.parse([capture])
    assert (err.value.field, err.value.url) == (field, PAGE1_URL)


@pytest.mark.parametrize(("file", "old", "new"), [
    (SERVERS[1], "hourly_price", "hourly_price_eur"),
    (SERVERS[1], "gpu", "gpus"),
    (STOCK[0], "availability", "stock"),
])
def test_renamed_field_is_a_parse_error(file: str, old: str, new: str) -> None:
    def change(servers: dict[str, Any]) -> None:
        for record in servers.values():
            record[new] = record.pop(old)

    with pytest.raises(ParseError) as err:
        scaleway.parse(_edit(file, change))
    assert err.value.field == old


def test_capture_from_another_url_is_a_parse_error() -> None:
    capture = load_capture(SNAP, SERVERS[0]).model_copy(
        update={"url": "https://api.scaleway.com/instance/v1/zones/fr-par-2/servers"})
    with pytest.raises(ParseError):
        scaleway.parse([capture])


def test_offline_fetch_reads_the_recorded_zone_only() -> None:
    with HttpClient("scaleway", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = scaleway.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / f).read_bytes() for f in SERVERS + STOCK]
    assert [c.url for c in captures] == [e.url for e in read_manifest(SNAP)]
    # fr-par-1 and pl-waw-2 were asked for and have no recording: skipped, not failed.
    assert client.requests_made == 8
    result = scaleway.parse(captures)
    assert (len(result.offers), result.complete) == (17, True)


def _serve(pages: dict[str, httpx.Response], seen: list[httpx.Request]) -> httpx.MockTransport:
    """A fake API: `path?page=N` -> response; any other page is an empty listing."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        key = f"{request.url.path}?page={request.url.params.get('page')}"
        return pages.get(key, httpx.Response(200, json={"servers": {}}))

    return httpx.MockTransport(handler)


def _page(file: str, **headers: str) -> httpx.Response:
    return httpx.Response(200, content=(SNAP / file).read_bytes(),
                          headers={"content-type": "application/json", **headers})


PATH = "/instance/v1/zones/fr-par-2/products/servers"


def test_a_page_failing_half_way_fails_the_fetch() -> None:
    seen: list[httpx.Request] = []
    pages = {f"{PATH}?page=1": _page(SERVERS[0]), f"{PATH}?page=2": httpx.Response(503)}
    with (HttpClient("scaleway", transport=_serve(pages, seen), sleep=lambda _: None) as client,
          pytest.raises(FetchError) as err):
        scaleway.fetch(client, {})
    assert err.value.status == 503
    assert err.value.url == PAGE1_URL.replace("page=1", "page=2")


def test_an_empty_page_before_the_total_fails_the_fetch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Only a response that says how many types there are (X-Total-Count) lets an empty page be
    # told from the end of the list. The shared client keeps that header once it is listed in
    # KEPT_HEADERS (a proposed change); this test lists it.
    monkeypatch.setattr(http, "KEPT_HEADERS", (*http.KEPT_HEADERS, "x-total-count"))
    seen: list[httpx.Request] = []
    total = {"x-total-count": "135"}
    pages = {f"{PATH}?page=1": _page(SERVERS[0], **total),
             f"{PATH}?page=2": httpx.Response(200, json={"servers": {}}, headers=total)}
    with (HttpClient("scaleway", transport=_serve(pages, seen)) as client,
          pytest.raises(FetchError, match="page 2 is empty after 50 of 135 types")):
        scaleway.fetch(client, {})


def test_pages_add_up_to_the_total_when_it_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "KEPT_HEADERS", (*http.KEPT_HEADERS, "x-total-count"))
    seen: list[httpx.Request] = []
    total = {"x-total-count": "135"}
    pages = {f"{PATH}{kind}?page={n}": _page(file, **total)
             for kind, files in (("", SERVERS), ("/availability", STOCK))
             for n, file in enumerate(files, start=1)}
    with HttpClient("scaleway", transport=_serve(pages, seen)) as client:
        captures = scaleway.fetch(client, {})
    recorded = [c for c in captures if "/fr-par-2/" in c.url]
    assert [c.headers.get("x-total-count") for c in recorded] == ["135"] * 6
    result = scaleway.parse(captures)
    assert (len(result.offers), result.complete) == (17, True)


@pytest.mark.parametrize("creds", [{}, {"SCW_SECRET_KEY": "scw-SECRET-0000"}])
def test_fetch_walks_every_zone_and_sends_the_token_only_when_set(
        creds: dict[str, str]) -> None:
    seen: list[httpx.Request] = []
    with HttpClient("scaleway", transport=_serve({}, seen),
                    secrets=tuple(creds.values())) as client:
        captures = scaleway.fetch(client, creds)
    assert [(r.url.path, r.url.params["page"]) for r in seen] == [
        (f"/instance/v1/zones/{zone}/products/servers{kind}", "1")
        for zone in scaleway.ZONES for kind in ("", "/availability")]
    for request in seen:
        assert request.headers.get("x-auth-token") == creds.get("SCW_SECRET_KEY")
    assert "SECRET" not in json.dumps([c.model_dump(mode="json") for c in captures])
    assert scaleway.parse(captures).offers == []


def test_a_zone_the_provider_refuses_fails_the_fetch() -> None:
    seen: list[httpx.Request] = []
    refused = {"/instance/v1/zones/fr-par-1/products/servers?page=1": httpx.Response(
        403, json={"message": "permission denied"})}
    with (HttpClient("scaleway", transport=_serve(refused, seen)) as client,
          pytest.raises(FetchError) as err):
        scaleway.fetch(client, {})
    assert err.value.status == 403

"""adapters/linode.py on Linode's plan listing as recorded on 2024-07-11."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import linode
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import PricingModel

SNAP = SNAPSHOTS_DIR / "linode"
PAGE = "types_page1_linodego_676b9db_2024-07-11.json"
GPU_PLANS = [f"g1-gpu-rtx6000-{n}" for n in (1, 2, 3, 4)]


def _capture(edit: Any = None) -> Capture:
    capture = load_capture(SNAP, PAGE)
    if edit is None:
        return capture
    doc = json.loads(capture.body)
    edit(doc)
    return capture.model_copy(update={"body": json.dumps(doc).encode()})


def _gpu_plan(doc: dict[str, Any], plan_id: str = "g1-gpu-rtx6000-1") -> dict[str, Any]:
    return next(p for p in doc["data"] if p["id"] == plan_id)


class TestLinodeInvariants(OfferInvariants):
    NAME = "linode"

    @pytest.fixture
    def offers(self):
        return linode.parse([_capture()]).offers


def test_the_four_gpu_plans_at_their_hourly_price_and_no_cpu_plan() -> None:
    result = linode.parse([_capture()])
    assert (result.rejects, result.complete) == ([], True)
    got = {o.offer_key: (o.gpu_count, o.price_per_hour, o.vcpus, o.ram_gb, o.disk_gb)
           for o in result.offers}
    assert got == {
        "g1-gpu-rtx6000-1": (1, 1.5, 8, 32, 640),
        "g1-gpu-rtx6000-2": (2, 3.0, 16, 64, 1280),
        "g1-gpu-rtx6000-3": (3, 4.5, 20, 96, 1920),
        "g1-gpu-rtx6000-4": (4, 6.0, 24, 128, 2560),
    }


def test_an_offer_keeps_the_plan_facts_the_listing_states() -> None:
    one = {o.offer_key: o for o in linode.parse([_capture()]).offers}["g1-gpu-rtx6000-1"]
    assert (one.gpu_label, one.instance_type, one.pricing_model, one.currency, one.region,
            one.vram_gb_per_gpu, one.billing_increment_s) == (
        "g1-gpu-rtx6000-1", "g1-gpu-rtx6000-1", PricingModel.ON_DEMAND, "USD", None, None, None)
    assert one.provider_data == {
        "price_basis": "per plan", "label": "Dedicated 32GB + RTX6000 GPU x1", "class": "gpu",
        "usd_monthly": 1000.0, "transfer_gb": 16000.0, "network_out_mbps": 10000.0}
    assert one.observed_at == datetime(2024, 7, 11, 18, 32, 53, tzinfo=UTC)
    assert one.source_url == "https://api.linode.com/v4beta/linode/types?page=1"


def test_the_plan_ids_resolve_to_the_quadro_rtx_6000_with_their_count() -> None:
    catalog = load_catalog()
    got = {p: catalog.resolve("linode", p) for p in GPU_PLANS}
    assert {p: (getattr(r, "gpu_id", None), getattr(r, "gpu_count", None))
            for p, r in got.items()} == {
        p: ("quadro-rtx-6000-24gb", n) for n, p in enumerate(GPU_PLANS, start=1)}


def test_a_regional_price_is_its_own_offer_beside_the_plan_wide_one() -> None:
    def regional(doc: dict[str, Any]) -> None:
        _gpu_plan(doc)["region_prices"] = [{"id": "br-gru", "hourly": 1.75, "monthly": 1170.0}]

    offers = {o.offer_key: o for o in linode.parse([_capture(regional)]).offers}
    base, gru = offers["g1-gpu-rtx6000-1"], offers["g1-gpu-rtx6000-1|br-gru"]
    assert (base.region, base.price_per_hour, base.provider_data["price_scope"]) == (
        None, 1.5, "regions without their own price")
    assert (gru.region, gru.price_per_hour, gru.provider_data["usd_monthly"]) == (
        "br-gru", 1.75, 1170.0)


def test_a_successor_plan_is_kept() -> None:
    def retiring(doc: dict[str, Any]) -> None:
        _gpu_plan(doc, "g1-gpu-rtx6000-2")["successor"] = "g2-gpu-rtx4000a2-s"

    offers = {o.offer_key: o for o in linode.parse([_capture(retiring)]).offers}
    assert offers["g1-gpu-rtx6000-2"].provider_data["successor"] == "g2-gpu-rtx4000a2-s"


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda d: _gpu_plan(d)["price"].update(hourly=0),
     "g1-gpu-rtx6000-1: hourly price is not a price: 0"),
    (lambda d: _gpu_plan(d)["price"].update(hourly="1.50"),
     "g1-gpu-rtx6000-1: hourly price is not a price: '1.50'"),
    (lambda d: _gpu_plan(d).update(price=None),
     "g1-gpu-rtx6000-1: hourly price is not a price: None"),
])
def test_a_gpu_plan_without_a_usable_price_is_a_reject_keyed_to_its_plan(edit: Any,
                                                                          reason: str) -> None:
    result = linode.parse([_capture(edit)])
    assert [(r.offer_key, r.reason) for r in result.rejects] == [("g1-gpu-rtx6000-1", reason)]
    assert len(result.offers) == 3


def test_a_plan_whose_gpu_count_is_no_number_is_a_reject() -> None:
    result = linode.parse([_capture(lambda d: _gpu_plan(d).update(gpus="one"))])
    assert [r.reason for r in result.rejects] == ["gpus is not a count: 'one'"]


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d.pop("data"), "data"),
    (lambda d: d.update(data={"g1-gpu-rtx6000-1": {}}), "data"),
    (lambda d: [p.update(plan=p.pop("id")) for p in d["data"]], "id"),
    (lambda d: [p.update(gpu_count=p.pop("gpus")) for p in d["data"]], "gpus"),
    (lambda d: [p.update(pricing=p.pop("price")) for p in d["data"]], "price"),
    (lambda d: d.update(page="1"), "page"),
])
def test_a_reshaped_listing_is_a_parse_error(edit: Any, field: str) -> None:
    with pytest.raises(ParseError) as err:
        linode.parse([_capture(edit)])
    assert err.value.field == field


def test_a_body_that_is_not_json_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        linode.parse([_capture().model_copy(update={"body": b"<html>502</html>"})])


def test_a_listing_missing_an_announced_page_is_incomplete() -> None:
    result = linode.parse([_capture(lambda d: d.update(pages=2))])
    assert (len(result.offers), result.complete) == (4, False)


def _two_pages(seen: list[str]) -> httpx.MockTransport:
    doc = json.loads((SNAP / PAGE).read_bytes())
    gpu = [p for p in doc["data"] if p["gpus"]]
    pages = {"1": {"data": gpu[:2], "page": 1, "pages": 2, "results": 4},
             "2": {"data": gpu[2:], "page": 2, "pages": 2, "results": 4}}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=pages[request.url.params["page"]])

    return httpx.MockTransport(handler)


def test_fetch_follows_the_pages_the_listing_announces_and_parse_reads_them_all() -> None:
    seen: list[str] = []
    with HttpClient("linode", transport=_two_pages(seen)) as client:
        captures = linode.fetch(client, {})
    assert seen == [f"{linode.TYPES_URL}?page=1", f"{linode.TYPES_URL}?page=2"]
    result = linode.parse(captures)
    assert (sorted(o.offer_key for o in result.offers), result.complete) == (GPU_PLANS, True)


def test_offline_fetch_serves_the_bundled_listing() -> None:
    with HttpClient("linode", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = linode.fetch(client, {})
    assert [c.url for c in captures] == [f"{linode.TYPES_URL}?page=1"]
    assert captures[0].body == (SNAP / PAGE).read_bytes()

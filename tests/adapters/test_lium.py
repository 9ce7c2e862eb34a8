"""adapters/lium.py on `GET /api/executors` bodies: the bundled 17-row excerpt of the live book of
2026-08-22 (adapters/snapshots/lium/PROVENANCE.md) and edits of it."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import lium
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "lium"
BOOK = "executors_gpu_index_1ef852d_2026-08-22.json"
URL = "https://lium.io/api/executors"


def _rows() -> list[dict[str, Any]]:
    return json.loads((SNAP / BOOK).read_bytes())


def _with(doc: Any) -> Capture:
    return load_capture(SNAP, BOOK).model_copy(update={"body": json.dumps(doc).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


def _row(label: str, **changes: Any) -> dict[str, Any]:
    row = copy.deepcopy(next(r for r in _rows() if r["machine_name"] == label))
    row.update(changes)
    return row


class TestLiumInvariants(OfferInvariants):
    NAME = "lium"

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return lium.parse([load_capture(SNAP, BOOK)]).offers


def test_bundled_book_counts() -> None:
    result = lium.parse([load_capture(SNAP, BOOK)])
    assert (len(result.offers), result.rejects, result.complete) == (17, [], True)
    assert {o.currency for o in result.offers} == {"USD"}
    assert {o.price_kind for o in result.offers} == {PriceKind.OBSERVED}
    assert [o.pricing_model for o in result.offers].count(PricingModel.SPOT) == 1


def test_pinned_offers_exact_values() -> None:
    offers = _by_key(lium.parse([load_capture(SNAP, BOOK)]).offers)
    b300 = offers["NVIDIA B300 SXM6 AC|8x|US|on_demand"]
    assert (b300.gpu_label, b300.gpu_count, b300.vram_gb_per_gpu, b300.price_per_hour) == (
        "NVIDIA B300 SXM6 AC", 8, None, 63.76)
    assert (b300.pricing_model, b300.region, b300.zone) == (PricingModel.ON_DEMAND, "US", None)
    assert (b300.availability, b300.available_count) == (Availability.IN_STOCK, 1)
    assert b300.provider_data == {
        "price_basis": "cheapest ask: price_per_gpu x gpu_count", "price_per_gpu": 7.97,
        "median_price_per_gpu": 7.97, "max_price_per_gpu": 7.97, "asks": 1, "gpus_free": 8,
        "tier": "secure", "executor_id": "00000000-0000-4000-8000-00000000000b",
        "city": "Reston", "reliability_score": 97.4, "max_cuda_version": 13.0}
    assert b300.source_url == URL
    assert b300.observed_at == datetime(2026, 8, 22, tzinfo=UTC)
    # Miner-set float residue stays in the per-GPU figure; the machine price is 8 x it.
    fi = offers["NVIDIA B300 SXM6 AC|8x|FI|on_demand"]
    assert (fi.price_per_hour, fi.provider_data["price_per_gpu"]) == (64.0024, 8.000300000000001)
    h100 = offers["NVIDIA H100 80GB HBM3|2x|US|on_demand"]
    assert (h100.gpu_count, h100.price_per_hour) == (2, 3.5)
    assert offers["NVIDIA H100 80GB HBM3|8x|RU|on_demand"].provider_data[
        "min_gpu_count_for_rental"] == 1
    spot = offers["NVIDIA H200|8x|IN|spot"]
    assert (spot.pricing_model, spot.price_per_hour, spot.region) == (
        PricingModel.SPOT, 24.8, "IN")
    assert offers["NVIDIA H200|1x|FI|on_demand"].price_per_hour == 4.2262
    assert offers["NVIDIA RTX 6000 Ada Generation|8x|US|on_demand"].price_per_hour == 5.52


def test_a_partly_rented_machine_is_low_in_stock() -> None:
    offers = _by_key(lium.parse([load_capture(SNAP, BOOK)]).offers)
    server = offers["NVIDIA RTX PRO 6000 Blackwell Server Edition|8x|US|on_demand"]
    assert (server.price_per_hour, server.availability) == (8.08, Availability.LOW)
    assert server.provider_data["gpus_free"] == 4


def test_labels_map_to_the_expected_gpus() -> None:
    catalog = load_catalog()
    expected = {
        "NVIDIA B300 SXM6 AC": "b300-sxm-288gb", "NVIDIA B200": "b200-sxm-180gb",
        "NVIDIA H200": "h200-sxm-141gb", "NVIDIA H200 NVL": "h200-nvl-141gb",
        "NVIDIA H100 80GB HBM3": "h100-sxm-80gb", "NVIDIA H100 PCIe": "h100-pcie-80gb",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000-96gb",
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "rtx-pro-6000-96gb",
        "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada-48gb",
        "NVIDIA GeForce RTX 5090": "rtx-5090-32gb", "NVIDIA GeForce RTX 4090": "rtx-4090-24gb",
        "NVIDIA GeForce RTX 3090": "rtx-3090-24gb", "NVIDIA L40S": "l40s-48gb",
        "NVIDIA L40": "l40-48gb"}
    assert {r["machine_name"] for r in _rows()} == set(expected)
    assert {label: getattr(catalog.resolve("lium", label), "gpu_id", None)
            for label in expected} == expected


def test_asks_of_one_shape_are_one_offer_at_the_cheapest_price() -> None:
    rows = _rows()
    rows += [_row("NVIDIA L40S", id="a-2", price_per_gpu=0.45, available_gpu_count=2),
             _row("NVIDIA L40S", id="a-3", price_per_gpu=0.35, available_gpu_count=1),
             _row("NVIDIA L40S", id="a-4", price_per_gpu=0.30, available_gpu_count=0)]
    offers = _by_key(lium.parse([_with(rows)]).offers)
    l40s = offers["NVIDIA L40S|4x|US|on_demand"]
    assert (l40s.price_per_hour, l40s.available_count, l40s.availability) == (
        1.4, 3, Availability.IN_STOCK)  # 4 x 0.35; the fully rented 0.30 ask is no ask
    data = l40s.provider_data
    assert (data["price_per_gpu"], data["median_price_per_gpu"], data["max_price_per_gpu"]) == (
        0.35, 0.38, 0.45)
    assert (data["asks"], data["gpus_free"], data["executor_id"]) == (3, 7, "a-3")
    assert len(offers) == 17


def test_a_pending_price_is_kept_beside_never_instead_of_the_price() -> None:
    rows = [_row("NVIDIA L40", pending_price_per_hour=0.4,
                 price_change_effective_date="2026-09-01T00:00:00Z")]
    offer = lium.parse([_with(rows)]).offers[0]
    assert offer.price_per_hour == 0.33
    assert (offer.provider_data["pending_price_per_hour"],
            offer.provider_data["price_change_effective_date"]) == (0.4, "2026-09-01T00:00:00Z")


@pytest.mark.parametrize(("changes", "reason"), [
    ({"tier": "reserved"}, "unknown tier 'reserved'"),
    ({"specs": {"is_spot": True}}, "tier 'secure' contradicts specs.is_spot True"),
    ({"price_per_gpu": "0.33"}, "price_per_gpu is not a price: '0.33'"),
    ({"price_per_gpu": 0}, "price_per_gpu is not a price: 0"),
    ({"gpu_count": 0}, "gpu_count is not a GPU count: 0"),
    ({"gpu_count": 1.5}, "gpu_count is not a GPU count: 1.5"),
    ({"machine_name": " "}, "executor without a machine_name"),
    ({"available_gpu_count": 2}, "available_gpu_count 2 is not a count of the 1 GPUs"),
])
def test_bad_rows_are_rejected_with_reasons(changes: dict[str, Any], reason: str) -> None:
    rows = [_row("NVIDIA L40", **changes), _row("NVIDIA L40S")]
    result = lium.parse([_with(rows)])
    assert [r.reason for r in result.rejects] == [reason]
    assert [o.gpu_label for o in result.offers] == ["NVIDIA L40S"]
    assert result.complete is True


def test_a_row_that_is_no_object_is_rejected() -> None:
    result = lium.parse([_with([*_rows(), "executor"])])
    assert [r.reason for r in result.rejects] == ["executor is not an object: str"]
    assert len(result.offers) == 17


def test_an_empty_or_wholly_refused_book_closes_nothing() -> None:
    assert lium.parse([_with([])]).complete is False
    refused = lium.parse([_with([_row("NVIDIA L40", tier="community")])])
    assert (refused.offers, refused.complete) == ([], False)
    rented = lium.parse([_with([_row("NVIDIA L40", available_gpu_count=0)])])
    assert (rented.offers, rented.rejects, rented.complete) == ([], [], True)


@pytest.mark.parametrize(("body", "message"), [
    (b"<html><body>502 Bad Gateway</body></html>", "body is not JSON"),
    (b'{"detail": "Not authenticated"}', "expected a JSON array of executors, got dict: Not"),
    (b'{"executors": []}', "expected a JSON array of executors, got dict"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, message: str) -> None:
    capture = load_capture(SNAP, BOOK).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        lium.parse([capture])
    assert (err.value.field, err.value.url, err.value.provider) == (None, URL, "lium")
    assert message in str(err.value)


@pytest.mark.parametrize(("old", "new"), [
    ("machine_name", "gpu_name"), ("price_per_gpu", "price_per_hour"), ("tier", "plan"),
    ("gpu_count", "num_gpus"), ("id", "executor_id"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    rows = [{(new if k == old else k): v for k, v in r.items()} for r in _rows()]
    with pytest.raises(ParseError) as err:
        lium.parse([_with(rows)])
    assert err.value.field == old


def test_offline_fetch_serves_the_bundled_book() -> None:
    with HttpClient("lium", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = lium.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / BOOK).read_bytes()]
    assert [c.url for c in captures] == [URL]
    assert len(lium.parse(captures).offers) == 17


@pytest.mark.parametrize("creds", [{}, {"LIUM_API_KEY": "lk_SECRET"}])
def test_live_fetch_sends_the_key_only_when_set_and_never_keeps_it(
        creds: dict[str, str]) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=_rows()[:1])

    with HttpClient("lium", transport=httpx.MockTransport(handler),
                    secrets=tuple(creds.values())) as client:
        captures = lium.fetch(client, creds)
    assert [str(r.url) for r in seen] == [URL]
    assert seen[0].headers.get("x-api-key") == creds.get("LIUM_API_KEY")
    assert "SECRET" not in captures[0].model_dump_json()
    assert len(lium.parse(captures).offers) == 1

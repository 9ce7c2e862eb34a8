"""adapters/runpod.py on RunPod's pricing pages: the 2026 JSON-LD and the 2023 __NEXT_DATA__."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from gpuscout.adapters import runpod
from gpuscout.adapters.archive import Capture, read_manifest, sha256
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import FormFactor, ParsedOffer, ParseResult, PriceKind, PricingModel
from invariants import FIXTURES, OfferInvariants, load_capture

FIX = FIXTURES / "runpod"
SNAP = SNAPSHOTS_DIR / "runpod"
JSON_LD = "runpod_20260810082317.html"
NEXT_DATA = "runpod_20230929070808.html"
JUMBO = "gpu_types_list_jumbo2020_2025-06-21.json"  # GraphQL, 2025-06-21
FIVE_FIELDS = "graphql_gpu_types_5fields_ewyluda_d789fed.json"
ONIQ = "gpu_types_lowestprice_oniq_2026-08-25.json"
H100 = "NVIDIA H100 80GB HBM3"
LD_SCRIPT = re.compile(rb'(<script type="application/ld\+json">)(.*?)(</script>)', re.S)
NEXT_SCRIPT = re.compile(rb'(<script id="__NEXT_DATA__" type="application/json">)(.*?)(</script>)',
                         re.S)


def _parse(file: str) -> ParseResult:
    return runpod.parse([load_capture(FIX, file)])


def _prices(offers: list[ParsedOffer]) -> dict[str, float]:
    return {o.offer_key: o.price_per_hour for o in offers}


def _edited(file: str, pattern: re.Pattern[bytes], edit: Callable[[Any], Any]) -> Capture:
    """The recorded page with its JSON script decoded, edited and put back."""
    capture = load_capture(FIX, file)
    match = pattern.search(capture.body)
    assert match is not None
    doc = edit(json.loads(match[2]))
    body = capture.body[:match.start(2)] + json.dumps(doc).encode() + capture.body[match.end(2):]
    return capture.model_copy(update={"body": body})


def _products(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """'H100 SXM' -> the Product node of the JSON-LD @graph (the same objects, to edit)."""
    return {n["name"].removesuffix(" GPU on Runpod"): n for n in doc["@graph"]
            if n["@type"] == "Product"}


def _next_data_gpu_types() -> list[dict[str, Any]]:
    script = NEXT_SCRIPT.search((FIX / NEXT_DATA).read_bytes())
    assert script is not None
    return json.loads(script[2])["props"]["pageProps"]["data"]


def _graphql_keys() -> set[str]:
    return {o.offer_key for o in runpod.parse([load_capture(SNAP, JUMBO)]).offers}


# 2023 ids that the catalog lists as unmapped; "H200" (2026 page) says neither SXM nor NVL.
EXPECTED_UNKNOWN = frozenset({
    "H200",
    "NVIDIA GeForce RTX 3070", "NVIDIA GeForce RTX 3080", "NVIDIA GeForce RTX 3080 Ti",
    "NVIDIA GeForce RTX 4070 Ti", "NVIDIA RTX 4000 SFF Ada Generation", "NVIDIA RTX A4500",
})


class TestRunpodPagesInvariants(OfferInvariants):
    NAME = "runpod"
    EXPECTED_UNKNOWN = EXPECTED_UNKNOWN

    @pytest.fixture(params=[JSON_LD, NEXT_DATA])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return _parse(request.param).offers


# -- JSON-LD (runpod.io/pricing, 2026-08-10) --------------------------------------------------

JSON_LD_PRICES = {  # (community, secure) as the named Offers give them
    "NVIDIA B300 SXM6 AC": (6.94, 7.39),
    "page:H200": (3.59, 4.39),
    "NVIDIA B200": (5.89, 5.89),
    "page:RTX Pro 6000": (1.69, 1.99),
    "NVIDIA H100 NVL": (2.59, 3.19),
    "NVIDIA H100 PCIe": (1.99, 2.89),
    H100: (2.69, 2.99),
    "NVIDIA A100 80GB PCIe": (1.19, 1.39),
    "NVIDIA A100-SXM4-80GB": (1.39, 1.49),
    "NVIDIA L40S": (0.79, 0.99),
    "NVIDIA RTX 6000 Ada Generation": (0.74, 0.77),
    "NVIDIA A40": (0.35, 0.44),
    "NVIDIA L40": (0.69, 0.82),
    "NVIDIA RTX A6000": (0.33, 0.49),
    "NVIDIA GeForce RTX 5090": (0.69, 0.99),
    "NVIDIA L4": (0.44, 0.39),  # community above secure, as the page has it
    "NVIDIA GeForce RTX 3090": (0.22, 0.46),
    "NVIDIA GeForce RTX 4090": (0.34, 0.69),
    "NVIDIA RTX A5000": (0.16, 0.27),
}


def test_json_ld_every_offer() -> None:
    result = _parse(JSON_LD)
    expected = {f"{gpu}|{tier}|on_demand": price for gpu, pair in JSON_LD_PRICES.items()
                for tier, price in zip(("community", "secure"), pair, strict=True)}
    assert _prices(result.offers) == expected
    assert (len(result.offers), result.rejects) == (38, [])
    # 19 GPUs, on-demand only: loading it must not close the offers it does not mention.
    assert result.complete is False
    assert {(o.pricing_model, o.price_kind, o.currency, o.gpu_count, o.vram_gb_per_gpu,
             o.region) for o in result.offers} == {
        (PricingModel.ON_DEMAND, PriceKind.LISTED, "USD", 1, None, None)}


def test_json_ld_h100_sxm() -> None:
    offers = {o.offer_key: o for o in _parse(JSON_LD).offers}
    secure, community = offers[f"{H100}|secure|on_demand"], offers[f"{H100}|community|on_demand"]
    assert (secure.price_per_hour, community.price_per_hour) == (2.99, 2.69)
    assert secure.gpu_label == "H100 SXM"
    assert secure.provider_data == {
        "view": "pricing_page_json_ld", "page_name": "H100 SXM", "cloud": "secure",
        "offer_name": "Secure Cloud", "gpu_type_id": H100,
        "product_id": "https://www.runpod.io/pricing/#gpu-h100-sxm",
        "page_date_modified": "2026-07-17"}
    assert secure.source_url == "https://www.runpod.io/pricing"
    assert secure.observed_at == datetime(2026, 8, 10, 8, 23, 17, tzinfo=UTC)


def test_json_ld_keys_are_the_graphql_keys() -> None:
    page = {o.offer_key for o in _parse(JSON_LD).offers}
    graphql = _graphql_keys()  # 2025-06-21
    linked = {f"{gpu}|{tier}|on_demand" for gpu in (
        H100, "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA A100 80GB PCIe",
        "NVIDIA A100-SXM4-80GB", "NVIDIA L40S", "NVIDIA L40", "NVIDIA RTX 6000 Ada Generation",
        "NVIDIA RTX A6000", "NVIDIA GeForce RTX 5090", "NVIDIA GeForce RTX 3090",
        "NVIDIA GeForce RTX 4090", "NVIDIA RTX A5000") for tier in ("secure", "community")}
    linked |= {"NVIDIA L4|secure|on_demand", "NVIDIA A40|secure|on_demand",
               "NVIDIA B200|secure|on_demand"}
    assert page & graphql == linked
    assert page - graphql == {
        # the page lists a community price where the 2025 API flags the cloud as not offered
        "NVIDIA L4|community|on_demand", "NVIDIA A40|community|on_demand",
        "NVIDIA B200|community|on_demand",
        # not in that API capture (ewyluda's 5-field capture has the id)
        "NVIDIA B300 SXM6 AC|secure|on_demand", "NVIDIA B300 SXM6 AC|community|on_demand",
        # no single GraphQL id: keys of their own that no GraphQL offer can take by mistake
        "page:H200|secure|on_demand", "page:H200|community|on_demand",
        "page:RTX Pro 6000|secure|on_demand", "page:RTX Pro 6000|community|on_demand",
    }


def _recorded_display_names() -> dict[str, set[str]]:
    """displayName (lower case) -> the ids that carry it in every recorded API capture."""
    lists = [json.loads((SNAP / JUMBO).read_bytes()), _next_data_gpu_types()]
    lists += [json.loads((FIX / f).read_bytes())["data"]["gpuTypes"] for f in (FIVE_FIELDS, ONIQ)]
    names: dict[str, set[str]] = {}
    for entries in lists:
        for e in entries:
            names.setdefault(e["displayName"].lower(), set()).add(e["id"])
    return names


def test_page_names_map_to_ids_only_through_a_unique_display_name() -> None:
    names = _recorded_display_names()
    for page_name, type_id in runpod.PAGE_GPU_TYPE_IDS.items():
        assert names.get(page_name.lower()) == {type_id}, page_name
    # the two page names left without a GraphQL id, and why
    assert "h200" not in names
    assert names["h200 sxm"] == {"NVIDIA H200"} and names["h200 nvl"] == {"NVIDIA H200 NVL"}
    assert names["rtx pro 6000"] == {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                                     "NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    # "A100 PCIe" / "A100 SXM" are the 80 GB types; the 40 GB ones say so
    assert names["a100 40gb"] == {"NVIDIA A100-PCIE-40GB"}
    assert names["a100 sxm 40gb"] == {"NVIDIA A100-SXM4-40GB"}
    page_names = {o.gpu_label for o in _parse(JSON_LD).offers}
    assert page_names - set(runpod.PAGE_GPU_TYPE_IDS) == {"H200", "RTX Pro 6000"}


def test_page_labels_resolve_to_the_gpu_of_their_graphql_id() -> None:
    catalog = load_catalog()
    for page_name, type_id in runpod.PAGE_GPU_TYPE_IDS.items():
        by_page, by_id = catalog.resolve("runpod", page_name), catalog.resolve("runpod", type_id)
        assert isinstance(by_page, Resolved) and isinstance(by_id, Resolved), page_name
        assert by_page.gpu_id == by_id.gpu_id, page_name
    resolved = {n: catalog.resolve("runpod", n) for n in (
        "H100 SXM", "H100 PCIe", "H100 NVL", "A100 SXM", "A100 PCIe", "RTX Pro 6000")}
    assert {n: r.gpu_id for n, r in resolved.items()} == {
        "H100 SXM": "h100-sxm-80gb", "H100 PCIe": "h100-pcie-80gb", "H100 NVL": "h100-nvl-94gb",
        "A100 SXM": "a100-sxm-80gb", "A100 PCIe": "a100-pcie-80gb",
        "RTX Pro 6000": "rtx-pro-6000-96gb"}
    for label in {o.gpu_label for o in _parse(JSON_LD).offers}:
        res = catalog.resolve("runpod", label)
        if isinstance(res, Unknown):
            continue
        form = catalog.gpu(res.gpu_id).form_factor
        for word, factor in (("SXM", FormFactor.SXM), ("PCIe", FormFactor.PCIE),
                             ("NVL", FormFactor.NVL)):
            if word in label:  # never SXM <-> PCIe
                assert form == factor, (label, res.gpu_id)
    h200 = catalog.resolve("runpod", "H200")
    assert isinstance(h200, Unknown) and "unmapped" in h200.reason


def test_graphql_and_page_history_link_the_newest_wins() -> None:
    jumbo, page = load_capture(SNAP, JUMBO), load_capture(FIX, JSON_LD)
    for order in ([jumbo, page], [page, jumbo]):
        result = runpod.parse(order)
        offers = {o.offer_key: o for o in result.offers}
        od, spot = offers[f"{H100}|secure|on_demand"], offers[f"{H100}|secure|spot"]
        assert (od.price_per_hour, od.provider_data["view"]) == (2.99, "pricing_page_json_ld")
        assert (spot.price_per_hour, "view" in spot.provider_data) == (1.75, False)
        assert result.complete is False


def test_an_aggregate_range_is_not_a_price() -> None:
    def drop_named_offers(doc: dict[str, Any]) -> dict[str, Any]:
        del _products(doc)["H200"]["offers"]["offers"]
        return doc

    result = runpod.parse([_edited(JSON_LD, LD_SCRIPT, drop_named_offers)])
    assert not [o for o in result.offers if o.gpu_label == "H200"]  # not 3.59 nor 4.39
    assert [r.reason for r in result.rejects] == [
        "H200: no named Offer (an AggregateOffer's lowPrice/highPrice is a range, not a price)"]
    assert len(result.offers) == 36


def test_bad_json_ld_offers_are_rejected_with_reasons() -> None:
    def spoil(doc: dict[str, Any]) -> dict[str, Any]:
        products = _products(doc)
        b300, h200 = products["B300"]["offers"], products["H200"]["offers"]
        b300["offers"][0]["price"] = "call us"
        b300["offers"][1]["name"] = "Bare Metal"
        h200["offers"][0]["description"] = "H200 per-hour spot rate on Runpod Community Cloud"
        del h200["offers"][1]["priceCurrency"], h200["priceCurrency"]
        products["L4"]["name"] = "Network Storage on Runpod"
        products["L40"]["offers"]["offers"][1]["price"] = "0.00"
        return doc

    result = runpod.parse([_edited(JSON_LD, LD_SCRIPT, spoil)])
    assert sorted((r.reason, r.offer_key) for r in result.rejects) == [
        ("B300: Community Cloud price is not a number: 'call us'",
         "NVIDIA B300 SXM6 AC|community|on_demand"),
        ("B300: Offer 'Bare Metal' names no cloud (Secure Cloud, Community Cloud)", None),
        ("H200: Community Cloud does not say it is a per-hour on-demand rate: "
         "'H200 per-hour spot rate on Runpod Community Cloud'", "page:H200|community|on_demand"),
        ("H200: Secure Cloud has no priceCurrency: None", "page:H200|secure|on_demand"),
        ("L40: Secure Cloud price is not positive: '0.00'", "NVIDIA L40|secure|on_demand"),
        ("Product name is not '<GPU> GPU on Runpod': 'Network Storage on Runpod'", None),
    ]
    assert len(result.offers) == 38 - 2 - 2 - 2 - 1


def test_the_same_gpu_twice_on_a_page_is_rejected() -> None:
    def twice(doc: dict[str, Any]) -> dict[str, Any]:
        copy = json.loads(json.dumps(_products(doc)["H100 SXM"]))
        copy["offers"]["offers"][1]["price"] = "3.49"
        doc["@graph"].append(copy)
        return doc

    result = runpod.parse([_edited(JSON_LD, LD_SCRIPT, twice)])
    assert sorted((r.offer_key, r.reason) for r in result.rejects) == sorted(
        [(f"{H100}|{tier}|on_demand", "the page lists this GPU and cloud more than once")
         for tier in ("secure", "secure", "community", "community")])
    assert not [o for o in result.offers if o.gpu_label == "H100 SXM"]


# -- __NEXT_DATA__ (runpod.io/gpu-instance/pricing, 2023-09-29) -------------------------------


def _gpu(offers: list[ParsedOffer], gpu: str) -> dict[str, float]:
    return {o.offer_key.removeprefix(f"{gpu}|"): o.price_per_hour
            for o in offers if o.gpu_label == gpu}


def test_next_data_prices() -> None:
    result = _parse(NEXT_DATA)
    assert (len(result.offers), result.rejects, result.complete) == (59, [], True)
    offers = result.offers
    assert _gpu(offers, H100) == {"secure|on_demand": 4.49, "community|on_demand": 4.09,
                                  "community|spot": 2.49}  # secureSpotPrice null
    assert _gpu(offers, "NVIDIA H100 PCIe") == {
        "secure|on_demand": 4.29, "community|on_demand": 3.99, "community|spot": 2.49}
    # communityCloud false: its 1.69 / 0.89 are not offers
    assert _gpu(offers, "NVIDIA A100-SXM4-80GB") == {"secure|on_demand": 2.19}
    assert _gpu(offers, "NVIDIA A100 80GB PCIe") == {
        "secure|on_demand": 1.99, "community|on_demand": 1.69, "community|spot": 0.89}
    assert _gpu(offers, "NVIDIA A100-PCIE-40GB") == {
        "community|on_demand": 0.79, "community|spot": 0.49}
    assert _gpu(offers, "NVIDIA L40") == {"secure|on_demand": 1.14, "secure|spot": 0.69}
    assert _gpu(offers, "NVIDIA L4") == {"secure|on_demand": 0.44}
    # secureCloud false with the 0.5 placeholder, and securePrice 0
    assert _gpu(offers, "NVIDIA GeForce RTX 4070 Ti") == {
        "community|on_demand": 0.32, "community|spot": 0.2}
    assert _gpu(offers, "NVIDIA GeForce RTX 3070") == {"community|on_demand": 0.2}
    assert len({o.gpu_label for o in offers}) == 25


def test_next_data_h100_offer() -> None:
    offers = {o.offer_key: o for o in _parse(NEXT_DATA).offers}
    h100 = offers[f"{H100}|community|spot"]
    assert (h100.gpu_label, h100.vram_gb_per_gpu, h100.gpu_count) == (H100, 80.0, 1)
    assert (h100.pricing_model, h100.price_kind) == (PricingModel.SPOT, PriceKind.LISTED)
    assert h100.provider_data == {
        "view": "pricing_page_next_data", "display_name": "H100 80GB SXM5",
        "cloud": "community", "price_field": "communitySpotPrice", "max_gpu_count": 8,
        "stock_status": "Low"}
    assert h100.source_url == "https://www.runpod.io/gpu-instance/pricing"
    assert h100.observed_at == datetime(2023, 9, 29, 7, 8, 8, tzinfo=UTC)


def test_next_data_reads_like_the_graphql_api() -> None:
    page = _parse(NEXT_DATA).offers
    envelope = {"data": {"gpuTypes": _next_data_gpu_types()}}
    api = load_capture(SNAP, JUMBO).model_copy(update={
        "body": json.dumps(envelope).encode(), "fetched_at": page[0].observed_at})
    graphql = runpod.parse([api]).offers

    def same(o: ParsedOffer) -> dict[str, Any]:
        data = {k: v for k, v in o.provider_data.items() if k != "view"}
        return o.model_dump(exclude={"source_url", "provider_data"}) | {"data": data}

    assert [same(o) for o in page] == [same(o) for o in graphql]
    assert {o.offer_key for o in page if o.gpu_label == H100} <= _graphql_keys()


# -- shape errors, fixtures, fetch ------------------------------------------------------------


def _html(body: str) -> Capture:
    return load_capture(FIX, JSON_LD).model_copy(update={"body": body.encode()})


@pytest.mark.parametrize(("body", "field"), [
    ("<!doctype html><html><body><h1>Pricing</h1><table><tr><td>H100 SXM</td>"
     "<td>$2.99/hr</td></tr></table></body></html>", None),
    ('<script id="__NEXT_DATA__" type="application/json">{"props":{"pageProps":{}}}</script>',
     "props.pageProps.data"),
    ('<script type="application/ld+json">{"@context":"https://schema.org","@graph":'
     '[{"@type":"WebPage","name":"Pricing"}]}</script>', "@graph"),
    ('<script type="application/ld+json">{"@graph": [</script>', "JSON-LD"),
])
def test_a_page_without_a_readable_view_is_a_parse_error(body: str, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        runpod.parse([_html(body)])
    assert err.value.field == field
    assert err.value.url == "https://www.runpod.io/pricing"


def test_next_data_without_cloud_flags_is_a_parse_error() -> None:
    def unflag(doc: dict[str, Any]) -> dict[str, Any]:
        for e in doc["props"]["pageProps"]["data"]:
            del e["secureCloud"], e["communityCloud"]
        return doc

    with pytest.raises(ParseError) as err:
        runpod.parse([_edited(NEXT_DATA, NEXT_SCRIPT, unflag)])
    assert err.value.field == "secureCloud"


def test_fixtures_match_their_manifest() -> None:
    entries = {e.file: e for e in read_manifest(FIX)}
    for file, url in ((JSON_LD, "https://www.runpod.io/pricing"),
                      (NEXT_DATA, "https://www.runpod.io/gpu-instance/pricing")):
        assert sha256((FIX / file).read_bytes()) == entries[file].sha256
        assert entries[file].url == url
    assert {"gpu_types_lowestprice_oniq_2026-08-25.json", FIVE_FIELDS,
            "docs_example_gpu_type_by_id_lowestprice.json"} <= set(entries)


def test_fetch_never_falls_back_to_the_pricing_page() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(503)

    with (HttpClient("runpod", transport=httpx.MockTransport(handler),
                     sleep=lambda _: None) as client, pytest.raises(FetchError)):
        runpod.fetch(client, {})
    assert seen and {(r.method, str(r.url)) for r in seen} == {("POST", runpod.GRAPHQL_URL)}

"""adapters/lambdalabs.py on both recorded layouts of the Lambda pricing page and on the
instance-types API (the OpenAPI v1.10.0 example), alone and together."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import lambdalabs
from gpuscout.adapters.archive import REPLAY_PLACEHOLDER, Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "lambda"
PAGE_2026 = "lambda_20260109103934.html"
PAGE_2024 = "lambda_20241103180910.html"
API_EXAMPLE = "lambda_instance_types_openapi_v1.10.0.json"
EXAMPLE_LABEL = "Example GPU (40 GB SXM4)"
H100_8X = "8x|NVIDIA H100 SXM|80GB|on_demand"


def _parse(file: str) -> ParseResult:
    return lambdalabs.parse([load_capture(SNAP, file)])


def _mutated(file: str, old: str, new: str, *, exactly_once: bool = False) -> Capture:
    """A recorded page with one string replaced: how a format change would look."""
    capture = load_capture(SNAP, file)
    return with_replaced(capture, old, new, exactly_once=exactly_once)


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestLambdaInvariants(OfferInvariants):
    NAME = "lambda"
    # The OpenAPI example's GPU is a placeholder name, in no catalog.
    EXPECTED_UNKNOWN = frozenset({EXAMPLE_LABEL})

    @pytest.fixture(params=[PAGE_2026, PAGE_2024, API_EXAMPLE])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return _parse(request.param).offers


def test_2026_page_8x_panel() -> None:
    result = _parse(PAGE_2026)
    assert result.rejects == []
    prices = {o.offer_key: (o.price_per_hour, o.provider_data["price_per_gpu_hour"])
              for o in result.offers}
    assert prices == {
        "8x|NVIDIA B200 SXM6|180GB|on_demand": (39.92, 4.99),
        "8x|NVIDIA H100 SXM|80GB|on_demand": (23.92, 2.99),
        "8x|NVIDIA A100 SXM|80GB|on_demand": (14.32, 1.79),
        "8x|NVIDIA A100 SXM|40GB|on_demand": (10.32, 1.29),
        "8x|NVIDIA Tesla V100|16GB|on_demand": (4.4, 0.55),
    }


def test_2026_h100_offer_in_full() -> None:
    offer = _by_key(_parse(PAGE_2026).offers)[H100_8X]
    assert offer.model_dump() == {
        "provider": "lambda", "offer_key": H100_8X, "instance_type": None,
        "gpu_label": "NVIDIA H100 SXM", "gpu_count": 8, "vram_gb_per_gpu": 80.0,
        "pricing_model": PricingModel.ON_DEMAND, "price_per_hour": 23.92, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": 208.0,
        "ram_gb": 1932.7,  # 1800 GiB
        "disk_gb": 24189.3,  # 22 TiB
        "interconnect": None, "interconnect_gbps": None, "network": None, "network_gbps": None,
        "billing_increment_s": None, "availability": "unknown", "available_count": None,
        "source_url": "https://lambda.ai/pricing",
        "observed_at": datetime(2026, 1, 9, 10, 39, 34, tzinfo=UTC),
        "provider_data": {"layout": "2026-tabs", "tab": "8x", "price_per_gpu_hour": 2.99,
                          "ram": "1800 GiB", "storage": "22 TiB SSD"},
    }


def test_2024_table_every_row() -> None:
    result = _parse(PAGE_2024)
    assert {o.offer_key: o.price_per_hour for o in result.offers} == {
        "8x|NVIDIA H100 SXM|80GB|on_demand": 23.92,
        "4x|NVIDIA H100 SXM|80GB|on_demand": 12.36,
        "2x|NVIDIA H100 SXM|80GB|on_demand": 6.38,
        "1x|NVIDIA H100 SXM|80GB|on_demand": 3.29,
        "1x|NVIDIA H100 PCIe|80GB|on_demand": 2.49,
        "8x|NVIDIA A100 SXM|80GB|on_demand": 14.32,
        "8x|NVIDIA A100 SXM|40GB|on_demand": 10.32,
        "1x|NVIDIA A100 SXM|40GB|on_demand": 1.29,
        "4x|NVIDIA A100 PCIe|40GB|on_demand": 5.16,
        "2x|NVIDIA A100 PCIe|40GB|on_demand": 2.58,
        "1x|NVIDIA A100 PCIe|40GB|on_demand": 1.29,
        "1x|NVIDIA A10|24GB|on_demand": 0.75,
        "4x|NVIDIA A6000|48GB|on_demand": 3.2,
        "2x|NVIDIA A6000|48GB|on_demand": 1.6,
        "1x|NVIDIA A6000|48GB|on_demand": 0.8,
        "8x|NVIDIA Tesla V100|16GB|on_demand": 4.4,
        "1x|NVIDIA Quadro RTX 6000|24GB|on_demand": 0.5,
    }
    assert [(r.provider, r.reason) for r in result.rejects] == [("lambda", "contact sales")]
    assert "Reserved 8x NVIDIA H100 SXM" in result.rejects[0].raw


def test_2024_h100_offer_details() -> None:
    offer = _by_key(_parse(PAGE_2024).offers)[H100_8X]
    assert (offer.gpu_count, offer.vram_gb_per_gpu, offer.vcpus, offer.ram_gb, offer.disk_gb) \
        == (8, 80.0, 208.0, 1932.7, 28587.3)  # 1800 GiB, 26 TiB
    assert offer.provider_data["plan"] == "On-demand 8x NVIDIA H100 SXM"
    assert offer.provider_data["price_per_gpu_hour"] == 2.99
    assert offer.source_url == "https://lambdalabs.com/service/gpu-cloud"
    assert offer.observed_at == datetime(2024, 11, 3, 18, 9, 10, tzinfo=UTC)


def test_same_machine_shape_keeps_its_key_across_layouts() -> None:
    keys_2026 = {o.offer_key for o in _parse(PAGE_2026).offers}
    keys_2024 = {o.offer_key for o in _parse(PAGE_2024).offers}
    assert keys_2026 & keys_2024 == {
        "8x|NVIDIA H100 SXM|80GB|on_demand", "8x|NVIDIA A100 SXM|80GB|on_demand",
        "8x|NVIDIA A100 SXM|40GB|on_demand", "8x|NVIDIA Tesla V100|16GB|on_demand",
    }
    # 8x H100 SXM: $2.99 per GPU-hour on both dates.
    for file in (PAGE_2026, PAGE_2024):
        assert _by_key(_parse(file).offers)[H100_8X].provider_data["price_per_gpu_hour"] == 2.99


def test_several_captures_newest_wins_per_key() -> None:
    result = lambdalabs.parse([load_capture(SNAP, PAGE_2026), load_capture(SNAP, PAGE_2024)])
    offers = _by_key(result.offers)
    assert len(offers) == 18  # 17 from 2024 + B200 from 2026
    assert offers[H100_8X].disk_gb == 24189.3  # the 2026 row (22 TiB), not 2024's 26 TiB
    assert offers["1x|NVIDIA A10|24GB|on_demand"].observed_at.year == 2024


def test_row_without_a_price_is_rejected() -> None:
    capture = _mutated(PAGE_2026, "$0.55", "Contact sales")
    result = lambdalabs.parse([capture])
    assert len(result.offers) == 4
    assert [r.reason for r in result.rejects] == ["contact sales"]
    assert 'data-plan="NVIDIA Tesla V100"' in result.rejects[0].raw


def test_renamed_price_column_is_a_parse_error() -> None:
    # A per-instance price column ("PRICE/HR") must never be read as per GPU.
    capture = _mutated(PAGE_2026, "<th>PRICE/GPU/HR*</th>", "<th>PRICE/HR*</th>")
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "PRICE/GPU/HR"
    assert err.value.url == "https://lambda.ai/pricing"


def test_cells_under_the_wrong_header() -> None:
    # The header still says PRICE/GPU/HR but no cell does: the column was renamed, a format
    # change, not five bad rows.
    capture = _mutated(PAGE_2026, 'data-label="PRICE/GPU/HR*"', 'data-label="PRICE/HR*"')
    with pytest.raises(ParseError, match=r"no 'PRICE/GPU/HR' column in the 8x panel: its "
                                         r"cells are labelled 'PRICE/HR'") as err:
        lambdalabs.parse([capture])
    assert err.value.field == "PRICE/GPU/HR"
    # one row whose cells moved is a Reject, and the page closes nothing (it may hold an offer)
    page = load_capture(SNAP, PAGE_2026)
    text = page.body.decode().replace('data-label="PRICE/GPU/HR*"', 'data-label="PRICE/HR*"', 1)
    result = lambdalabs.parse([page.model_copy(update={"body": text.encode()})])
    assert len(result.offers) == 4 and not result.complete
    assert [r.reason for r in result.rejects] == \
        ["cell labelled 'PRICE/HR' under the header 'PRICE/GPU/HR'"]


def test_tab_without_a_count_is_a_parse_error() -> None:
    capture = _mutated(PAGE_2026, ">8x</button>", ">Eight GPUs</button>")
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "tab label"


def test_page_without_a_pricing_table_is_a_parse_error() -> None:
    capture = Capture(provider="lambda", url=lambdalabs.PRICING_URL,
                      body=b"<html><body><h1>Pricing</h1><p>Talk to us.</p></body></html>",
                      fetched_at=datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "pricing table"
    assert err.value.snippet is not None and "Talk to us" in err.value.snippet


def test_offline_fetch_serves_the_bundled_2026_page() -> None:
    with HttpClient("lambda", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = lambdalabs.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / PAGE_2026).read_bytes()
    assert capture.url == load_capture(SNAP, PAGE_2026).url == "https://lambda.ai/pricing"
    assert capture.fetched_at == datetime(2026, 1, 9, 10, 39, 34, tzinfo=UTC)
    assert len(lambdalabs.parse(captures).offers) == 5


def test_a_per_instance_price_is_never_read_as_per_gpu() -> None:
    # The 2023 page printed instance prices ("$20.72 / hr"); such a row must not become an
    # offer 8 times too expensive.
    capture = _mutated(PAGE_2024, "$2.99 / GPU / hr", "$23.92 / hr")
    result = lambdalabs.parse([capture])
    assert H100_8X not in _by_key(result.offers)
    assert "unrecognised price '$23.92 / hr'" in [r.reason for r in result.rejects]


# -- the page: tables and rows that are no on-demand instance price ----------------------------

TAB_WIDGET = '<div class="_tabsContainer_ywv0y_2">'
ROW_H100 = (
    '<tr class="_pricingRow_z1nfw_36" data-plan="NVIDIA H100 SXM"><th style="width:31%" '
    'data-label="Plan">NVIDIA H100 SXM</th><td data-label="VRAM/GPU">80 GB</td>'
    '<td data-label="vCPUs">208</td><td data-label="RAM">1800 GiB</td>'
    '<td data-label="STORAGE">22 TiB SSD</td><td data-label="PRICE/GPU/HR*">$2.99</td></tr>')
HEADER = ('<thead><tr><th style="width:31%"></th><th>VRAM/GPU</th><th>vCPUs</th><th>RAM</th>'
          '<th>STORAGE</th><th>PRICE/GPU/HR*</th></tr></thead>')
PAGE_2026_PRICES = {"8x|NVIDIA B200 SXM6|180GB|on_demand": 39.92, H100_8X: 23.92,
                    "8x|NVIDIA A100 SXM|80GB|on_demand": 14.32,
                    "8x|NVIDIA A100 SXM|40GB|on_demand": 10.32,
                    "8x|NVIDIA Tesla V100|16GB|on_demand": 4.4}


def _prices(result: ParseResult) -> dict[str, float]:
    return {o.offer_key: o.price_per_hour for o in result.offers}


def test_stray_plan_row_outside_a_panel_is_a_reject_not_a_parse_error() -> None:
    # The real 8x row copied into a table of its own before the tab widget, at another price.
    stray = f'<table><tbody>{ROW_H100.replace("$2.99", "$2.49")}</tbody></table>'
    capture = _mutated(PAGE_2026, TAB_WIDGET, stray + TAB_WIDGET, exactly_once=True)
    result = lambdalabs.parse([capture])
    assert _prices(result) == PAGE_2026_PRICES  # the stray $2.49 changes no price
    assert [r.reason for r in result.rejects] == [
        "priced row (NVIDIA H100 SXM) outside the on-demand instance tabs, in a table without "
        "VRAM/GPU and price headers: no GPU count, not an instance price"]
    assert "$2.49" in result.rejects[0].raw


def test_cluster_table_outside_the_tabs_is_labelled_not_read() -> None:
    # A table with the instance table's own headers before the tab widget, under a cluster
    # heading: no tab gives its GPU count, so its prices are no instance prices.
    cluster = (f'<h2>1-Click Clusters</h2><table>{HEADER}<tbody>'
               f'{ROW_H100.replace("$2.99", "$2.69")}</tbody></table>')
    capture = _mutated(PAGE_2026, TAB_WIDGET, cluster + TAB_WIDGET, exactly_once=True)
    result = lambdalabs.parse([capture])
    assert _prices(result) == PAGE_2026_PRICES
    assert [r.reason for r in result.rejects] == [
        "priced row (NVIDIA H100 SXM) outside the on-demand instance tabs, in no tab panel: "
        "no GPU count, not an instance price"]
    assert "$2.69" in result.rejects[0].raw


@pytest.mark.parametrize("before", [TAB_WIDGET, '<p class="table-footer">'],
                         ids=["beside the instance widget", "inside the 8x panel"])
def test_tab_widget_without_count_tabs_is_not_the_instance_widget(before: str) -> None:
    # A second widget ("Reserved" / "Clusters" tabs) holding a priced table is labelled by its
    # tab; the instance widget's ids ("tab-0", "tabpanel-0") repeat in it, and nested in the
    # 8x panel it must not hide the 8x tab.
    widget = (
        '<div><div role="tablist"><button role="tab" id="tab-0">Reserved</button>'
        '<button role="tab" id="tab-1">Clusters</button></div>'
        '<div role="tabpanel" id="tabpanel-0" aria-labelledby="tab-0">'
        f'<table>{HEADER}<tbody>{ROW_H100.replace("$2.99", "$1.85")}</tbody></table>'
        '</div></div>')
    capture = _mutated(PAGE_2026, before, widget + before, exactly_once=True)
    result = lambdalabs.parse([capture])
    assert _prices(result) == PAGE_2026_PRICES
    assert [r.reason for r in result.rejects] == [
        "priced row (NVIDIA H100 SXM) outside the on-demand instance tabs, in the tab "
        "'Reserved' of a widget without 'Nx' tabs: no GPU count, not an instance price"]


def test_reserved_plan_in_the_instance_table_is_rejected() -> None:
    capture = _mutated(PAGE_2026, 'data-plan="NVIDIA Tesla V100"',
                       'data-plan="Reserved NVIDIA Tesla V100"', exactly_once=True)
    result = lambdalabs.parse([capture])
    assert len(result.offers) == 4
    assert [r.reason for r in result.rejects] == ["reserved plan in the instance table"]


def test_page_whose_only_table_is_outside_any_panel_is_a_parse_error() -> None:
    # No "Nx" panel at all: nothing on the page is an on-demand instance price.
    capture = _mutated(PAGE_2026, 'role="tabpanel"', 'role="region"', exactly_once=True)
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "pricing table"


# -- the instance-types API ---------------------------------------------------------------------

# The InstanceType field examples of the same OpenAPI spec (name, description, gpu_description,
# price_cents_per_hour, specs): one 8x H100 SXM5 instance, put in place of the placeholder GPU.
SPEC_H100 = {
    "gpu_8x_example": "gpu_8x_h100_sxm5gdr",
    "8x Example GPU (40 GB SXM4)": "8x H100 (80 GB SXM5)",
    EXAMPLE_LABEL: "H100 (80 GB SXM5)",
    '"price_cents_per_hour": 1592': '"price_cents_per_hour": 3592',
    '"vcpus": 124': '"vcpus": 208',
    '"storage_gib": 6144': '"storage_gib": 24780',
}
EXAMPLE_KEY = "gpu_8x_example|us-west-1|on_demand"


def _api(replacements: dict[str, str] | None = None) -> Capture:
    capture = load_capture(SNAP, API_EXAMPLE)
    for old, new in (replacements or {}).items():
        capture = with_replaced(capture, old, new)
    return capture


def _api_doc(doc: object) -> Capture:
    return load_capture(SNAP, API_EXAMPLE).model_copy(
        update={"body": json.dumps(doc).encode()})


def test_api_example_offer_in_full() -> None:
    result = lambdalabs.parse([_api()])
    assert result.rejects == [] and result.complete
    [offer] = result.offers
    assert offer.model_dump() == {
        "provider": "lambda", "offer_key": EXAMPLE_KEY, "instance_type": "gpu_8x_example",
        "gpu_label": EXAMPLE_LABEL, "gpu_count": 8, "vram_gb_per_gpu": 40.0,
        "pricing_model": PricingModel.ON_DEMAND,
        "price_per_hour": 15.92,  # 1592 cents per hour for the whole instance
        "currency": "USD", "price_kind": PriceKind.LISTED, "region": "us-west-1", "zone": None,
        "vcpus": 124.0,
        "ram_gb": 1932.7,  # 1800 GiB
        "disk_gb": 6597.1,  # 6144 GiB
        "interconnect": None, "interconnect_gbps": None, "network": None, "network_gbps": None,
        "billing_increment_s": None, "availability": Availability.IN_STOCK,
        "available_count": None, "source_url": "https://cloud.lambda.ai/api/v1/instance-types",
        "observed_at": datetime(2026, 5, 24, 0, 49, 40, tzinfo=UTC),
        "provider_data": {"layout": "api", "description": "8x Example GPU (40 GB SXM4)",
                          "price_cents_per_hour": 1592, "region_description": "California, USA"},
    }


def test_api_one_offer_per_region_with_capacity() -> None:
    capture = _api({'"description": "California, USA"\n        }':
                    '"description": "California, USA"\n        },\n        '
                    '{"name": "us-east-1", "description": "Virginia, USA"}'})
    offers = _by_key(lambdalabs.parse([capture]).offers)
    assert sorted(offers) == ["gpu_8x_example|us-east-1|on_demand", EXAMPLE_KEY]
    assert {o.region: o.price_per_hour for o in offers.values()} == \
        {"us-west-1": 15.92, "us-east-1": 15.92}


def test_api_type_without_capacity_is_one_out_of_stock_offer() -> None:
    doc = json.loads(_api().body)
    doc["data"]["gpu_8x_example"]["regions_with_capacity_available"] = []
    [offer] = lambdalabs.parse([_api_doc(doc)]).offers
    assert (offer.offer_key, offer.region, offer.availability, offer.price_per_hour) == \
        ("gpu_8x_example|no-capacity|on_demand", None, Availability.OUT_OF_STOCK, 15.92)


def test_api_cpu_type_is_skipped_and_a_type_without_vram_rejected() -> None:
    doc = json.loads(_api().body)
    example = doc["data"]["gpu_8x_example"]
    cpu = json.loads(json.dumps(example))
    cpu["instance_type"].update(name="cpu_example", gpu_description="N/A")
    cpu["instance_type"]["specs"]["gpus"] = 0
    novram = json.loads(json.dumps(example))
    novram["instance_type"].update(name="gpu_1x_novram", gpu_description="Example GPU")
    doc["data"].update(cpu_example=cpu, gpu_1x_novram=novram)
    result = lambdalabs.parse([_api_doc(doc)])
    assert [o.offer_key for o in result.offers] == [EXAMPLE_KEY]
    assert [r.reason for r in result.rejects] == [
        "instance type 'gpu_1x_novram': no '(NN GB' VRAM in gpu_description 'Example GPU'"]


def test_api_renamed_price_field_is_a_parse_error() -> None:
    capture = _api({"price_cents_per_hour": "price_usd_per_hour"})
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "price_cents_per_hour"


def test_api_error_body_is_a_parse_error() -> None:
    capture = _api_doc({"error": {"code": "global/invalid-api-key",
                                  "message": "API key was invalid, expired, or deleted."}})
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "error"
    assert "global/invalid-api-key" in str(err.value)


# -- API and page together ----------------------------------------------------------------------


def test_api_wins_over_the_page_for_the_same_instance() -> None:
    api = _api(SPEC_H100)
    result = lambdalabs.parse([api, load_capture(SNAP, PAGE_2026)])
    prices = _prices(result)
    # The page's 8x H100 SXM ($2.99 x 8) gives way to the API's 8x H100 (80 GB SXM5), although
    # the page capture is not the older one; the page's other machines stay.
    assert H100_8X not in prices
    assert prices == {"gpu_8x_h100_sxm5gdr|us-west-1|on_demand": 35.92,
                      **{k: v for k, v in PAGE_2026_PRICES.items() if k != H100_8X}}
    assert result.rejects == [] and result.complete


def test_api_keeps_page_machines_of_another_form_factor() -> None:
    # 8x H100 PCIe from the API does not speak for the page's 8x H100 SXM.
    api = _api({**SPEC_H100, "H100 (80 GB SXM5)": "H100 (80 GB PCIe)"})
    prices = _prices(lambdalabs.parse([api, load_capture(SNAP, PAGE_2026)]))
    assert prices[H100_8X] == 23.92
    assert prices["gpu_8x_h100_sxm5gdr|us-west-1|on_demand"] == 35.92


def test_unreadable_page_beside_the_api_is_a_reject_and_incomplete() -> None:
    page = _mutated(PAGE_2026, ">8x</button>", ">Eight GPUs</button>")
    result = lambdalabs.parse([_api(), page])
    assert [o.offer_key for o in result.offers] == [EXAMPLE_KEY]
    assert not result.complete
    [reject] = result.rejects
    assert reject.reason.startswith("pricing page unreadable beside the API: ")
    assert "tab label" in reject.reason


# -- fetch ----------------------------------------------------------------------------------------


def _serve(page_status: int = 200) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/api/v1/instance-types":
            return httpx.Response(200, content=(SNAP / API_EXAMPLE).read_bytes())
        return httpx.Response(page_status, content=(SNAP / PAGE_2026).read_bytes())

    return httpx.MockTransport(handler), seen


def test_fetch_without_a_key_reads_only_the_page() -> None:
    transport, seen = _serve()
    with HttpClient("lambda", transport=transport) as client:
        captures = lambdalabs.fetch(client, {})
    assert [str(r.url) for r in seen] == ["https://lambda.ai/pricing"]
    assert len(captures) == 1


def test_fetch_with_a_key_asks_the_api_with_a_bearer_key_then_the_page() -> None:
    transport, seen = _serve()
    with HttpClient("lambda", transport=transport) as client:
        captures = lambdalabs.fetch(client, {"LAMBDA_API_KEY": "secret-key"})
    assert [str(r.url) for r in seen] == ["https://cloud.lambda.ai/api/v1/instance-types",
                                          "https://lambda.ai/pricing"]
    assert seen[0].headers["Authorization"] == "Bearer secret-key"
    assert "Authorization" not in seen[1].headers
    assert [lambdalabs.is_api_capture(c) for c in captures] == [True, False]


def test_fetch_with_a_key_goes_on_without_a_page_that_fails() -> None:
    transport, _ = _serve(page_status=404)
    with HttpClient("lambda", transport=transport) as client:
        captures = lambdalabs.fetch(client, {"LAMBDA_API_KEY": "secret-key"})
        assert len(client.errors) == 1  # noted for the run log
    assert [lambdalabs.is_api_capture(c) for c in captures] == [True]


def test_key_is_declared_as_an_optional_credential() -> None:
    assert lambdalabs.CREDENTIALS == ("LAMBDA_API_KEY",)


def test_offline_replay_with_the_placeholder_key_serves_api_and_page() -> None:
    # How the offline refresh calls fetch(): every declared credential set to the placeholder.
    with HttpClient("lambda", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = lambdalabs.fetch(client, {"LAMBDA_API_KEY": REPLAY_PLACEHOLDER})
    assert [c.body for c in captures] == [(SNAP / API_EXAMPLE).read_bytes(),
                                          (SNAP / PAGE_2026).read_bytes()]
    assert _prices(lambdalabs.parse(captures)) == {EXAMPLE_KEY: 15.92, **PAGE_2026_PRICES}

"""Fault matrix: every fault x every adapter kind, through the real client, adapter and pipeline.

Night 1 loads the bundled snapshots of every provider below (and the control provider); night 2,
a day later, serves the same snapshots with one fault injected into one provider's answers
(`reliability_harness.SnapshotServer`). For every cell:

- the run is partial: the control provider loads cleanly, the faulted one does not;
- the faulted provider's last good data is kept: every offer open before is still open, at the
  same price (the one designed exception: RunPod's API says "not offered" with a price of 0);
- the run log names the cause (`refresh_runs.error`), and the provider is stale when it did not
  load;
- bad rows are quarantined with a reason;
- no offer is closed because it was not read.

Kinds: paginated JSON (Scaleway, Azure), sliced JSON (Vast.ai: one search per GPU name), GraphQL
(RunPod), HTML page (Lambda), bulk CSV (AWS). `unexpected_currency` runs on Azure (paginated)
and OVHcloud (single JSON), whose payloads carry a currency; RunPod's and Lambda's carry none, so
there it is a price written in another currency ("€0.43"). `fails_half_way`: a later page fails
after the earlier ones were read (Scaleway page 2 of 3; Vast.ai's L40S slice after the others;
AWS's spot feed after its price list); a source of one request fails half-way through its body.
A source that goes on without a part it could not read (AWS's region files, Vast.ai's slices)
loads what it read, incomplete, and names the part.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability_harness import (
    NIGHT,
    Fault,
    NoSleepClient,
    SnapshotServer,
    answers,
    copy_db,
    inspect,
    json_edit,
    json_replace,
    open_versions,
    raises,
    rewrites,
    run_night,
    snapshot_fx,
)

# Loads cleanly beside the faulted provider in every cell (Cudo did until it was retired).
CONTROL = "vultr"
PROVIDERS = ("scaleway", "azure", "vastai", "ovhcloud", "runpod", "lambda", "aws")

Transform = Callable[[bytes], bytes]
Predicate = Callable[[httpx.Request], bool]


def _host(host: str) -> Predicate:
    return lambda r: r.url.host == host


def _path_end(suffix: str) -> Predicate:
    return lambda r: r.url.path.endswith(suffix)


# -- per-kind mutations -------------------------------------------------------------------------
# Each kind names the request that carries the edited row (`row_page`), the requests that carry
# every row (`all_pages`), the edited row's offer key, and how to edit its body.


@dataclass
class Kind:
    name: str
    provider: str
    row_page: Predicate
    all_pages: Predicate
    half_way: Fault  # a later request fails after the earlier ones were read
    row_key: str
    set_row_price: Callable[[Callable[[Any], Any]], Transform]  # one row's price
    set_all_prices: Callable[[float], Transform]
    rename_field: Transform
    drop_row_field: Transform
    layout: Transform
    empty: Transform
    duplicate_row: Transform  # the row again, at another price
    garbage: bytes
    other_currency: tuple[str, Fault]  # (provider, fault)
    band_price: float  # a price per GPU within $100/GPU-hour but far outside the row's band
    row_gpus: float = 1  # GPUs the edited row's price is for (Lambda prints per GPU)
    empty_headers: dict[str, str] = field(default_factory=dict)
    empty_pages: Predicate | None = None  # default: all_pages
    duplicate_page: Predicate | None = None  # default: row_page


# Scaleway: paginated JSON, {"servers": {type: record}}, pages ?page=N with X-Total-Count.
SCW_ROW = "H100-1-80G"


def _scw_servers(page: str) -> Predicate:
    return lambda r: (r.url.path.endswith("/products/servers")
                      and r.url.params.get("page") == page)


def _scw_edit(edit: Callable[[dict[str, Any]], None]) -> Transform:
    return json_edit(lambda doc: edit(doc["servers"]))


def _scw_gpu_records(servers: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in servers.values() if v.get("gpu")]


def _scw_row_price(fn: Callable[[Any], Any]) -> Transform:
    def edit(servers: dict[str, Any]) -> None:
        servers[SCW_ROW]["hourly_price"] = fn(servers[SCW_ROW]["hourly_price"])
    return _scw_edit(edit)


def _scw_all_prices(factor: float) -> Transform:
    def edit(servers: dict[str, Any]) -> None:
        for v in _scw_gpu_records(servers):
            v["hourly_price"] = v["hourly_price"] * factor
    return _scw_edit(edit)


def _scw_rename(servers: dict[str, Any]) -> None:
    for v in servers.values():
        v["price_hourly"] = v.pop("hourly_price", None)


def _scw_duplicate(servers: dict[str, Any]) -> None:
    # A list that shifts while it is paged shows a type on two pages: here page 2 repeats
    # H100-1-80G (a page 1 type) at another price.
    with open(SNAPSHOT_PAGE_1, encoding="utf-8") as f:
        record = json.load(f)["servers"][SCW_ROW]
    servers[SCW_ROW] = {**record, "hourly_price": 1.9}


SNAPSHOT_PAGE_1 = (Path(__file__).resolve().parents[2] / "adapters" / "snapshots" / "scaleway"
                   / "instance_v1_products_servers_fr-par-2_page1_2026-07-30.json")


SCALEWAY = Kind(
    name="paginated_json", provider="scaleway",
    row_page=_scw_servers("1"),
    all_pages=lambda r: r.url.path.endswith("/products/servers"),
    half_way=Fault(_scw_servers("2"), answers(503)),
    row_key=f"fr-par-2|{SCW_ROW}|on_demand",
    set_row_price=_scw_row_price, set_all_prices=_scw_all_prices,
    rename_field=_scw_edit(_scw_rename),
    drop_row_field=_scw_edit(lambda s: s[SCW_ROW].pop("hourly_price")),
    layout=json_replace(lambda doc: {"servers": list(doc["servers"].values())}),
    empty=json_replace(lambda doc: {"servers": {}}),
    empty_headers={"x-total-count": "0"},
    duplicate_row=_scw_edit(_scw_duplicate),
    duplicate_page=_scw_servers("2"),
    garbage=b'{"servers": {"H100-1-80G": {"gpu": 1, "hourly_pr',
    other_currency=("azure", Fault(_host("prices.azure.com"), rewrites(
        json_edit(lambda doc: doc.update(BillingCurrency="XYZ"))))),
    band_price=60.0,
)


# Vast.ai: sliced JSON, one search per GPU name (`?q=` in the URL), {"offers": [...]} each,
# aggregated per GPU shape. The edited row is the one ask of its shape (A100 SXM4 40 GB, 1 GPU),
# on the A100 SXM4 slice's page; a fault of one slice leaves the others read.
VAST_ROW_MIB = 39936


def _vast_slice(name: str) -> Predicate:
    return lambda r: (r.url.host == "console.vast.ai"
                      and json.loads(r.url.params.get("q", "{}")).get("gpu_name") == {"eq": name})


def _vast_edit(edit: Callable[[list[dict[str, Any]]], None]) -> Transform:
    return json_edit(lambda doc: edit(doc["offers"]))


def _vast_row(asks: list[dict[str, Any]]) -> dict[str, Any]:
    return next(a for a in asks if (a["gpu_ram"], a["num_gpus"]) == (VAST_ROW_MIB, 1))


def _vast_row_price(fn: Callable[[Any], Any]) -> Transform:
    def edit(asks: list[dict[str, Any]]) -> None:
        row = _vast_row(asks)
        row["dph_total"] = fn(row["dph_total"])
    return _vast_edit(edit)


def _vast_all_prices(factor: float) -> Transform:
    def edit(asks: list[dict[str, Any]]) -> None:
        for a in asks:
            a["dph_total"] *= factor
    return _vast_edit(edit)


def _vast_duplicate(asks: list[dict[str, Any]]) -> None:
    # Live asks carry an id: the same ask twice, the second time at another price.
    for i, a in enumerate(asks):
        a["id"] = 1000 + i
    asks.append({**_vast_row(asks), "dph_total": 0.31})


def _vast_rename(asks: list[dict[str, Any]]) -> None:
    for a in asks:
        a["dph"] = a.pop("dph_total")


VASTAI = Kind(
    name="sliced_json", provider="vastai",
    row_page=_vast_slice("A100 SXM4"), all_pages=_host("console.vast.ai"),
    half_way=Fault(_vast_slice("L40S"), raises(lambda r: httpx.RemoteProtocolError(
        "peer closed connection without sending complete message body "
        "(received 4096 bytes, expected 9958)"))),
    row_key="A100 SXM4|1x|39GB|*|on_demand",
    set_row_price=_vast_row_price, set_all_prices=_vast_all_prices,
    rename_field=_vast_edit(_vast_rename),
    drop_row_field=_vast_edit(lambda asks: _vast_row(asks).pop("dph_total")),
    layout=json_replace(lambda doc: {"data": doc}),
    empty=json_replace(lambda doc: {"offers": []}),
    duplicate_row=_vast_edit(_vast_duplicate),
    garbage=b"<html><body><h1>502 Bad Gateway</h1></body></html>",
    other_currency=("ovhcloud", Fault(_host("api.us.ovhcloud.com"), rewrites(json_edit(
        lambda doc: doc["locale"].update(currencyCode="XYZ"))))),
    band_price=60.0,
)


# RunPod: GraphQL, data.gpuTypes in its envelope, per-cloud price fields.
RUNPOD_ROW = "NVIDIA L40S"


def _rp_types(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["data"]["gpuTypes"]


def _rp_entry(doc: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in _rp_types(doc) if e["id"] == RUNPOD_ROW)


def _rp_row_price(fn: Callable[[Any], Any]) -> Transform:
    def edit(doc: dict[str, Any]) -> None:
        entry = _rp_entry(doc)
        entry["securePrice"] = fn(entry["securePrice"])
    return json_edit(edit)


def _rp_all_prices(factor: float) -> Transform:
    def edit(doc: dict[str, Any]) -> None:
        for e in _rp_types(doc):
            for f in ("securePrice", "communityPrice", "secureSpotPrice", "communitySpotPrice"):
                if isinstance(e.get(f), int | float):
                    e[f] *= factor
    return json_edit(edit)


def _rp_rename(doc: dict[str, Any]) -> None:
    # One field renamed upstream; the other price fields are still there.
    for e in _rp_types(doc):
        e["secure_price"] = e.pop("securePrice", None)


def _rp_duplicate(doc: dict[str, Any]) -> None:
    _rp_types(doc).append({**_rp_entry(doc), "securePrice": 0.21})


RUNPOD = Kind(
    name="graphql", provider="runpod",
    row_page=_host("api.runpod.io"), all_pages=_host("api.runpod.io"),
    half_way=Fault(_host("api.runpod.io"), raises(lambda r: httpx.RemoteProtocolError(
        "peer closed connection without sending complete message body "
        "(incomplete chunked read)"))),
    row_key=f"{RUNPOD_ROW}|secure|on_demand",
    set_row_price=_rp_row_price, set_all_prices=_rp_all_prices,
    rename_field=json_edit(_rp_rename),
    drop_row_field=json_edit(lambda doc: _rp_entry(doc).pop("securePrice")),
    layout=json_replace(lambda doc: {"data": {"gpu_types": _rp_types(doc)}}),
    empty=json_replace(lambda doc: {"data": {"gpuTypes": []}}),
    duplicate_row=json_edit(_rp_duplicate),
    garbage=b'{"data": {"gpuTypes": [{"id": "NVIDIA L4", "securePri',
    other_currency=("runpod", Fault(_host("api.runpod.io"), rewrites(
        _rp_row_price(lambda p: f"\u20ac{p}")))),
    band_price=60.0,
)


# Lambda: an HTML pricing page, rows tr[data-plan] with td[data-label] cells.
LAMBDA_ROW = "NVIDIA H100 SXM"
_LAMBDA_PRICE = re.compile(r'(data-label="PRICE/GPU/HR\*">)\$([\d.,]+)(<)')


def _lambda_row(body: bytes) -> tuple[str, int, int]:
    text = body.decode()
    start = text.index(f'<tr class="_pricingRow_z1nfw_36" data-plan="{LAMBDA_ROW}">')
    return text, start, text.index("</tr>", start) + len("</tr>")


def _lambda_row_edit(edit: Callable[[str], str]) -> Transform:
    def transform(body: bytes) -> bytes:
        text, a, b = _lambda_row(body)
        return (text[:a] + edit(text[a:b]) + text[b:]).encode()
    return transform


def _lambda_row_price(fn: Callable[[Any], Any]) -> Transform:
    def money(value: float) -> str:
        return f"-${-value:.2f}" if value < 0 else f"${value:.2f}"

    def edit(row: str) -> str:
        return _LAMBDA_PRICE.sub(lambda m: m[1] + money(fn(float(m[2]))) + m[3], row)
    return _lambda_row_edit(edit)


def _lambda_all_prices(factor: float) -> Transform:
    def transform(body: bytes) -> bytes:
        return _LAMBDA_PRICE.sub(lambda m: f"{m[1]}${float(m[2]) * factor:.2f}{m[3]}",
                                 body.decode()).encode()
    return transform


def _lambda_duplicate(body: bytes) -> bytes:
    text, a, b = _lambda_row(body)
    twin = text[a:b].replace("$2.99", "$2.49")
    return (text[:b] + twin + text[b:]).encode()


LAMBDA = Kind(
    name="html_page", provider="lambda",
    row_page=_host("lambda.ai"), all_pages=_host("lambda.ai"),
    half_way=Fault(_host("lambda.ai"), raises(lambda r: httpx.RemoteProtocolError(
        "peer closed connection without sending complete message body "
        "(received 1500 bytes, expected 3488)"))),
    row_key=f"8x|{LAMBDA_ROW}|80GB|on_demand",
    set_row_price=_lambda_row_price, set_all_prices=_lambda_all_prices,
    rename_field=lambda body: body.replace(b'data-label="PRICE/GPU/HR*"',
                                           b'data-label="COST/GPU/HR*"'),
    drop_row_field=_lambda_row_edit(lambda row: re.sub(
        r'<td data-label="PRICE/GPU/HR\*">[^<]*</td>', "", row)),
    # the header rows go: no table says what its columns are (a page that only drops the
    # data-plan attributes is still read, by the first cell)
    layout=lambda body: re.sub(rb"<thead>.*?</thead>", b"", body, flags=re.S),
    empty=lambda body: re.sub(rb"<tbody>.*</tbody>", b"<tbody></tbody>", body, flags=re.S),
    duplicate_row=_lambda_duplicate,
    garbage=b"<html><head><title>Just a moment...</title></head><body>Checking your browser"
            b"</body></html>",
    other_currency=("lambda", Fault(_host("lambda.ai"), rewrites(_lambda_row_edit(
        lambda row: row.replace("$2.99", "\u20ac2.99"))))),
    band_price=60.0,
)


# AWS: the bulk price list, a CSV offer file per region, then the spot feeds.
AWS_CSV = "/index.csv"
_AWS_ROW = re.compile(r'^"H7NGEAC6UEHNTKSJ",.*$', re.M)  # p4d.24xlarge, Linux, on-demand


def _aws_row_edit(edit: Callable[[list[str]], list[str]]) -> Transform:
    def transform(body: bytes) -> bytes:
        import csv
        import io

        text = body.decode()
        line = _AWS_ROW.search(text)
        assert line is not None
        cells = next(csv.reader([line[0]]))
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="").writerow(edit(cells))
        return (text[:line.start()] + out.getvalue() + text[line.end():]).encode()
    return transform


_AWS_PRICE, _AWS_CURRENCY = 9, 10  # PricePerUnit, Currency columns


def _aws_cell(i: int, fn: Callable[[str], str]) -> Transform:
    return _aws_row_edit(lambda cells: [*cells[:i], fn(cells[i]), *cells[i + 1:]])


def _aws_row_price(fn: Callable[[Any], Any]) -> Transform:
    return _aws_cell(_AWS_PRICE, lambda v: f"{fn(float(v)):.10f}")


def _aws_all_prices(factor: float) -> Transform:
    # The CSV's on-demand prices and the spot feed's quotes alike.
    def transform(body: bytes) -> bytes:
        text = body.decode()
        text = re.sub(r'("USD":\s*")([\d.]+)(")',
                      lambda m: f"{m[1]}{float(m[2]) * factor:.4f}{m[3]}", text)
        return _aws_cell(_AWS_PRICE, lambda v: f"{float(v) * factor:.10f}")(text.encode()) \
            if _AWS_ROW.search(text) else text.encode()
    return transform


def _aws_duplicate(body: bytes) -> bytes:
    text = body.decode()
    line = _AWS_ROW.search(text)
    assert line is not None
    twin = line[0].replace('"32.7726000000"', '"20.1000000000"')
    return (text[:line.end()] + "\n" + twin + text[line.end():]).encode()


def _aws_header_only(body: bytes) -> bytes:
    lines = body.decode().splitlines(keepends=True)
    head = next(i for i, line in enumerate(lines) if line.startswith('"SKU"'))
    return "".join(lines[:head + 1]).encode()


AWS = Kind(
    name="bulk_csv", provider="aws",
    row_page=_path_end(AWS_CSV),
    all_pages=lambda r: r.url.path.endswith((AWS_CSV, "/spot.json")),
    half_way=Fault(_path_end("/spot.json"), answers(503)),
    row_key="us-east-1|p4d.24xlarge|on_demand",
    set_row_price=_aws_row_price, set_all_prices=_aws_all_prices,
    rename_field=lambda body: body.replace(b'"PricePerUnit"', b'"Price Per Unit"', 1),
    drop_row_field=_aws_cell(_AWS_PRICE, lambda v: ""),
    layout=lambda body: body.replace(b'"SKU","OfferTermCode"', b'"sku","offer_term_code"', 1),
    empty=_aws_header_only,
    empty_pages=_path_end(AWS_CSV),
    duplicate_row=_aws_duplicate,
    garbage=b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
            b"<Message>Access Denied</Message></Error>",
    other_currency=("aws", Fault(_path_end(AWS_CSV), rewrites(_aws_cell(
        _AWS_CURRENCY, lambda v: "XYZ")))),
    band_price=90.0, row_gpus=8,
)

KINDS = {k.name: k for k in (SCALEWAY, VASTAI, RUNPOD, LAMBDA, AWS)}


# -- the faults ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    status: str  # failed | refused | ok (loaded, something held back or not read)
    cause: str  # regex the run log's error matches
    quarantine: str | None = None  # regex some quarantined reason of this run matches
    closes: frozenset[str] = frozenset()  # offers the provider says are gone (designed)


def _reset(r: httpx.Request) -> Exception:
    return httpx.ReadError("[Errno 104] Connection reset by peer")


def _timeout(r: httpx.Request) -> Exception:
    return httpx.ReadTimeout("The read operation timed out")


def _truncated(r: httpx.Request) -> Exception:
    return httpx.RemoteProtocolError("peer closed connection without sending complete message "
                                     "body (received 2048 bytes, expected 16384)")


FAULTS: dict[str, Callable[[Kind], tuple[str, Fault]]] = {
    "timeout": lambda k: (k.provider, Fault(k.row_page, raises(_timeout))),
    "connection_reset": lambda k: (k.provider, Fault(k.row_page, raises(_reset))),
    "rate_limited_429": lambda k: (k.provider, Fault(k.row_page, answers(
        429, {"Retry-After": "7"}, b'{"error": "rate limited"}'))),
    "server_error_5xx": lambda k: (k.provider, Fault(k.row_page, answers(
        503, {}, b"<html><body>Service Unavailable</body></html>"))),
    "truncated_body": lambda k: (k.provider, Fault(k.row_page, raises(_truncated))),
    "invalid_body": lambda k: (k.provider, Fault(k.row_page, answers(
        200, {"content-type": "text/html"}, k.garbage))),
    "renamed_field": lambda k: (k.provider, Fault(k.all_pages, rewrites(k.rename_field))),
    "missing_field": lambda k: (k.provider, Fault(k.row_page, rewrites(k.drop_row_field))),
    "changed_layout": lambda k: (k.provider, Fault(k.all_pages, rewrites(k.layout))),
    "empty_result": lambda k: (k.provider, Fault(k.empty_pages or k.all_pages, _with_headers(
        rewrites(k.empty), k.empty_headers))),
    "fails_half_way": lambda k: (k.provider, k.half_way),
    "price_zero": lambda k: (k.provider, Fault(k.row_page, rewrites(
        k.set_row_price(lambda p: 0)))),
    "price_negative": lambda k: (k.provider, Fault(k.row_page, rewrites(
        k.set_row_price(lambda p: -p)))),
    "price_1000x": lambda k: (k.provider, Fault(k.row_page, rewrites(
        k.set_row_price(lambda p: p * 1000)))),
    "price_out_of_band": lambda k: (k.provider, Fault(k.row_page, rewrites(
        k.set_row_price(lambda p: k.band_price * k.row_gpus)))),
    "prices_jump_40x": lambda k: (k.provider, Fault(k.all_pages, rewrites(
        k.set_all_prices(40.0)))),
    "duplicate_rows": lambda k: (k.provider, Fault(k.duplicate_page or k.row_page,
                                                   rewrites(k.duplicate_row))),
    "unexpected_currency": lambda k: k.other_currency,
}


def _with_headers(action: Any, headers: dict[str, str]) -> Any:
    if not headers:
        return action

    def act(request: httpx.Request, recorded: Callable[[], httpx.Response]) -> httpx.Response:
        r = action(request, recorded)
        return httpx.Response(r.status_code, headers={**r.headers, **headers},
                              content=r.content, request=request, extensions=r.extensions)
    return act


_FAILED_FETCH = r"after 4 attempts"
_HELD = r"held back \d+ rows?"
_KEPT = r"kept open 1 offer whose"
_INCOMPLETE = r"incomplete"

# What the provider's refresh does with each fault, per kind (status, cause in the run log,
# quarantined reason). The invariants in `test_fault` hold for every cell.
EXPECT: dict[tuple[str, str], Expect] = {}


def _expect(fault: str, **by_kind: Expect) -> None:
    for kind, e in by_kind.items():
        EXPECT[(kind, fault)] = e


_all = ("paginated_json", "sliced_json", "graphql", "html_page")
for _f, _cause in (("timeout", "ReadTimeout"), ("connection_reset", "ReadError"),
                   ("rate_limited_429", "HTTP 429"), ("server_error_5xx", "HTTP 503"),
                   ("truncated_body", "RemoteProtocolError")):
    _expect(_f, **{k: Expect("failed", f"{_cause}.*{_FAILED_FETCH}|{_cause}")
                   for k in _all if k != "sliced_json"},
            # AWS goes on without a region file it cannot read, Vast.ai without a slice:
            # loaded, incomplete, named.
            sliced_json=Expect("ok", f"{_INCOMPLETE}.*{_cause}"),
            bulk_csv=Expect("ok", f"{_INCOMPLETE}.*{_cause}"))
_expect("invalid_body",
        paginated_json=Expect("failed", "not JSON"), sliced_json=Expect("failed", "not JSON"),
        graphql=Expect("failed", "not JSON"), html_page=Expect("failed", "no pricing table"),
        bulk_csv=Expect("failed", "no header row starting with SKU"))
_expect("renamed_field",
        paginated_json=Expect("failed", "no Instance type has 'hourly_price'"),
        sliced_json=Expect("failed", "no offer has 'dph_total'"),
        graphql=Expect("failed", "securePrice"),
        html_page=Expect("failed", "no 'PRICE/GPU/HR' column"),
        bulk_csv=Expect("failed", "no 'PricePerUnit' column"))
_expect("missing_field",
        paginated_json=Expect("ok", _KEPT, "hourly_price is not a price"),
        sliced_json=Expect("ok", _INCOMPLETE, "dph_total is not a positive price"),
        graphql=Expect("ok", _KEPT, "securePrice"),
        html_page=Expect("ok", _INCOMPLETE, "cells under the header"),
        bulk_csv=Expect("ok", _KEPT, "no positive hourly price"))
_expect("changed_layout",
        paginated_json=Expect("failed", "expected"), sliced_json=Expect("failed", "expected"),
        graphql=Expect("failed", "expected data.gpuTypes"),
        html_page=Expect("failed", "no on-demand instance table"),
        bulk_csv=Expect("failed", "no header row starting with SKU"))
_expect("empty_result",
        paginated_json=Expect("refused", "no offers"), sliced_json=Expect("refused", "no offers"),
        graphql=Expect("refused", "no offers"),
        html_page=Expect("failed", "no pricing table rows"),
        bulk_csv=Expect("ok", _INCOMPLETE))
_expect("fails_half_way",
        paginated_json=Expect("failed", "HTTP 503 after 4 attempts"),
        sliced_json=Expect("ok", f"{_INCOMPLETE}.*RemoteProtocolError"),
        graphql=Expect("failed", "RemoteProtocolError"),
        html_page=Expect("failed", "RemoteProtocolError"),
        # Without the spot feed, AWS has its one on-demand offer left: a collapse, drift.
        bulk_csv=Expect("drift", "collapsed.*not read.*HTTP 503"))
_expect("price_zero",
        paginated_json=Expect("ok", _KEPT, "hourly_price is not a price: 0"),
        sliced_json=Expect("ok", _INCOMPLETE, "dph_total is not a positive price: 0"),
        # RunPod's API says "not offered in this tier" with a price of 0 (PROVENANCE.md): the
        # offer is read as withdrawn and closed, like any offer that is gone.
        graphql=Expect("ok", "", closes=frozenset({f"{RUNPOD_ROW}|secure|on_demand"})),
        html_page=Expect("ok", _KEPT, "invalid offer"),
        bulk_csv=Expect("ok", _KEPT, "no positive hourly price"))
_expect("price_negative",
        paginated_json=Expect("ok", _KEPT, "hourly_price is not a price: -"),
        sliced_json=Expect("ok", _INCOMPLETE, "dph_total is not a positive price: -"),
        graphql=Expect("ok", _KEPT, "securePrice is not a price: -"),
        html_page=Expect("ok", _INCOMPLETE, "unrecognised price '-\\$"),
        bulk_csv=Expect("ok", _KEPT, "no positive hourly price"))
for _k in (*_all, "bulk_csv"):
    _expect("price_1000x", **{_k: Expect("ok", f"{_HELD}.*absurd price", "absurd price")})
    _expect("price_out_of_band", **{_k: Expect("ok", f"{_HELD}.*price out of band",
                                               "price out of band")})
    _expect("prices_jump_40x", **{_k: Expect("refused", "prices jumped", "refused: prices")})
_expect("duplicate_rows",
        paginated_json=Expect("ok", _KEPT, "two different"),
        sliced_json=Expect("ok", _KEPT, "two different"),
        graphql=Expect("ok", _KEPT, "two different"),
        html_page=Expect("ok", _KEPT, "two different"),
        bulk_csv=Expect("ok", _KEPT, "two different prices"))
_expect("unexpected_currency",
        paginated_json=Expect("refused", "no offers", "no USD rate for currency XYZ"),
        sliced_json=Expect("ok", _HELD, "no USD rate for currency XYZ"),
        graphql=Expect("ok", _KEPT, "securePrice is not a price"),
        html_page=Expect("ok", _INCOMPLETE, "unrecognised price"),
        bulk_csv=Expect("ok", _HELD, "no USD rate for currency XYZ"))

CELLS = [pytest.param(kind, fault, id=f"{fault}-{kind}") for fault in FAULTS for kind in KINDS]


# -- the test -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fx() -> dict[str, float]:
    return snapshot_fx()


@pytest.fixture(scope="module")
def night_one(tmp_path_factory: pytest.TempPathFactory, fx: dict[str, float]) -> Path:
    """Every provider's last good state: the snapshots, loaded cleanly once."""
    db = tmp_path_factory.mktemp("faults") / "night1.duckdb"
    report = run_night(db, [*PROVIDERS, CONTROL], SnapshotServer(), fx)
    assert report.status == "ok", [(r.provider, r.status, r.error) for r in report.providers]
    return db


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    NoSleepClient.waits = []
    monkeypatch.setattr("gpuscout.pipeline.refresh.HttpClient", NoSleepClient)


def test_a_night_without_faults_changes_nothing(night_one: Path, tmp_path: Path,
                                                fx: dict[str, float]) -> None:
    db = copy_db(night_one, tmp_path / "w.duckdb")
    before = {p: open_versions(db, p) for p in PROVIDERS}
    report = run_night(db, [*PROVIDERS, CONTROL], SnapshotServer(shift=NIGHT), fx)
    assert report.status == "ok"
    assert all(r.changed_offers == r.new_offers == r.closed_offers == 0
               for r in report.providers)
    assert {p: open_versions(db, p) for p in PROVIDERS} == before


@pytest.fixture(scope="module")
def last_good(night_one: Path) -> dict[str, dict[str, tuple]]:
    return {p: open_versions(night_one, p) for p in PROVIDERS}


@pytest.mark.parametrize(("kind", "fault"), CELLS)
def test_fault(kind: str, fault: str, night_one: Path, last_good: dict[str, dict[str, tuple]],
               tmp_path: Path, fx: dict[str, float]) -> None:
    k = KINDS[kind]
    provider, injected = FAULTS[fault](k)
    expect = EXPECT[(kind, fault)]
    db = copy_db(night_one, tmp_path / "w.duckdb")
    before = last_good[provider]
    server = SnapshotServer(shift=NIGHT, fault=injected)

    report = run_night(db, [provider, CONTROL], server, fx)

    assert injected.hits, "the fault never fired"
    records = {r.provider: r for r in report.providers}
    rec, control = records[provider], records[CONTROL]
    # The run is partial: the control provider loaded, the faulted one did not load cleanly
    # (except where the provider's own format says an offer is gone: nothing is wrong then).
    assert report.status == ("ok" if expect.closes else "partial")
    assert (control.status, control.error) == ("ok", None)
    assert rec.status == expect.status, rec.error
    # The run log names the cause.
    if expect.cause:
        assert rec.error and re.search(expect.cause, rec.error), rec.error
    state = inspect(db, provider, report.run_id)
    # The provider's last good data is kept: every offer open before is open now at the same
    # price; nothing was closed because it was not read.
    gone = set(before) - set(state.open)
    assert gone == set(expect.closes), f"closed: {sorted(gone)}"
    changed = {key for key in before
               if key in state.open and state.open[key][:3] != before[key][:3]}
    assert not changed, f"prices changed: {sorted(changed)}"
    if rec.status != "ok":
        assert rec.closed_offers == 0 and rec.offers_loaded == 0
        assert state.stale == {True}  # current_offers say it is the last good data
    else:
        assert rec.closed_offers == len(expect.closes)
        assert state.stale == {False}
    # Bad rows are quarantined with a reason.
    assert len(state.reasons) == rec.quarantined
    if expect.quarantine:
        assert any(re.search(expect.quarantine, r) for r in state.reasons), state.reasons
    # No absurd price is current, whatever arrived.
    assert not state.absurd
    if fault == "rate_limited_429":
        assert 7.0 in NoSleepClient.waits  # the Retry-After was honoured

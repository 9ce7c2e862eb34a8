"""Regressions for what the parser fuzzing found: each input below crashed a parser (or the
normalizer) with an untyped exception, or let an impossible value through, before its fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError
from test_fuzz_parsers import CAPTURES, check

from gpuscout.adapters.archive import Capture
from gpuscout.core.catalog import load_catalog
from gpuscout.core.models import ParsedOffer, PricingModel
from gpuscout.pipeline.normalize import normalize


def _edited(provider: str, url_part: str, edit: Callable[[Any], object]) -> list[Capture]:
    """The provider's bundled captures, the JSON one whose URL holds `url_part` edited."""
    out = []
    for cap in CAPTURES[provider]:
        if url_part in cap.url:
            doc = json.loads(cap.body)
            edit(doc)
            cap = cap.model_copy(update={"body": json.dumps(doc).encode()})
        out.append(cap)
    assert out != CAPTURES[provider], f"no {provider} capture at {url_part}"
    return out


def _vast_asks(doc: Any) -> list[dict[str, Any]]:
    """The asks of a Vast.ai page: {"offers": [...]}, or a bare list (the 4-field recording)."""
    return doc["offers"] if isinstance(doc, dict) else doc


def _sizes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every size of the spot feed (most are not GPU machines: only those reach the prices)."""
    return [s for r in doc["config"]["regions"] for g in r["instanceTypes"] for s in g["sizes"]]


CASES: dict[str, tuple[str, str, Callable[[Any], object]]] = {
    # vastai: VRAM of NaN or infinity reached round() (ValueError / OverflowError)
    "vastai gpu_ram infinite": ("vastai", "vast.ai",
                                lambda d: _vast_asks(d)[0].update(gpu_ram=float("inf"))),
    "vastai gpu_ram NaN": ("vastai", "vast.ai",
                           lambda d: _vast_asks(d)[0].update(gpu_ram=float("nan"))),
    # aws spot feed: fields of the wrong type reached .get(), hashing and the alias table
    "aws spot valueColumns not objects": (
        "aws", "spot.json", lambda d: [s.update(valueColumns=[1.5, None]) for s in _sizes(d)]),
    "aws spot column name an object": ("aws", "spot.json", lambda d: [
        vc.update(name={"a": 1}) for s in _sizes(d) for vc in s["valueColumns"]]),
    "aws spot size name an object": (
        "aws", "spot.json", lambda d: _sizes(d)[0].update(size={"a": None})),
    "aws spot config a list": ("aws", "spot.json", lambda d: d.update(config=[1])),
    "aws spot instanceTypes a number": (
        "aws", "spot.json", lambda d: d["config"]["regions"][0].update(instanceTypes=3)),
    # aws spot: a currency key that is no currency code reached ParsedOffer unguarded
    "aws spot currency renamed": ("aws", "spot.json", lambda d: [
        vc.update(prices={"USD_renamed": p}) for r in d["config"]["regions"]
        for g in r["instanceTypes"] for s in g["sizes"] for vc in s["valueColumns"]
        for p in vc["prices"].values()]),
    # gcp: pricingInfo / tieredRates / unitPrice of the wrong type; units of infinity
    "gcp pricingExpression a string": ("gcp", "cloudbilling", lambda d: [
        i.update(pricingExpression="x") for s in d["skus"] for i in s["pricingInfo"]]),
    "gcp tieredRates a number": ("gcp", "cloudbilling", lambda d: [
        i["pricingExpression"].update(tieredRates=1.5) for s in d["skus"]
        for i in s["pricingInfo"]]),
    "gcp unitPrice a string": ("gcp", "cloudbilling", lambda d: [
        r.update(unitPrice="free") for s in d["skus"] for i in s["pricingInfo"]
        for r in i["pricingExpression"]["tieredRates"]]),
    "gcp units infinite": ("gcp", "cloudbilling", lambda d: [
        r["unitPrice"].update(units=float("inf")) for s in d["skus"] for i in s["pricingInfo"]
        for r in i["pricingExpression"]["tieredRates"]]),
    # oci: lists of the wrong type; a product without a partNumber
    "oci localizations a number": ("oci", "products", lambda d: [
        i.update(currencyCodeLocalizations=1.5) for i in d["items"]]),
    "oci prices a number": ("oci", "products", lambda d: [
        loc.update(prices=3) for i in d["items"] for loc in i["currencyCodeLocalizations"]]),
    "oci shape products a number": ("oci", "shapes", lambda d: [
        s.update(products=2.5) for s in d["items"]]),
    # oci: the GPU part of a shape and its price item both without a partNumber
    "oci part without partNumber": ("oci", "", lambda d: [
        p.pop("partNumber") for i in d["items"] for p in [i, *i.get("products", [])]
        if p.get("partNumber") == "B98415"]),
    # cudo: a vCPU-per-GiB ratio so large that no whole GiB fits divided by zero
    "cudo memory ratio huge": ("cudo", "cudo", lambda d: [
        e.update(maxVcpuPerMemoryGib=1e12, minMemoryGib=0) for e in d]),
    "cudo vcpus infinite": ("cudo", "cudo", lambda d: [
        e.update(minVcpuPerGpu=float("inf")) for e in d]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mutation_found_by_fuzzing_is_read_or_refused(case: str) -> None:
    provider, url_part, edit = CASES[case]
    check(provider, _edited(provider, url_part, edit))


def test_a_price_that_overflows_in_usd_is_quarantined_not_a_crash() -> None:
    # 1.7e308 EUR is a finite float; in USD it is infinity, which the Offer refused with an
    # untyped ValidationError that failed the whole provider.
    offer = ParsedOffer(provider="vultr", offer_key="k", gpu_label="NVIDIA H100", gpu_count=1,
                        pricing_model=PricingModel.ON_DEMAND, price_per_hour=1.7e308,
                        currency="EUR", source_url="https://example.test",
                        observed_at=datetime(2026, 1, 1, tzinfo=UTC))
    out = normalize([offer], load_catalog(), {"USD": 1.0, "EUR": 1.17})
    assert not out.offers and out.rejects[0].reason.startswith("absurd price")


@pytest.mark.parametrize("field", [{"price_per_hour": float("inf")},
                                   {"price_per_hour": float("nan")},
                                   {"gpu_count": float("inf")}, {"gpu_count": 1e9},
                                   {"vram_gb_per_gpu": 1e12}, {"vram_gb_per_gpu": float("nan")}],
                         ids=lambda f: "=".join(map(str, next(iter(f.items())))))
def test_an_offer_with_an_impossible_value_does_not_exist(field: dict[str, float]) -> None:
    base = dict(provider="x", offer_key="k", gpu_label="H100", gpu_count=1,
                pricing_model=PricingModel.SPOT, price_per_hour=1.0, source_url="u",
                observed_at=datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(ValidationError):
        ParsedOffer(**{**base, **field})


def test_aws_offer_file_broken_inside_a_line_is_read_or_refused() -> None:
    # A bare carriage return inside an unquoted field made csv raise csv.Error mid-file.
    caps = [c if not c.url.endswith(".csv") else c.model_copy(update={
        "body": c.body.replace(b'"Hrs","32.7726000000"', b'"Hrs",3\r2.7726000000"')})
        for c in CAPTURES["aws"]]
    check("aws", caps)

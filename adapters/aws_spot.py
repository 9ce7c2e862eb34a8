"""AWS EC2 spot prices: the feed behind aws.amazon.com/ec2/spot/pricing (`spot.json`).

The feed lists, per region and instance group, each size's current Linux spot price: a market
quote (`price_kind` observed), one offer per region and GPU size. The GPU count comes from the
alias table as for the on-demand rows; vCPUs, RAM and disk, which the feed does not give, from
the offer files (`aws_offers.Specs`), and the interruption band and savings from Spot Advisor
(`aws_advisor.py`) when it was read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.aws_advisor import Advisor
from gpuscout.adapters.aws_offers import NAME, Collector, Specs, alias_count, network_of
from gpuscout.adapters.toolkit import SNIPPET_CHARS, json_body, parse_error, positive_decimal
from gpuscout.core.models import ParsedOffer, PriceKind, PricingModel


def _spot_document(capture: Capture) -> dict[str, Any]:
    doc = json_body(NAME, capture)
    if not isinstance(doc, dict):
        raise parse_error(NAME, capture, "spot price feed is not an object")
    return doc


def read_spot_feed(capture: Capture, advisor: Advisor | None, specs: Mapping[str, Specs],
                   out: Collector) -> None:
    doc = _spot_document(capture)
    config = doc.get("config")
    regions = config.get("regions") if isinstance(config, dict) else None
    if not isinstance(regions, list):
        raise parse_error(NAME, capture, "no config.regions in the spot price feed",
                          "config.regions", snippet=json.dumps(doc)[:SNIPPET_CHARS])
    for region in regions:
        code = _field(region, "region", capture)
        for group in _list_field(region, "instanceTypes", capture):
            gpu_group = "gpu" in str(_field(group, "type", capture)).lower()
            for size in _list_field(group, "sizes", capture):
                _spot_size(size, code, gpu_group, capture, advisor, specs, out)


def _spot_size(size: Any, region: str, gpu_group: bool, capture: Capture,
               advisor: Advisor | None, specs: Mapping[str, Specs], out: Collector) -> None:
    itype = _field(size, "size", capture)
    if not isinstance(itype, str):
        raise parse_error(NAME, capture, "spot size whose name is not a string", "size",
                          snippet=json.dumps(size)[:SNIPPET_CHARS])
    count = alias_count(itype)
    raw = json.dumps({"region": region, **size})
    key = f"{region}|{itype}|spot"
    if count is None:
        if gpu_group:  # an accelerator AWS lists with its GPU machines, but no alias: say so
            out.reject(f"{itype}: no alias row, so no GPU model or count", raw, key)
        return
    columns = _field(size, "valueColumns", capture)
    if not isinstance(columns, list):
        raise parse_error(NAME, capture, "spot size whose valueColumns is not a list",
                          "valueColumns", snippet=raw[:SNIPPET_CHARS])
    prices = {vc.get("name"): vc.get("prices", {}) for vc in columns
              if isinstance(vc, dict) and isinstance(vc.get("name"), str)}
    if "linux" not in prices:
        raise parse_error(NAME, capture, "spot size without a linux price column",
                          "valueColumns.linux", snippet=raw[:SNIPPET_CHARS])
    quotes = prices["linux"] if isinstance(prices["linux"], dict) else {}
    if len(quotes) != 1:
        out.reject(f"expected one Linux spot price, found {quotes!r}", raw, key)
        return
    (currency, quote), = quotes.items()
    price = positive_decimal(quote) if isinstance(quote, str) else None
    if price is None:  # "N/A*": not sold as spot there (see the region's footnotes)
        out.reject(f"no Linux spot price ({quote!r})", raw, key)
        return
    advice = advisor.by_region.get(region, {}).get(itype) if advisor else None
    advice = advice if isinstance(advice, dict) else None
    band = advice.get("r") if advice else None
    spec = specs.get(itype, Specs(None, None, None))
    network, network_gbps = network_of(itype)
    try:
        offer = ParsedOffer(
            provider=NAME, offer_key=key, instance_type=itype, gpu_label=itype,
            gpu_count=count, pricing_model=PricingModel.SPOT, price_per_hour=price,
            currency=currency, price_kind=PriceKind.OBSERVED, region=region,
            vcpus=spec.vcpus, ram_gb=spec.ram_gb, disk_gb=spec.disk_gb, network=network,
            network_gbps=network_gbps, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={
                "interruption_band": advisor.bands.get(band)
                if advisor and isinstance(band, int) else None,
                "savings_pct": advice.get("s") if advice else None,
            },
        )
    except ValidationError as exc:  # a currency that is no currency code, a wrong type...
        out.reject(f"invalid offer: {exc.errors()[0]['msg']}", raw, key)
        return
    out.add(offer)


def _list_field(obj: Any, name: str, capture: Capture) -> list[Any]:
    value = _field(obj, name, capture)
    if not isinstance(value, list):
        raise parse_error(NAME, capture, f"spot price feed field '{name}' is not a list", name,
                          snippet=json.dumps(obj)[:SNIPPET_CHARS])
    return value


def _field(obj: Any, name: str, capture: Capture) -> Any:
    if not isinstance(obj, dict) or name not in obj:
        raise parse_error(NAME, capture, f"spot price feed entry without '{name}'", name,
                          snippet=json.dumps(obj)[:SNIPPET_CHARS])
    return obj[name]


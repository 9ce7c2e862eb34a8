"""Sesterce: the offers book of the public compute console, `GET
https://cloud.sesterce.com/compute`, read from the page's Next.js flight data.

Layout (2026-08-25 capture, adapters/snapshots/sesterce/PROVENANCE.md): the page streams its
server-rendered data as `self.__next_f.push([1,"<chunk>"])` scripts; each chunk is a JavaScript
string literal in JSON's escaping, and their text joined in order is the flight payload. It
holds one `"filteredOffers":[...]` array (other `$1b:1:props:filteredOffers:N` strings are
references to it): one object per rentable configuration, `gpuName` ("H100", "A100_80G",
"RTXPro6000", "CPU"), `gpuCount`, `hourlyPrice`, `spotOfferAvailable` / `hourlySpotPrice`,
`configuration` (`vCpu`, `ramGB`, `storageGB`, `vRamGB` for all GPUs together, `interconnect`
"sxm5" / "sxm4" / "pcie"), `nvlink`, `deploymentType` ("vm" or "baremetal"), `cloud` (`name`:
an anonymised tag of the cloud Sesterce resells, "AZ_02"), `instanceId`, and `availability`, one
entry per region with an explicit `available` boolean.

Reading rules:
- `hourlyPrice` is the price of the whole configuration (H200 x 8 at 28.16 is 3.52 per GPU; the
  console prints per-instance prices).
- One offer per configuration and region listed, in stock or out of stock as `available` says;
  the offer key is instance id, cloud tag, deployment type and region.
- The GPU label is `gpuName` with the form factor `configuration.interconnect` states
  ("H100 SXM5", "A100 SXM4", "RTXPro6000 PCIE"), since the name alone does not say it; VRAM per
  GPU is `vRamGB / gpuCount`. `nvlink` true is NVLink between the GPUs.
- A spot price is read only where `spotOfferAvailable` is true. The book states no currency:
  the console prints dollars, so USD.
- `gpuCount` 0 (the CPU machines) is no GPU offer. A configuration without a price, GPU name or
  instance id is a reject. No flight chunk, no `filteredOffers` array or two of them, or an
  array that is not JSON, is a format change (ParseError).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    as_list,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    split_results,
    stripped_text,
)
from gpuscout.core.models import (
    Availability,
    Interconnect,
    ParsedOffer,
    ParseResult,
    PricingModel,
    ProviderData,
    Reject,
)

COMPUTE_URL = "https://cloud.sesterce.com/compute"

NAME = "sesterce"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

CHUNK_RE = re.compile(r'self\.__next_f\.push\(\[1,"((?:[^"\\]|\\.)*)"\]\)')
OFFERS_KEY = '"filteredOffers":['
FORM_FACTORS = frozenset({"sxm", "sxm2", "sxm4", "sxm5", "sxm6", "pcie", "nvl"})
CONFIG_FIELDS = ("vCpu", "ramGB", "storageGB")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(COMPUTE_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    book = _offers_book(capture)
    results: list[ParsedOffer | Reject] = []
    for entry in book:
        results += _configuration(capture, entry)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _offers_book(capture: Capture) -> list[Any]:
    chunks = CHUNK_RE.findall(capture.text())
    if not chunks:
        raise parse_error(NAME, capture, "no self.__next_f.push flight chunks", "__next_f")
    try:
        flight = "".join(json.loads(f'"{chunk}"') for chunk in chunks)
    except ValueError as exc:
        raise parse_error(NAME, capture, f"a flight chunk is not a JSON string ({exc})",
                          "__next_f") from None
    count = flight.count(OFFERS_KEY)
    if count != 1:
        raise parse_error(NAME, capture, f"the flight data holds {count} filteredOffers arrays, "
                          "expected 1", "filteredOffers")
    start = flight.index(OFFERS_KEY) + len(OFFERS_KEY) - 1
    try:
        book, _ = json.JSONDecoder().raw_decode(flight, start)
    except ValueError as exc:
        raise parse_error(NAME, capture, f"filteredOffers is not a JSON array ({exc})",
                          "filteredOffers") from None
    return as_list(book)


def _configuration(capture: Capture, entry: Any) -> list[ParsedOffer | Reject]:
    raw = json.dumps(entry, sort_keys=True, default=str)
    if not isinstance(entry, dict):
        return [Reject(provider=NAME, reason="offer is not an object", raw=raw)]
    gpu = stripped_text(entry.get("gpuName"))
    count = entry.get("gpuCount")
    instance = stripped_text(entry.get("instanceId"))
    if isinstance(count, int) and not isinstance(count, bool) and count == 0:
        return []  # a CPU machine
    if gpu is None or instance is None or isinstance(count, bool) or not isinstance(count, int) \
            or count < 0:
        return [Reject(provider=NAME, raw=raw, reason="offer without a gpuName, instanceId and "
                       f"whole gpuCount: {gpu!r}, {instance!r}, {count!r}")]
    config = as_dict(entry.get("configuration"))
    form = str(config.get("interconnect") or "").strip().lower()
    label = f"{gpu} {form.upper()}" if form in FORM_FACTORS else gpu
    cloud = stripped_text(as_dict(entry.get("cloud")).get("name"))
    deployment = stripped_text(entry.get("deploymentType"))
    prices: list[tuple[PricingModel, object]] = [(PricingModel.ON_DEMAND,
                                                  entry.get("hourlyPrice"))]
    if entry.get("spotOfferAvailable") is True:
        prices.append((PricingModel.SPOT, entry.get("hourlySpotPrice")))
    regions = [r for r in as_list(entry.get("availability")) if isinstance(r, dict)] or [{}]
    results: list[ParsedOffer | Reject] = []
    for model, price in prices:
        for region in regions:
            key = "|".join([instance, str(cloud), str(deployment),
                            str(stripped_text(region.get("region"))), model.value])
            results.append(_offer(capture, key, label, count, model, price, entry, config,
                                  region, raw))
    return results


def _offer(capture: Capture, key: str, label: str, count: int, model: PricingModel,
           price: object, entry: dict[str, Any], config: dict[str, Any],
           region: dict[str, Any], raw: str) -> ParsedOffer | Reject:
    total = positive_number(price)
    if total is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"{model.value} price is not a price: {price!r}")
    vram = positive_number(config.get("vRamGB"))
    available = region.get("available")
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=stripped_text(entry.get("instanceId")),
            gpu_label=label, gpu_count=count,
            vram_gb_per_gpu=round(vram / count, 3) if vram is not None else None,
            pricing_model=model, price_per_hour=total,
            region=stripped_text(region.get("region")), vcpus=positive_number(config.get("vCpu")),
            ram_gb=positive_number(config.get("ramGB")),
            disk_gb=positive_number(config.get("storageGB")),
            interconnect=Interconnect.NVLINK if entry.get("nvlink") is True and count > 1
            else None,
            availability=(Availability.IN_STOCK if available is True else
                          Availability.OUT_OF_STOCK if available is False else
                          Availability.UNKNOWN),
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data=_data(entry, region, total, count))
    except ValidationError as exc:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")


def _data(entry: dict[str, Any], region: dict[str, Any], total: float,
          count: int) -> ProviderData:
    data: ProviderData = {"price_per_gpu_hour": round(total / count, 6),
                          "gpu_name": stripped_text(entry.get("gpuName")),
                          "deployment_type": stripped_text(entry.get("deploymentType")),
                          "cloud_tag": stripped_text(as_dict(entry.get("cloud")).get("name")),
                          "location": stripped_text(region.get("name")),
                          "country": stripped_text(region.get("countryCode"))}
    return {k: v for k, v in data.items() if v is not None}

"""ParsedOffer -> Offer: canonical GPU, USD prices, interconnect defaults, geography, and how
the offer is sold (`sold.py`: its term, its order, the market behind its price)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpuscout.core.catalog import Catalog, FamilyLevel, GpuSpec, Resolved
from gpuscout.core.models import Interconnect, NetworkFabric, Offer, ParsedOffer, Reject
from gpuscout.pipeline.geography import geography
from gpuscout.pipeline.sold import market_of, order_of, term_of

USD_ONLY: Mapping[str, float] = {"USD": 1.0}


@dataclass
class NormalizeResult:
    offers: list[Offer] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    unknown_labels: list[str] = field(default_factory=list)  # distinct, sorted


def _interconnect(p: ParsedOffer, spec: GpuSpec | None) -> tuple[Interconnect, float | None]:
    # A provider's stated link type or bandwidth wins; the catalog fills only what is missing.
    link = spec.node_interconnect if spec is not None else None
    catalog_gbps = (spec.nvlink_gbps if spec is not None and link in (
        Interconnect.NVSWITCH, Interconnect.NVLINK, Interconnect.INFINITY_FABRIC) else None)
    if p.interconnect is not None:
        same = p.interconnect == link
        return p.interconnect, p.interconnect_gbps or (catalog_gbps if same else None)
    if p.gpu_count <= 1:
        return Interconnect.SINGLE, None
    if link is None:
        return Interconnect.UNKNOWN, p.interconnect_gbps
    return link, p.interconnect_gbps or catalog_gbps


def normalize_one(p: ParsedOffer, catalog: Catalog,
                  fx: Mapping[str, float]) -> tuple[Offer | Reject, str | None]:
    """One offer; the second value is the label when it did not resolve."""
    rate = fx.get(p.currency)
    if rate is None:
        return Reject(provider=p.provider, offer_key=p.offer_key, raw=p.model_dump_json(),
                      reason=f"no USD rate for currency {p.currency}"), None
    per_gpu = p.price_per_hour * rate / p.gpu_count
    if not (math.isfinite(per_gpu) and per_gpu > 0):  # 1e308 EUR overflows; 5e-324 vanishes
        return Reject(provider=p.provider, offer_key=p.offer_key, raw=p.model_dump_json(),
                      reason=f"absurd price: {p.price_per_hour:g} {p.currency} for "
                             f"{p.gpu_count:g} GPUs has no finite USD price per GPU-hour"), None
    res = catalog.identify(p.provider, p.gpu_label, p.vram_gb_per_gpu)
    spec = catalog.gpu(res.gpu_id) if isinstance(res, Resolved | FamilyLevel) else None
    assumed = isinstance(res, FamilyLevel)
    link, link_gbps = _interconnect(p, spec)
    usd = p.price_per_hour * rate
    order = order_of(p)
    offer = Offer(
        provider=p.provider, offer_key=p.offer_key, instance_type=p.instance_type,
        gpu_label=p.gpu_label, gpu_id=spec.canonical_id if spec else None,
        gpu_count=p.gpu_count, fractional_gpu=p.gpu_count < 1,
        vram_gb=p.vram_gb_per_gpu or (spec.vram_gb if spec else None),
        memory_type=spec.memory_type if spec else None,
        # an assumed variant's form factor is not stated: the column says so (NULL)
        form_factor=spec.form_factor if spec and not assumed else None,
        interconnect=link, interconnect_gbps=link_gbps,
        network=p.network or order.network or NetworkFabric.UNKNOWN,
        network_gbps=p.network_gbps if p.network else (p.network_gbps or order.network_gbps),
        pricing_model=p.pricing_model, price_kind=p.price_kind, currency=p.currency,
        price_per_hour=p.price_per_hour, price_usd_per_hour=usd,
        price_usd_per_gpu_hour=usd / p.gpu_count, billing_increment_s=p.billing_increment_s,
        region=p.region, geography=geography(p.region), zone=p.zone, vcpus=p.vcpus,
        ram_gb=p.ram_gb, disk_gb=p.disk_gb, availability=p.availability,
        available_count=p.available_count, source_url=p.source_url,
        observed_at=p.observed_at, provider_data=p.provider_data,
        gpu_variant_assumed=assumed, **term_of(p).fields(), **order.fields(),
        **market_of(p, rate).fields(),
    )
    return offer, (None if spec else p.gpu_label)


def normalize(parsed: Sequence[ParsedOffer], catalog: Catalog,
              fx: Mapping[str, float] = USD_ONLY) -> NormalizeResult:
    out = NormalizeResult()
    unknown: set[str] = set()
    for p in parsed:
        result, unknown_label = normalize_one(p, catalog, fx)
        if isinstance(result, Reject):
            out.rejects.append(result)
        else:
            out.offers.append(result)
        if unknown_label:
            unknown.add(unknown_label)
    out.unknown_labels = sorted(unknown)
    return out

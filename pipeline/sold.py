"""How an offer is sold, read for normalize: its term, what one order is, the market behind its
price. Each is read from the offer itself first (the ParsedOffer's own fields, then what its
adapter kept in `provider_data` or its key), then from the sourced provider facts of
`sale_facts.py`, and says which (`term_source`, `order_source`: "offer" or the fact's URL).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from gpuscout.core.models import (
    TERM_UNIT_HOURS,
    NetworkFabric,
    ParsedOffer,
    PricingModel,
    ProviderData,
    TermKind,
    TermPayment,
    TermUnit,
)
from gpuscout.pipeline.sale_facts import order_shapes, spot_kind, term_facts

# "36 months", "1 Year", "3 years", "1 month (monthly billing)", "36mo", "12-month"
_TERM = re.compile(r"(\d+(?:\.\d+)?)\s*-?\s*(hours?|h|days?|weeks?|months?|mo|years?|yrs?)\b",
                   re.IGNORECASE)
_UNITS = {"h": TermUnit.HOUR, "hour": TermUnit.HOUR, "day": TermUnit.DAY,
          "week": TermUnit.WEEK, "month": TermUnit.MONTH, "mo": TermUnit.MONTH,
          "year": TermUnit.YEAR, "yr": TermUnit.YEAR}
# provider_data "printed_per" (E2E) -> how the plan is paid
_PRINTED_PER = {"monthly": TermPayment.MONTHLY, "annually": TermPayment.ANNUALLY}


def parse_term(text: str) -> tuple[float, TermUnit] | None:
    """A term as a provider prints it: (length, unit), or None when the text names none."""
    m = _TERM.search(text)
    if m is None:
        return None
    word = m.group(2).lower()
    unit = _UNITS.get(word) or _UNITS.get(word.rstrip("s"))
    return (float(m.group(1)), unit) if unit is not None else None


@dataclass(frozen=True)
class TermSold:
    term_kind: TermKind
    min_term: float | None = None
    min_term_unit: TermUnit | None = None
    term_payment: TermPayment | None = None
    term_source: str | None = None

    def fields(self) -> dict[str, Any]:
        hours = (self.min_term * TERM_UNIT_HOURS[self.min_term_unit]
                 if self.min_term is not None and self.min_term_unit is not None else None)
        return {**asdict(self), "min_term_hours": hours}


def _stated_term(p: ParsedOffer) -> tuple[float, TermUnit] | None:
    if p.min_term is not None and p.min_term_unit is not None:
        return p.min_term, p.min_term_unit
    months = p.provider_data.get("commitment_months")
    if isinstance(months, int | float) and not isinstance(months, bool) and months > 0:
        return float(months), TermUnit.MONTH
    text = p.provider_data.get("term")
    if isinstance(text, str) and (found := parse_term(text)):
        return found
    if p.pricing_model is PricingModel.RESERVED:  # the key's own segment: "...|reserved|36mo"
        for part in reversed(p.offer_key.split("|")):
            if found := parse_term(part):
                return found
    return None


def _stated_payment(p: ParsedOffer) -> TermPayment | None:
    if p.term_payment is not None:
        return p.term_payment
    data = p.provider_data
    plan = data.get("plan_code")
    if isinstance(plan, str) and plan.endswith(".monthly.postpaid"):  # OVHcloud
        return TermPayment.MONTHLY
    printed = data.get("printed_per")
    return _PRINTED_PER.get(printed) if isinstance(printed, str) else None


def term_of(p: ParsedOffer) -> TermSold:
    """How the offer is sold: on demand, a kind of spot, or committed for a minimum term."""
    if p.pricing_model is PricingModel.ON_DEMAND:
        return TermSold(p.term_kind or TermKind.ON_DEMAND)
    if p.pricing_model is PricingModel.SPOT:
        return TermSold(p.term_kind or spot_kind(p.provider))
    fact = term_facts().get(p.provider)
    stated, payment = _stated_term(p), _stated_payment(p)
    source = "offer" if stated else None
    if stated is None and fact is not None and fact.min_term and fact.min_term_unit:
        stated, source = (fact.min_term, fact.min_term_unit), fact.source_url
    if payment is None and fact is not None and fact.payment is not None:
        payment = fact.payment
        source = fact.source_url if source is None else f"offer; payment: {fact.source_url}"
    return TermSold(TermKind.COMMITTED, stated[0] if stated else None,
                    stated[1] if stated else None, payment, source)


@dataclass(frozen=True)
class OrderSold:
    gpus_per_machine: float | None = None
    machines_min: int = 1
    machines_max: int | None = None
    nvlink_domain_gpus: int | None = None
    order_source: str | None = None
    network: NetworkFabric | None = None  # the fabric between an order's machines, if stated
    network_gbps: float | None = None

    def fields(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in ("network", "network_gbps")}


def order_of(p: ParsedOffer) -> OrderSold:
    """What one order of the offer is: by default one machine of all its GPUs."""
    if p.gpus_per_machine is not None or p.machines_min is not None:
        return OrderSold(p.gpus_per_machine, p.machines_min or 1, p.machines_max,
                         p.nvlink_domain_gpus, "offer")
    shape = next((s for s in order_shapes() if s.matches(p.provider, p.offer_key)), None)
    if shape is None:
        return OrderSold(nvlink_domain_gpus=p.nvlink_domain_gpus)
    machines = p.gpu_count / shape.gpus_per_machine
    if shape.machines == "offer":
        if machines < 1 or machines != int(machines):
            return OrderSold()  # the listed GPUs are not whole machines of the stated size
        low: int = int(machines)
        high: int | None = int(machines)
    else:
        low, high = shape.machines, shape.machines_max
    return OrderSold(shape.gpus_per_machine, low, high, shape.nvlink_domain_gpus,
                     shape.source_url, shape.network, shape.network_gbps)


@dataclass(frozen=True)
class MarketSold:
    ask_count: int | None = None
    ask_median_usd_per_hour: float | None = None
    ask_max_usd_per_hour: float | None = None
    host_id: str | None = None
    host_reliability: float | None = None
    host_verified: bool | None = None

    def fields(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MarketKeys:
    """Where a marketplace adapter keeps the market in provider_data."""

    count: str | None = None
    median: str | None = None
    highest: str | None = None
    per_gpu: bool = False  # median and highest per GPU (else for the whole offer)
    host: str | None = None
    reliability: str | None = None
    reliability_scale: float = 1.0  # the source's full score (Lium: 100)
    verification: str | None = None  # its value "verified" marks a verified host


MARKETS = {
    "vastai": MarketKeys(count="ask_count", median="median_ask", highest="max_ask",
                         reliability="min_ask_reliability",
                         verification="min_ask_verification"),
    "lium": MarketKeys(count="asks", median="median_price_per_gpu",
                       highest="max_price_per_gpu", per_gpu=True, host="executor_id",
                       reliability="reliability_score", reliability_scale=100.0),
    "hyperbolic": MarketKeys(host="cluster_name"),
    "tensordock": MarketKeys(host="location_id"),
}


def _number(data: ProviderData, key: str | None) -> float | None:
    value = data.get(key) if key else None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


def market_of(p: ParsedOffer, usd_per_unit: float) -> MarketSold:
    """The market behind a marketplace price: its asks and host, in USD for the whole offer."""
    keys = MARKETS.get(p.provider)
    if keys is None:
        return MarketSold()
    data = p.provider_data
    scale = usd_per_unit * (p.gpu_count if keys.per_gpu else 1.0)
    count, median = _number(data, keys.count), _number(data, keys.median)
    highest, reliability = _number(data, keys.highest), _number(data, keys.reliability)
    host = data.get(keys.host) if keys.host else None
    verification = data.get(keys.verification) if keys.verification else None
    return MarketSold(
        ask_count=int(count) if count is not None else None,
        ask_median_usd_per_hour=median * scale if median else None,
        ask_max_usd_per_hour=highest * scale if highest else None,
        host_id=str(host) if host not in (None, "") else None,
        host_reliability=(min(1.0, reliability / keys.reliability_scale)
                          if reliability is not None else None),
        host_verified=(verification == "verified") if isinstance(verification, str) else None)

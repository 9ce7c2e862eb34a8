"""How an offer is sold, as normalize reads it: terms, orders and the market behind a price,
pinned on the shapes the adapters really emit (provider_data keys of the bundled captures)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gpuscout.core.catalog import load_catalog
from gpuscout.core.models import (
    NetworkFabric,
    ParsedOffer,
    PricingModel,
    TermKind,
    TermPayment,
    TermUnit,
)
from gpuscout.pipeline.normalize import normalize
from gpuscout.pipeline.sale_facts import interruption_rate, interruption_rates
from gpuscout.pipeline.sold import parse_term

T = datetime(2026, 1, 9, tzinfo=UTC)


def parsed(provider: str, key: str, *, label: str = "NVIDIA H100 SXM", count: float = 8.0,
           price: float = 20.0, model: PricingModel = PricingModel.ON_DEMAND,
           **kw: Any) -> ParsedOffer:
    return ParsedOffer(provider=provider, offer_key=key, gpu_label=label, gpu_count=count,
                       pricing_model=model, price_per_hour=price, source_url="https://x.test",
                       observed_at=T, **kw)


def one(p: ParsedOffer, fx: dict[str, float] | None = None) -> Any:
    (offer,) = normalize([p], load_catalog(), fx or {"USD": 1.0}).offers
    return offer


@pytest.mark.parametrize(("text", "expected"), [
    ("36 months", (36.0, TermUnit.MONTH)), ("1 Year", (1.0, TermUnit.YEAR)),
    ("3 Years", (3.0, TermUnit.YEAR)), ("1 month (monthly billing)", (1.0, TermUnit.MONTH)),
    ("36mo", (36.0, TermUnit.MONTH)), ("12-month", (12.0, TermUnit.MONTH)),
    ("on_demand", None), ("8x", None),
])
def test_terms_as_providers_print_them(text: str, expected: object) -> None:
    assert parse_term(text) == expected


def test_a_civo_commitment_is_its_term_paid_monthly_per_the_sourced_fact() -> None:
    o = one(parsed("civo", "NVIDIA B200|8x|reserved|36 months", model=PricingModel.RESERVED,
                   provider_data={"term": "36 months", "monthly_price": 22133.6}))
    assert (o.term_kind, o.min_term, o.min_term_unit) == (TermKind.COMMITTED, 36, TermUnit.MONTH)
    assert o.min_term_hours == 36 * 730  # 26,280 h
    assert o.term_payment is TermPayment.MONTHLY
    assert o.term_source.startswith("offer; payment: https://www.civo.com/pricing")


@pytest.mark.parametrize(("provider", "key", "data", "hours", "payment"), [
    ("ovhcloud", "FR|h100-380|reserved", {"term": "1 month (monthly billing)",
                                          "plan_code": "h100-380.monthly.postpaid"},
     730.0, TermPayment.MONTHLY),
    ("e2e", "NVIDIA B200|192GB|USD|reserved|1 year", {"term": "1 year",
                                                      "printed_per": "annually"},
     8760.0, TermPayment.ANNUALLY),
    ("paperspace", "H100|1x|reserved|36mo", {"commitment_months": 36, "term": "3 years"},
     26280.0, None),
    # no term in provider_data: the key's own segment
    ("newcloud", "h100|8x|reserved|12 months", {}, 8760.0, None),
])
def test_committed_terms_are_read_from_the_offer(provider: str, key: str, data: dict,
                                                 hours: float, payment: object) -> None:
    o = one(parsed(provider, key, model=PricingModel.RESERVED, provider_data=data))
    assert (o.term_kind, o.min_term_hours, o.term_payment) == (TermKind.COMMITTED, hours, payment)
    assert o.term_source == "offer"


def test_a_committed_offer_without_a_term_says_so() -> None:
    o = one(parsed("newcloud", "h100|8x|reserved", model=PricingModel.RESERVED))
    assert o.term_kind is TermKind.COMMITTED and o.min_term_hours is None


def test_spot_is_sold_as_its_providers_kind() -> None:
    assert one(parsed("vastai", "k", model=PricingModel.SPOT)).term_kind is TermKind.BID
    assert one(parsed("aws", "k", model=PricingModel.SPOT)).term_kind is TermKind.SPOT
    assert one(parsed("lium", "k", model=PricingModel.SPOT)).term_kind is TermKind.INTERRUPTIBLE
    assert one(parsed("aws", "k")).term_kind is TermKind.ON_DEMAND


def test_an_instant_cluster_is_machines_of_eight_over_infiniband() -> None:
    o = one(parsed("datacrunch", "144x B300 SXM6 268GB|on_demand|instant_cluster",
                   label="B300 SXM6 268GB", count=144, price=1080.0))
    assert (o.gpus_per_machine, o.machines_min, o.machines_max) == (8, 18, 18)
    assert o.machines == 18 and o.nvlink_domain_gpus == 8
    assert (o.network, o.network_gbps) == (NetworkFabric.INFINIBAND, 3200.0)
    assert o.order_source.startswith("https://docs.verda.com/clusters/instant-clusters")


def test_an_nvl72_instance_is_ordered_as_a_rack_of_eighteen() -> None:
    o = one(parsed("coreweave", "nvidia-gb200-nvl72|north-america|on_demand",
                   label="nvidia-gb200-nvl72", count=4, price=42.0))
    assert (o.gpus_per_machine, o.machines_min, o.machines_max, o.nvlink_domain_gpus) == (
        4, 18, None, 72)


def test_a_plain_offer_is_one_machine() -> None:
    o = one(parsed("lambda", "8x|NVIDIA H100 SXM|on_demand"))
    assert (o.gpus_per_machine, o.machines_min, o.machines_max, o.machines) == (None, 1, None, 1)


def test_marketplace_depth_is_lifted_in_usd_for_the_whole_offer() -> None:
    # Vast.ai: median and highest ask are whole-offer prices (adapters/vastai.py)
    o = one(parsed("vastai", "A100 SXM4|4x|80GB|*|on_demand", label="A100 SXM4", count=4,
                   price=1.18, vram_gb_per_gpu=80.0,
                   provider_data={"ask_count": 5, "median_ask": 3.63, "max_ask": 5.0,
                                  "min_ask_reliability": 0.97,
                                  "min_ask_verification": "verified"}))
    assert (o.ask_count, o.ask_median_usd_per_hour, o.ask_max_usd_per_hour) == (5, 3.63, 5.0)
    assert (o.host_reliability, o.host_verified) == (0.97, True)
    # Lium: per-GPU asks × 8 GPUs, reliability a percentage, the executor is the host
    o = one(parsed("lium", "NVIDIA H100 80GB HBM3|8x|RU|on_demand", count=8, price=14.0,
                   currency="EUR",
                   provider_data={"asks": 3, "median_price_per_gpu": 2.0,
                                  "max_price_per_gpu": 2.5, "reliability_score": 99.7,
                                  "executor_id": "e-1"}), {"USD": 1.0, "EUR": 1.1})
    assert o.ask_count == 3 and o.host_id == "e-1"
    assert o.ask_median_usd_per_hour == pytest.approx(2.0 * 8 * 1.1)
    assert o.ask_max_usd_per_hour == pytest.approx(2.5 * 8 * 1.1)
    assert o.host_reliability == pytest.approx(0.997)


def test_interruption_rates_are_sourced_rows_per_provider_and_kind() -> None:
    assert all(r.source_url.startswith("http") for r in interruption_rates())
    aws = interruption_rate("aws", TermKind.SPOT)
    assert aws is not None and aws.basis == "published"
    # >20 %/month as a Poisson rate: -ln(0.75)/730 per machine-hour
    assert aws.per_hour == pytest.approx(0.000394085, rel=1e-5)
    nebius = interruption_rate("nebius", TermKind.SPOT)  # no row of its own: the default
    assert nebius is not None and (nebius.provider, nebius.basis) == ("*", "proxy")
    vast = interruption_rate("vastai", TermKind.BID)
    assert vast is not None and (vast.basis, vast.per_hour) == ("assumed", 0.05)


def test_what_an_adapter_states_wins_and_stays_out_of_its_dump() -> None:
    p = parsed("newcloud", "h100|16x|reserved", count=16, model=PricingModel.RESERVED,
               min_term=2.0, min_term_unit=TermUnit.WEEK, term_payment=TermPayment.PREPAID,
               gpus_per_machine=8.0, machines_min=2, machines_max=4, nvlink_domain_gpus=8)
    assert "min_term" not in p.model_dump() and "gpus_per_machine" not in p.model_dump()
    o = one(p)
    assert (o.min_term_hours, o.term_payment, o.term_source) == (336.0, TermPayment.PREPAID,
                                                                 "offer")
    assert (o.gpus_per_machine, o.machines_min, o.machines_max, o.order_source) == (
        8.0, 2, 4, "offer")

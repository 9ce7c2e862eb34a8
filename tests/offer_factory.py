"""Build valid normalized offers for warehouse and pipeline tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gpuscout.core.models import (
    Availability,
    Interconnect,
    NetworkFabric,
    Offer,
    PriceKind,
    PricingModel,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_offer(key: str = "8x-h100", *, provider: str = "testprov", price: float = 23.92,
               gpu_count: float = 8, observed_at: datetime = T0, **extra: Any) -> Offer:
    fields: dict[str, Any] = dict(
        provider=provider, offer_key=key, instance_type=None, gpu_label="H100 SXM",
        gpu_id="h100-sxm-80gb", gpu_count=gpu_count, fractional_gpu=gpu_count < 1,
        vram_gb=80.0, memory_type="HBM3", form_factor="SXM",
        interconnect=Interconnect.NVSWITCH, interconnect_gbps=900.0,
        network=NetworkFabric.UNKNOWN, network_gbps=None,
        pricing_model=PricingModel.ON_DEMAND, price_kind=PriceKind.LISTED, currency="USD",
        price_per_hour=price, price_usd_per_hour=price, price_usd_per_gpu_hour=price / gpu_count,
        billing_increment_s=None, region="us-east-1", geography="us", zone=None, vcpus=None,
        ram_gb=None, disk_gb=None, availability=Availability.UNKNOWN, available_count=None,
        source_url="https://example.test/pricing", observed_at=observed_at, provider_data={},
    )
    fields.update(extra)
    return Offer(**fields)

"""What a recommendation answers: offers priced for the whole run, ranked, with reasons."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from gpuscout.core.models import Availability, PricingModel
from gpuscout.pipeline.measured.offers import OfferRange
from gpuscout.pipeline.recommend.managed import ManagedQuote


class RankedOffer(BaseModel):
    """One offer priced for the whole run. Hours, GB and USD as the names say."""

    provider: str
    offer_key: str
    gpu_id: str
    gpus_per_node: int
    nodes: int = Field(description="machines the job spans (1: one machine)")
    interconnect: str | None = Field(description="between the GPUs of one machine")
    network: str | None = Field(default=None, description="between machines (InfiniBand, EFA, "
                                "RoCE, Ethernet) when the offer can span several; else None")
    network_gbps: float | None = Field(default=None, description="per machine, as sized "
                                       "(stated by the offer or profile, or assumed)")
    pricing_model: PricingModel
    price_usd_per_hour: float = Field(description="one machine, as offered (× nodes for the "
                                                  "cluster)")
    price_usd_per_gpu_hour: float
    region: str | None
    sharding: str = Field(description="none, ddp, zero2, zero3, ... as sized for this offer")
    dtype: str = Field(description="the precision the job runs in on this GPU")
    need_gb_per_gpu: float
    peak_gb_per_gpu: float
    usable_gb_per_gpu: float
    tokens_per_s: float
    compute_hours: float
    expected_hours: float = Field(description="with checkpoint pauses and, on spot, lost "
                                              "work and restarts")
    billed_hours: float = Field(description="expected hours rounded up to the billing "
                                            "increment")
    checkpoint_every_min: float = Field(default=0.0, description="the interval used: "
                                        "--checkpoint-every, or Young/Daly's")
    checkpoint_hours: float = Field(default=0.0, description="hours spent writing checkpoints")
    interruptions_per_hour: float = Field(default=0.0, description="of the whole job: spot "
                                          "rate × machines + hardware failures × GPUs")
    expected_interruptions: float
    compute_usd: float
    storage_usd: float
    egress_usd: float
    total_usd: float
    observed_at: datetime | None = Field(description="the refresh that last saw this price")
    price_age_days: int | None
    price_source: Literal["live", "replay"] = Field(
        default="live", description="replay: read from a recorded capture, not a live fetch")
    availability: Availability = Availability.UNKNOWN
    resold_from: str | None = Field(default=None, description="an aggregator's offer: the "
                                    "cloud whose machine it resells")
    stale: bool
    reasons: list[str]
    rejected_because: None = Field(default=None, description="None: a ranked offer runs the job")
    range: OfferRange | None = Field(default=None, description="tokens/s, hours and total "
                                     "cost at the ends of the estimate's range (the "
                                     "calibration's spread, narrowed by your runs)")

    @property
    def price_age_label(self) -> str:
        """How old the price is and whether it was read live: "2 d", "replay 2023-09-21"."""
        if self.price_source == "replay":
            return "replay " + (f"{self.observed_at:%Y-%m-%d}" if self.observed_at else "?")
        return "?" if self.price_age_days is None else f"{self.price_age_days} d"


class RejectedOffer(BaseModel):
    """An offer cheaper by the hour than the winner that cannot run the job well."""

    provider: str
    offer_key: str
    gpu_id: str | None
    gpus_per_node: float
    pricing_model: PricingModel
    price_usd_per_hour: float
    rejected_because: str


class Recommendation(BaseModel):
    model_id: str
    method: str
    tokens: int
    storage_gb: float
    checkpoint_gb: float
    egress_gb: float
    shapes_evaluated: int
    offers_evaluated: int
    ranked: list[RankedOffer]
    rejected_cheaper: list[RejectedOffer]
    warnings: list[str] = Field(default_factory=list, description="about the job's inputs")
    price_notes: list[str] = Field(default_factory=list, description="about the prices "
                                   "ranked: replayed captures, the age limit applied")
    uncertainty_notes: list[str] = Field(
        default_factory=list, description="when the best offers' ranges overlap, and how the "
        "ranking took the ranges")
    managed: list[ManagedQuote] = Field(
        default_factory=list, description="managed fine-tuning services priced per training "
        "token for this model and method, cheapest first: no GPU to rent, a row of its own kind")

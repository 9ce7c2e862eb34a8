"""What a recommendation answers: offers priced for the whole run, ranked, with reasons."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from gpuscout.core.models import TERM_UNIT_HOURS, Availability, PricingModel, TermKind, TermUnit
from gpuscout.pipeline.measured.offers import OfferRange
from gpuscout.pipeline.recommend.managed import ManagedQuote


class Charge(BaseModel):
    """One term of the run's cost beside the machine's hours: its rate, where the rate was read,
    and what it adds to the total, from nothing to the dearest case where the rate is unknown."""

    what: Literal["billing", "storage", "egress"]
    state: Literal["known", "unknown", "not offered"]
    rate: float | None = Field(default=None, description="billing: the increment in s; "
                               "storage: USD per GB-month; egress: USD per GB")
    unit: str
    usd: float | None = Field(default=None, description="in the total (billing: the "
                              "hours it rounds up are in compute_usd)")
    usd_low: float | None = None
    usd_high: float | None = None
    source: str | None = Field(default=None, description="whose profile (or the offer), "
                               "its URL and the date it was read")


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
    term_kind: TermKind = Field(default=TermKind.ON_DEMAND, description="how it is sold")
    min_term_hours: float | None = Field(default=None, description="a committed offer's "
                                         "minimum term, paid whether used or not")
    price_usd_per_hour: float = Field(description="the offer as listed (an instant cluster's "
                                                  "price is the whole cluster's)")
    price_usd_per_gpu_hour: float = Field(description="as ranked, per GPU")
    price_usd_per_machine_hour: float = Field(default=0.0, description="as ranked (a lone "
                                              "outlier ask at its market's median), one machine")
    price_usd_per_order_hour: float = Field(default=0.0, description="as ranked, all the "
                                            "machines the run takes")
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
    charged_hours: float = Field(default=0.0, description="billed hours, or a committed "
                                 "offer's whole term when longer")
    checkpoint_every_min: float = Field(default=0.0, description="the interval used: "
                                        "--checkpoint-every, or Young/Daly's")
    checkpoint_hours: float = Field(default=0.0, description="hours spent writing checkpoints")
    interruptions_per_hour: float = Field(default=0.0, description="of the whole job: spot "
                                          "rate × machines + hardware failures × GPUs")
    expected_interruptions: float
    compute_usd: float
    storage_usd: float = Field(description="the run's storage for its hours and the days "
                               "kept after (an unknown rate: nothing; its range's high end "
                               "counts it)")
    egress_usd: float = Field(description="the download at the end")
    total_usd: float
    observed_at: datetime | None = Field(description="the refresh that last saw this price")
    price_age_days: int | None
    price_source: Literal["live", "replay"] = Field(
        default="live", description="replay: read from a recorded capture, not a live fetch")
    availability: Availability = Availability.UNKNOWN
    resold_from: str | None = Field(default=None, description="an aggregator's offer: the "
                                    "cloud whose machine it resells")
    gpu_variant_assumed: bool = Field(default=False, description="the label does not state the "
                                      "GPU variant: sized at the conservative one")
    ask_count: int | None = Field(default=None, description="marketplace asks behind the price")
    host_reliability: float | None = None
    similar_offers: int = Field(default=1, description="offers that differ only by their host, "
                                "folded into this row (its price range is in the reasons)")
    stale: bool
    reasons: list[str]
    rejected_because: None = Field(default=None, description="None: a ranked offer runs the job")
    range: OfferRange | None = Field(default=None, description="tokens/s, hours and total "
                                     "cost at the ends of the estimate's range (the "
                                     "calibration's spread, narrowed by your runs), the cost "
                                     "with every unknown billing, storage and egress rate "
                                     "from its cheapest to its dearest case")
    charges: list[Charge] = Field(default_factory=list, description="billing, storage and "
                                  "egress: each rate with its source")

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
    term_kind: TermKind = TermKind.ON_DEMAND
    min_term_hours: float | None = None
    price_usd_per_hour: float
    price_usd_per_machine_hour: float = 0.0
    total_usd: float | None = Field(default=None, description="the whole cost, a committed "
                                    "offer's whole term included, where it could be priced")
    set_aside: str | None = Field(default=None, description="why, in short (the counts' key)")
    rejected_because: str


class Recommendation(BaseModel):
    model_id: str
    method: str
    tokens: int
    storage_gb: float
    checkpoint_gb: float
    egress_gb: float = Field(description="downloaded at the end (--download-gb, else the "
                             "final weights)")
    storage_items: dict[str, float] = Field(default_factory=dict, description="GB kept per "
                                            "item; storage_gb is their sum unless stated")
    keep_days: float = Field(default=0.0, description="days the storage is kept after the run")
    required: list[str] = Field(default_factory=list, description="--require names")
    shapes_evaluated: int
    offers_evaluated: int
    ranked: list[RankedOffer]
    rejected_cheaper: list[RejectedOffer]
    warnings: list[str] = Field(default_factory=list, description="about the job's inputs")
    set_aside: dict[str, int] = Field(default_factory=dict, description="offers that cannot "
                                      "serve the run, per reason, most first")
    folded_offers: int = Field(default=0, description="runnable offers folded into a ranked "
                               "row of the same machine at another host")
    price_notes: list[str] = Field(default_factory=list, description="about the prices "
                                   "ranked: replayed captures, the age limit applied")
    uncertainty_notes: list[str] = Field(
        default_factory=list, description="when the best offers' ranges overlap, and how the "
        "ranking took the ranges")
    managed: list[ManagedQuote] = Field(
        default_factory=list, description="managed fine-tuning services priced per training "
        "token for this model and method, cheapest first: no GPU to rent, a row of its own kind")


def set_aside_line(rec: Recommendation) -> str:
    """The offers set aside and why, in one line."""
    if not rec.set_aside:
        return f"none of {rec.offers_evaluated} offers set aside"
    total = sum(rec.set_aside.values())
    parts = ", ".join(f"{why}: {n}" for why, n in rec.set_aside.items())
    folded = (f"; {rec.folded_offers} more are the same machine at another host, each folded "
              "into one row" if rec.folded_offers else "")
    return f"set aside {total} of {rec.offers_evaluated} offers — {parts}{folded}"


def sold_as(kind: TermKind | str, term_hours: float | None) -> str:
    """How an offer is sold, for a table cell: "on demand", "bid", "committed 36 mo"."""
    value = TermKind(kind)
    if value is TermKind.COMMITTED:
        if term_hours is None:
            return "committed"
        months = term_hours / TERM_UNIT_HOURS[TermUnit.MONTH]
        return (f"committed {months:g} mo" if months >= 1 and months == round(months)
                else f"committed {term_hours:,.0f} h")
    return value.value.replace("_", " ")

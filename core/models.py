"""Domain types shared by adapters, pipeline, warehouse and sizing.

A leaf module: it imports nothing from gpuscout. Units are part of every field name or docstring:
prices are per hour, memory in GB (10^9 bytes as providers print it), bandwidth in GB/s for
GPU interconnects and Gb/s for networks.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class PricingModel(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"  # spot, interruptible, preemptible, bid: may be taken away
    RESERVED = "reserved"  # committed term (1 month, 1 year, ...), hourly equivalent


class TermKind(StrEnum):
    """How an offer is sold: what the price buys and what may end it early."""

    ON_DEMAND = "on_demand"  # runs until the renter stops it
    SPOT = "spot"  # the cloud reclaims it when it needs the capacity (spot, preemptible)
    BID = "bid"  # a marketplace bid: paused or stopped when someone bids higher
    INTERRUPTIBLE = "interruptible"  # the host or platform may stop it at any time
    COMMITTED = "committed"  # a minimum term is paid for whether used or not


class TermUnit(StrEnum):
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


# Hours of one unit of a minimum term, as providers convert their monthly and yearly prices to
# hourly ones (730 h a month, 8,760 h a year: OVHcloud, Latitude.sh, E2E, Azure reservations).
TERM_UNIT_HOURS: dict[TermUnit, float] = {
    TermUnit.HOUR: 1.0, TermUnit.DAY: 24.0, TermUnit.WEEK: 168.0, TermUnit.MONTH: 730.0,
    TermUnit.YEAR: 8760.0}


class TermPayment(StrEnum):
    """When a committed term is paid: the whole term is owed either way."""

    PREPAID = "prepaid"  # up front
    MONTHLY = "monthly"  # month by month over the term
    ANNUALLY = "annually"  # year by year over the term


class PriceKind(StrEnum):
    """How a price was obtained, so that a derived number is never mistaken for an observed one."""

    OBSERVED = "observed"  # a live market quote (marketplace ask, spot feed)
    LISTED = "listed"  # the provider's published list price
    DERIVED = "derived"  # computed by us from other prices (documented discount, components)


class MemoryType(StrEnum):
    HBM = "HBM"
    HBM2 = "HBM2"
    HBM2E = "HBM2e"
    HBM3 = "HBM3"
    HBM3E = "HBM3e"
    GDDR5 = "GDDR5"
    GDDR5X = "GDDR5X"
    GDDR6 = "GDDR6"
    GDDR6X = "GDDR6X"
    GDDR7 = "GDDR7"
    LPDDR5X = "LPDDR5X"


class FormFactor(StrEnum):
    SXM = "SXM"
    PCIE = "PCIe"
    NVL = "NVL"
    OAM = "OAM"
    SUPERCHIP = "Superchip"
    TPU = "TPU"


class Interconnect(StrEnum):
    """How the GPUs inside one machine talk to each other."""

    NVSWITCH = "NVSwitch"  # all-to-all NVLink through switches (HGX 8-GPU boards)
    NVLINK = "NVLink"  # NVLink bridges between pairs or small groups
    INFINITY_FABRIC = "InfinityFabric"  # AMD xGMI
    PCIE = "PCIe"
    SINGLE = "single"  # one GPU: nothing to talk to
    UNKNOWN = "unknown"


class NetworkFabric(StrEnum):
    """How machines talk to each other for multi-node training."""

    INFINIBAND = "InfiniBand"
    ROCE = "RoCE"
    EFA = "EFA"
    ETHERNET = "Ethernet"
    UNKNOWN = "unknown"


class Availability(StrEnum):
    IN_STOCK = "in_stock"
    LOW = "low"
    OUT_OF_STOCK = "out_of_stock"
    UNKNOWN = "unknown"


PositiveFloat = Annotated[float, Field(gt=0)]
# Physical bounds, not policy: no GPU has 2 TB of memory and no offer 65,536 GPUs, so a value
# past them is a misread field. (The refresh's row gate is tighter and configurable.)
MAX_VRAM_GB_PER_GPU = 2048.0
MAX_GPU_COUNT = 65536.0
ProviderData = dict[str, str | int | float | bool | None]


class ParsedOffer(BaseModel):
    """One priced offer exactly as a provider describes it; what an adapter's parse() returns.

    `offer_key` identifies the offer within its provider across refreshes: the same machine
    shape, region and pricing model must keep the same key, so that history sees a price change
    rather than a new offer.
    """

    # allow_inf_nan=False: "1e999" or NaN in a provider's payload is not a price, a count or a
    # size (pydantic's gt=0 alone lets infinity through).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    provider: str
    offer_key: str
    instance_type: str | None = None
    gpu_label: str = Field(description="the provider's own spelling of the GPU")
    gpu_count: PositiveFloat = Field(
        le=MAX_GPU_COUNT,
        description="GPUs in the offer; < 1 for a fractional GPU")
    vram_gb_per_gpu: PositiveFloat | None = Field(
        default=None,
        le=MAX_VRAM_GB_PER_GPU,
        description="VRAM per GPU as reported, GB")
    pricing_model: PricingModel
    price_per_hour: PositiveFloat = Field(description="whole offer, in `currency` per hour")
    currency: str = Field(default="USD", min_length=3, max_length=3)
    price_kind: PriceKind = PriceKind.LISTED
    region: str | None = Field(default=None, description="provider's region code or location text")
    zone: str | None = None
    vcpus: PositiveFloat | None = None
    ram_gb: PositiveFloat | None = None
    disk_gb: PositiveFloat | None = None
    interconnect: Interconnect | None = Field(
        default=None,
        description="as stated by the provider")
    interconnect_gbps: PositiveFloat | None = Field(default=None, description="GPU-to-GPU, GB/s")
    network: NetworkFabric | None = None
    network_gbps: PositiveFloat | None = Field(default=None, description="node-to-node, Gb/s")
    billing_increment_s: int | None = Field(default=None, gt=0, description="billing granularity")
    availability: Availability = Availability.UNKNOWN
    available_count: int | None = Field(default=None, ge=0)
    source_url: str
    observed_at: datetime
    provider_data: ProviderData = Field(default_factory=dict)
    # How it is sold and what one order is, when the source says so (else normalize reads
    # provider_data and the sourced provider facts, pipeline/sold.py). Read by normalize, left
    # out of model_dump: an adapter's offer dumps as it did before these existed.
    term_kind: TermKind | None = Field(default=None, exclude=True)
    min_term: PositiveFloat | None = Field(default=None, exclude=True,
                                           description="in min_term_unit")
    min_term_unit: TermUnit | None = Field(default=None, exclude=True)
    term_payment: TermPayment | None = Field(default=None, exclude=True)
    gpus_per_machine: PositiveFloat | None = Field(
        default=None, le=MAX_GPU_COUNT, exclude=True, description="None: one machine")
    machines_min: int | None = Field(default=None, ge=1, exclude=True, description="per order")
    machines_max: int | None = Field(default=None, ge=1, exclude=True, description="per order")
    nvlink_domain_gpus: int | None = Field(default=None, ge=1, exclude=True)

    @field_validator("currency")
    @classmethod
    def _upper(cls, v: str) -> str:
        return v.upper()

    @field_validator("observed_at")
    @classmethod
    def _aware(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            raise ValueError("observed_at must be timezone-aware")
        return v


class Offer(BaseModel):
    """A normalized offer: canonical GPU, USD prices, geography. The warehouse row."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    provider: str
    offer_key: str
    instance_type: str | None
    gpu_label: str
    gpu_id: str | None = Field(description="canonical GPU id; None when the label is unknown")
    gpu_count: PositiveFloat
    fractional_gpu: bool
    vram_gb: PositiveFloat | None = Field(description="VRAM per GPU, GB")
    memory_type: MemoryType | None
    form_factor: FormFactor | None
    interconnect: Interconnect
    interconnect_gbps: PositiveFloat | None = Field(description="GPU-to-GPU, GB/s")
    network: NetworkFabric
    network_gbps: PositiveFloat | None = Field(description="node-to-node, Gb/s")
    pricing_model: PricingModel
    price_kind: PriceKind
    currency: str
    price_per_hour: PositiveFloat = Field(description="whole offer, provider currency per hour")
    price_usd_per_hour: PositiveFloat = Field(description="whole offer, USD per hour")
    price_usd_per_gpu_hour: PositiveFloat = Field(description="USD per GPU per hour")
    billing_increment_s: int | None
    region: str | None
    geography: str | None = Field(description="normalized: us, canada, europe, asia, ...")
    zone: str | None
    vcpus: PositiveFloat | None
    ram_gb: PositiveFloat | None
    disk_gb: PositiveFloat | None
    availability: Availability
    available_count: int | None
    source_url: str
    observed_at: datetime
    provider_data: ProviderData
    # Everything below is optional with a default meaning "as before": an on-demand (or spot)
    # offer of one machine of `gpu_count` GPUs, identified exactly, with no market depth.
    gpu_variant_assumed: bool = Field(
        default=False, description="the label fixes the GPU family and memory but not the form "
        "factor: gpu_id is the conservative variant it is sized at")
    term_kind: TermKind | None = Field(default=None, description="None: as pricing_model says")
    min_term: PositiveFloat | None = Field(default=None, description="in min_term_unit")
    min_term_unit: TermUnit | None = None
    min_term_hours: PositiveFloat | None = Field(
        default=None, description="the minimum term in hours (730 h a month, 8,760 h a year)")
    term_payment: TermPayment | None = None
    term_source: str | None = Field(default=None, description="where the term was read: "
                                    "'offer' or a provider fact's URL")
    gpus_per_machine: PositiveFloat | None = Field(default=None,
                                                   description="None: gpu_count")
    machines_min: int = Field(default=1, ge=1, description="machines one order must have")
    machines_max: int | None = Field(default=None, ge=1, description="machines one order may "
                                     "have; None: not stated")
    nvlink_domain_gpus: int | None = Field(default=None, ge=1, description="GPUs joined by "
                                           "NVLink/NVSwitch, across machines in a rack")
    order_source: str | None = Field(default=None, description="where the order shape was "
                                     "read: 'offer' or a provider fact's URL")
    ask_count: int | None = Field(default=None, ge=0, description="marketplace asks behind "
                                  "the price (the price is the lowest)")
    ask_median_usd_per_hour: PositiveFloat | None = Field(default=None, description="median "
                                                          "ask, whole offer, USD per hour")
    ask_max_usd_per_hour: PositiveFloat | None = Field(default=None, description="highest "
                                                       "ask, whole offer, USD per hour")
    host_id: str | None = Field(default=None, description="the marketplace host or machine")
    host_reliability: float | None = Field(default=None, ge=0, le=1,
                                           description="the host's reliability, 0 to 1")
    host_verified: bool | None = None

    @model_validator(mode="after")
    def _per_gpu_consistent(self) -> Offer:
        expected = self.price_usd_per_hour / self.gpu_count
        if abs(expected - self.price_usd_per_gpu_hour) > 1e-6 * max(1.0, expected):
            raise ValueError("price_usd_per_gpu_hour must equal price_usd_per_hour / gpu_count")
        if self.gpus_per_machine is not None and self.gpus_per_machine > self.gpu_count:
            raise ValueError("gpus_per_machine cannot exceed gpu_count")
        if self.machines_max is not None and self.machines_max < self.machines_min:
            raise ValueError("machines_max cannot be below machines_min")
        return self

    @property
    def machines(self) -> float:
        """Machines the listed price covers (gpu_count / gpus_per_machine)."""
        return self.gpu_count / (self.gpus_per_machine or self.gpu_count)


class Reject(BaseModel):
    """A row that a parser or a gate refused, with the reason; it lands in quarantine."""

    model_config = ConfigDict(frozen=True)

    provider: str
    reason: str
    raw: str = Field(description="the offending record or a snippet of it, as text")
    offer_key: str | None = None


class ParseResult(BaseModel):
    """What parse() returns: good offers plus the rows it skipped and why."""

    offers: list[ParsedOffer] = Field(default_factory=list)
    rejects: list[Reject] = Field(default_factory=list)
    complete: bool = Field(
        default=True,
        description="False when some part (a region, a page) could not be read: the offers are"
                    " loaded but nothing vanished is closed")

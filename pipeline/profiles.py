"""Provider profiles: billing, storage, egress, spot and networking facts, one sourced row each.

The facts live in `pipeline/data/provider_profiles.csv` (long form: provider, fact, value, unit,
source_url, verified_at, notes). A fact without a row is unknown and stays None: the engine must
not assume per-second billing or free egress because nobody wrote the number down. A row whose
value is `varies` records that the provider's own documentation says the fact is set per offer,
host or underlying cloud: the value stays None, but the fact is documented, not unknown.

The accessors (`storage_rate`, `egress_rate`, `egress_free_allowance`, `billing`, `has`) hand
the ranking each value with its source, so a reason can say where a rate comes from.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Iterable
from datetime import date
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, get_args

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from gpuscout.core.errors import DataError, UserInputError
from gpuscout.core.models import PricingModel

PROFILES_CSV = Path(__file__).parent / "data" / "provider_profiles.csv"
COLUMNS = ["provider", "fact", "value", "unit", "source_url", "verified_at", "notes"]

# Provider ids as the warehouse spells them. Listed here rather than taken from the adapter
# registry because profiles exist for providers whose adapter is not written yet.
PROVIDERS: tuple[str, ...] = (
    "aws", "azure", "gcp", "oci", "lambda", "runpod", "vastai", "jarvislabs", "ovhcloud",
    "crusoe", "hyperstack", "nebius", "fluidstack", "voltagepark", "coreweave", "paperspace",
    "digitalocean", "datacrunch", "scaleway", "vultr", "cudo", "tensordock",
    "civo", "e2e", "hotaisle", "hyperbolic", "ibmcloud", "latitude", "lium", "massedcompute",
    "primeintellect", "seeweb", "shadeform",
    "daytona", "together", "gpuai", "computepulse", "gmicloud", "sesterce", "tensorpool",
    "deepinfra", "fal",
    "huggingface", "linode",
)

SpotPricing = Literal["market", "fixed_discount", "bid"]
Fabric = Literal["InfiniBand", "RoCE", "EFA", "Ethernet"]
# block: volumes attached to one machine; shared_fs: a network filesystem several machines
# mount; instance_disk: the machine's own disk, kept while it is stopped; object: S3-style.
StorageKind = Literal["block", "shared_fs", "instance_disk", "object"]
VARIES = "varies"


def _int(v: str) -> int:
    if not re.fullmatch(r"\d+", v):
        raise ValueError(f"expected a non-negative integer, got {v!r}")
    return int(v)


def _positive_int(v: str) -> int:
    n = _int(v)
    if n == 0:
        raise ValueError("a billing increment of 0 s means nothing; use 1 for per-second")
    return n


def _float(v: str) -> float:
    x = float(v)  # ValueError on junk; nan/inf are not prices
    if not x >= 0 or x == float("inf"):
        raise ValueError(f"expected a non-negative number, got {v!r}")
    return x


def _yes_no(v: str) -> bool:
    if v not in ("yes", "no"):
        raise ValueError(f"expected yes or no, got {v!r}")
    return v == "yes"


def _runtime(v: str) -> int:
    # `none` is a documented absence of a limit (0 in the table); an unknown limit has no row.
    if v == "none":
        return 0
    if _int(v) == 0:
        raise ValueError("0 s would read as no maximum; write none for that")
    return int(v)


def _kinds(v: str) -> str:
    kinds = [k.strip() for k in v.split(",")]
    allowed = get_args(StorageKind)
    bad = [k for k in kinds if k not in allowed]
    if bad or not kinds:
        raise ValueError(f"expected a comma-separated list of {', '.join(allowed)}, got {v!r}")
    return ",".join(sorted(set(kinds), key=allowed.index))


def _choice(allowed: tuple[str, ...]) -> Callable[[str], str]:
    def parse(v: str) -> str:
        if v not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {v!r}")
        return v
    return parse


# fact -> (unit the row must carry, parser, Arrow type). The unit is checked so that a price per
# GiB-hour or a notice in minutes cannot slip in under a name that promises something else.
# The first 16 are the warehouse's original columns (migrations 0003, 0005); the rest came with
# migration 0011. Billing rows without a kind apply to every offer kind; `spot_*` billing rows
# exist only where a provider bills interruptible capacity differently.
FACTS: dict[str, tuple[str, Callable[[str], Any], pa.DataType]] = {
    "billing_increment_s": ("s", _positive_int, pa.int64()),
    "min_charge_s": ("s", _int, pa.int64()),
    "persistent_storage": ("", _yes_no, pa.bool_()),
    "storage_usd_per_gb_month": ("USD/GB-month", _float, pa.float64()),
    "storage_survives_stop": ("", _yes_no, pa.bool_()),
    "egress_usd_per_gb": ("USD/GB", _float, pa.float64()),
    "egress_free_gb_month": ("GB/month", _float, pa.float64()),
    "spot_available": ("", _yes_no, pa.bool_()),
    "spot_notice_s": ("s", _int, pa.int64()),
    "spot_pricing": ("", _choice(get_args(SpotPricing)), pa.string()),
    "ssh": ("", _yes_no, pa.bool_()),
    "docker_images": ("", _yes_no, pa.bool_()),  # runs a container image the user chooses
    "jupyter": ("", _yes_no, pa.bool_()),
    "multinode_fabric": ("", _choice(get_args(Fabric)), pa.string()),
    "multinode_gbps": ("Gb/s", _float, pa.float64()),
    "max_cluster_nodes": ("machines", _positive_int, pa.int64()),
    "spot_billing_increment_s": ("s", _positive_int, pa.int64()),
    "spot_min_charge_s": ("s", _int, pa.int64()),
    "storage_kinds": ("", _kinds, pa.string()),
    "storage_survives_termination": ("", _yes_no, pa.bool_()),  # outlives the machine
    "storage_multi_attach": ("", _yes_no, pa.bool_()),  # one volume on several machines
    "object_storage": ("", _yes_no, pa.bool_()),
    "object_storage_usd_per_gb_month": ("USD/GB-month", _float, pa.float64()),
    "ingress_usd_per_gb": ("USD/GB", _float, pa.float64()),
    "spot_max_runtime_s": ("s", _runtime, pa.int64()),  # 0: documented as unlimited
    "spot_interruption_rates": ("", _yes_no, pa.bool_()),  # published interruption rates
    "pinned_images": ("", _yes_no, pa.bool_()),  # images with pinned CUDA/driver versions
    "root_access": ("", _yes_no, pa.bool_()),
    "placement_groups": ("", _yes_no, pa.bool_()),  # machines placed close for multi-node
    "commitment_discounts": ("", _yes_no, pa.bool_()),  # reserved or committed terms
}


T = TypeVar("T")
FactState = Literal["known", "varies", "unknown"]
Answer = Literal["yes", "no", "unknown"]


class Sourced(BaseModel, Generic[T]):
    """One fact as the ranking needs it: the value (None unless `state` is known) and where it
    was read."""

    model_config = ConfigDict(frozen=True)

    fact: str
    state: FactState
    value: T | None = None
    provider: str | None = None  # whose profile it was read from
    source_url: str | None = None
    verified_at: date | None = None
    note: str | None = None


class BillingTerms(BaseModel):
    """How one offer kind is billed: the increment a run is rounded up to and the minimum."""

    model_config = ConfigDict(frozen=True)

    kind: PricingModel
    increment_s: Sourced[int]
    min_charge_s: Sourced[int]


class Requirement(StrEnum):
    """What `recommend --require` can ask of a provider."""

    SSH = "ssh"
    DOCKER = "docker"
    JUPYTER = "jupyter"
    PERSISTENT_STORAGE = "persistent-storage"
    PER_SECOND_BILLING = "per-second-billing"


def parse_requirements(text: str) -> tuple[Requirement, ...]:
    """`ssh,docker` -> (Requirement.SSH, Requirement.DOCKER); UserInputError on an unknown name."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    allowed = [r.value for r in Requirement]
    bad = [n for n in names if n not in allowed]
    if bad:
        raise UserInputError(f"unknown requirement {', '.join(map(repr, bad))} "
                             f"(known: {', '.join(allowed)})")
    return tuple(dict.fromkeys(Requirement(n) for n in names))


class ProviderProfile(BaseModel):
    """What one provider documents. None means nobody found a source for it: unknown, or, for
    the facts in `varies`, documented as set per offer, host or underlying cloud."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    billing_increment_s: int | None = None
    min_charge_s: int | None = None
    persistent_storage: bool | None = None
    storage_usd_per_gb_month: float | None = None
    storage_survives_stop: bool | None = None
    egress_usd_per_gb: float | None = None
    egress_free_gb_month: float | None = None
    spot_available: bool | None = None
    spot_notice_s: int | None = None
    spot_pricing: SpotPricing | None = None
    ssh: bool | None = None
    docker_images: bool | None = None
    jupyter: bool | None = None
    multinode_fabric: Fabric | None = None
    multinode_gbps: float | None = None
    max_cluster_nodes: int | None = None
    spot_billing_increment_s: int | None = None
    spot_min_charge_s: int | None = None
    storage_kinds: str | None = None  # comma-separated StorageKind values
    storage_survives_termination: bool | None = None
    storage_multi_attach: bool | None = None
    object_storage: bool | None = None
    object_storage_usd_per_gb_month: float | None = None
    ingress_usd_per_gb: float | None = None
    spot_max_runtime_s: int | None = None
    spot_interruption_rates: bool | None = None
    pinned_images: bool | None = None
    root_access: bool | None = None
    placement_groups: bool | None = None
    commitment_discounts: bool | None = None
    varies: frozenset[str] = frozenset()  # facts documented as set per offer, host or cloud
    sources: dict[str, str] = Field(default_factory=dict)  # fact -> URL
    verified: dict[str, date] = Field(default_factory=dict)  # fact -> date the source was read
    notes: dict[str, str] = Field(default_factory=dict)  # fact -> caveat (region, example...)

    @property
    def last_verified(self) -> date | None:
        return max(self.verified.values(), default=None)

    def state(self, fact: str) -> FactState:
        if fact in self.varies:
            return "varies"
        return "known" if getattr(self, fact) is not None else "unknown"

    def fact(self, fact: str) -> Sourced[Any]:
        """`fact` with its source, date and note; KeyError for a name that is not a fact."""
        if fact not in FACTS:
            raise KeyError(fact)
        return Sourced[Any](fact=fact, state=self.state(fact), value=getattr(self, fact),
                            provider=self.provider, source_url=self.sources.get(fact),
                            verified_at=self.verified.get(fact), note=self.notes.get(fact))

    def storage_rate(self) -> Sourced[float]:
        """Persistent storage, USD per GB-month."""
        return Sourced[float].model_validate(self.fact("storage_usd_per_gb_month").model_dump())

    def egress_rate(self) -> Sourced[float]:
        """Data out to the internet, USD per GB beyond the free allowance."""
        return Sourced[float].model_validate(self.fact("egress_usd_per_gb").model_dump())

    def egress_free_allowance(self) -> Sourced[float]:
        """GB per month of egress that costs nothing (before `egress_rate` applies)."""
        return Sourced[float].model_validate(self.fact("egress_free_gb_month").model_dump())

    def billing(self, kind: PricingModel | str = PricingModel.ON_DEMAND) -> BillingTerms:
        """The increment and minimum charge for `kind`: a kind's own rows where the provider
        bills it differently (`spot_billing_increment_s`), else the provider's general rows."""
        kind = PricingModel(kind)
        terms: dict[str, Sourced[int]] = {}
        for name in ("billing_increment_s", "min_charge_s"):
            own = f"spot_{name}"
            pick = own if kind is PricingModel.SPOT and self.state(own) != "unknown" else name
            got = self.fact(pick).model_dump()
            terms[name.removeprefix("billing_")] = Sourced[int].model_validate(
                {**got, "fact": name})
        return BillingTerms(kind=kind, increment_s=terms["increment_s"],
                            min_charge_s=terms["min_charge_s"])

    def has(self, requirement: Requirement | str) -> Answer:
        """yes / no / unknown for a `recommend --require` name. A fact that varies per offer
        answers unknown: the provider does not promise it."""
        req = Requirement(requirement)
        if req is Requirement.PER_SECOND_BILLING:
            inc = self.billing(PricingModel.ON_DEMAND).increment_s
            return "unknown" if inc.value is None else "yes" if inc.value <= 1 else "no"
        value = getattr(self, REQUIREMENT_FACT[req])
        return "unknown" if value is None else "yes" if value else "no"

    def billed_seconds(self, run_s: float) -> int | None:
        """`run_s` rounded up to the billing increment, at least the minimum charge.

        None when the increment is unknown: guessing per-second billing would flatter the
        provider. An unknown minimum charge counts as none.
        """
        inc = self.billing_increment_s
        if inc is None:
            return None
        return max(math.ceil(max(run_s, 0.0) / inc) * inc, self.min_charge_s or 0)


# The fact each `--require` name reads (per-second billing: the increment of the offer's kind).
REQUIREMENT_FACT = {
    Requirement.SSH: "ssh",
    Requirement.DOCKER: "docker_images",
    Requirement.JUPYTER: "jupyter",
    Requirement.PERSISTENT_STORAGE: "persistent_storage",
    Requirement.PER_SECOND_BILLING: "billing_increment_s",
}


def dearest(fact: str, profiles: dict[str, ProviderProfile] | None = None,
            ) -> Sourced[float] | None:
    """The highest sourced value of a price fact across the providers, with its provider and
    source; None when no provider has one. An unknown price is counted up to this bound: a
    stated assumption (no provider is known to charge more), never a fact of the provider."""
    if FACTS[fact][2] != pa.float64():
        raise KeyError(f"{fact} is not a price")
    profiles = load_profiles() if profiles is None else profiles
    known = [p.fact(fact) for p in profiles.values() if p.state(fact) == "known"]
    if not known:
        return None
    top = max(known, key=lambda s: (s.value, s.provider or ""))
    return Sourced[float].model_validate(top.model_dump())


def _fail(path: Path, line: int, msg: str) -> DataError:
    return DataError(f"{path.name}:{line}: {msg}")


def parse_profiles(rows: Iterable[dict[str, str]], *, path: Path = PROFILES_CSV,
                   ) -> dict[str, ProviderProfile]:
    """Validate rows (as csv.DictReader yields them) into one profile per listed provider.

    Every listed provider gets a profile, an empty one when no fact is known. Raises DataError
    naming the file and line for an unknown provider or fact, a value that does not parse, a
    wrong unit, a missing or non-http source, a bad date or a (provider, fact) given twice.
    """
    facts: dict[str, dict[str, Any]] = {p: {} for p in PROVIDERS}
    varies: dict[str, set[str]] = {p: set() for p in PROVIDERS}
    meta: dict[str, dict[str, dict[str, Any]]] = {
        p: {"sources": {}, "verified": {}, "notes": {}} for p in PROVIDERS}
    for line, row in enumerate(rows, start=2):  # line 1 is the header
        if None in row or any(v is None for v in row.values()):
            raise _fail(path, line, "wrong number of columns")
        r = {k: v.strip() for k, v in row.items()}
        provider, fact = r["provider"], r["fact"]
        if provider not in facts:
            raise _fail(path, line, f"unknown provider {provider!r}")
        if fact not in FACTS:
            raise _fail(path, line, f"unknown fact {fact!r} (known: {', '.join(FACTS)})")
        if fact in facts[provider] or fact in varies[provider]:
            raise _fail(path, line, f"{provider}/{fact} is given twice")
        unit, parse, _ = FACTS[fact]
        if r["unit"] != unit:
            raise _fail(path, line, f"{fact} must have unit {unit!r}, not {r['unit']!r}")
        if r["value"] == VARIES:
            varies[provider].add(fact)
        else:
            try:
                facts[provider][fact] = parse(r["value"])
            except ValueError as err:
                raise _fail(path, line, f"{provider}/{fact}: {err}") from None
        if not re.match(r"https?://\S+$", r["source_url"]):
            raise _fail(path, line, f"{provider}/{fact}: source_url must be an http(s) URL")
        try:
            verified = date.fromisoformat(r["verified_at"])
        except ValueError:
            raise _fail(path, line, f"{provider}/{fact}: verified_at {r['verified_at']!r} "
                                    "is not an ISO date") from None
        meta[provider]["sources"][fact] = r["source_url"]
        meta[provider]["verified"][fact] = verified
        if r["notes"]:
            meta[provider]["notes"][fact] = r["notes"]
    return {p: ProviderProfile.model_validate({"provider": p, **facts[p], **meta[p],
                                               "varies": frozenset(varies[p])})
            for p in PROVIDERS}


def read_profiles(path: Path) -> dict[str, ProviderProfile]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != COLUMNS:
            raise DataError(f"{path.name}: header must be {','.join(COLUMNS)}, "
                            f"not {','.join(reader.fieldnames or [])}")
        return parse_profiles(reader, path=path)


@cache
def load_profiles() -> dict[str, ProviderProfile]:
    """The shipped profiles, parsed once per process."""
    return read_profiles(PROFILES_CSV)


def profiles_table(profiles: dict[str, ProviderProfile] | None = None) -> pa.Table:
    """One row per provider, one typed column per fact (null = unknown or varies), plus
    `last_verified`.

    The warehouse loads this as the `providers` view; sources stay in the CSV, where each fact
    keeps its own URL.
    """
    profiles = load_profiles() if profiles is None else profiles
    ordered = [profiles[p] for p in sorted(profiles)]
    fields = [pa.field("provider", pa.string(), nullable=False)]
    fields += [pa.field(name, typ) for name, (_, _, typ) in FACTS.items()]
    fields.append(pa.field("last_verified", pa.date32()))
    columns: list[list[Any]] = [[p.provider for p in ordered]]
    columns += [[getattr(p, name) for p in ordered] for name in FACTS]
    columns.append([p.last_verified for p in ordered])
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, fields,
                                                                            strict=True)],
                                schema=pa.schema(fields))


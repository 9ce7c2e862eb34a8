"""Sourced provider facts about how offers are sold, read from `pipeline/data/`.

- `sale_terms.csv`: a committed offer's term or payment where the offer itself does not say.
- `order_shapes.csv`: what one order of an offer is (machines of how many GPUs, the NVLink
  domain, the fabric between its machines) where the offer itself does not say, matched by a
  pattern on the offer key.
- `spot_interruptions.csv`: per provider and kind of spot (a cloud reclaiming capacity, a
  marketplace bid, an interruptible host), the interruption rate of one machine and its basis:
  `published` (the provider's own figure), `proxy` (another provider's published figure stands
  in) or `assumed` (no figure is published; the row says what is assumed). `*` rows are the
  kind's default.

Every row carries its source URL; a row without one is a DataError.
"""

from __future__ import annotations

import csv
import math
import re
from functools import cache
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuscout.core.errors import DataError
from gpuscout.core.models import NetworkFabric, TermKind, TermPayment, TermUnit

DATA = Path(__file__).parent / "data"
TERMS_CSV = DATA / "sale_terms.csv"
ORDERS_CSV = DATA / "order_shapes.csv"
INTERRUPTIONS_CSV = DATA / "spot_interruptions.csv"
HOURS_PER_MONTH = 730.0

RateBasis = Literal["published", "proxy", "assumed"]
Row = TypeVar("Row", bound=BaseModel)


class TermFact(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    applies_to: Literal["reserved"]
    min_term: float | None = Field(default=None, gt=0)
    min_term_unit: TermUnit | None = None
    payment: TermPayment | None = None
    source_url: str = Field(min_length=1)


class OrderShape(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    offer_key_pattern: str
    gpus_per_machine: float = Field(gt=0)
    machines: int | Literal["offer"] = Field(
        description="machines one order must have; 'offer': the listed GPUs / gpus_per_machine, "
                    "no more and no fewer")
    machines_max: int | None = Field(default=None, ge=1)
    nvlink_domain_gpus: int | None = Field(default=None, ge=1)
    network: NetworkFabric | None = None
    network_gbps: float | None = Field(default=None, gt=0)
    source_url: str = Field(min_length=1)

    def matches(self, provider: str, offer_key: str) -> bool:
        return (provider == self.provider
                and re.search(self.offer_key_pattern, offer_key) is not None)


class InterruptionRate(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    kind: TermKind
    monthly_interrupted_share: float | None = Field(default=None, gt=0, lt=1)
    interruptions_per_hour: float | None = Field(default=None, gt=0)
    basis: RateBasis
    source_url: str = Field(min_length=1)
    notes: str = ""

    @property
    def per_hour(self) -> float:
        """Interruptions per machine-hour: a monthly share s of machines interrupted is a
        Poisson rate of -ln(1 - s) / 730 h."""
        if self.interruptions_per_hour is not None:
            return self.interruptions_per_hour
        assert self.monthly_interrupted_share is not None
        return -math.log(1 - self.monthly_interrupted_share) / HOURS_PER_MONTH

    @property
    def label(self) -> str:
        """How the reasons name the rate's origin."""
        if self.basis == "published":
            return f"{self.provider} publishes it"
        if self.basis == "proxy":
            return f"no {self.provider if self.provider != '*' else 'provider'} rate: AWS Spot " \
                   "Advisor's top band (>20 %/month) stands in"
        return "no published rate: one interruption per 20 h assumed"


def _rows(path: Path) -> list[dict[str, str | None]]:
    with path.open(newline="", encoding="utf-8") as f:
        return [{k: (v if v != "" else None) for k, v in r.items()} for r in csv.DictReader(f)]


def _read(path: Path, model: type[Row]) -> list[Row]:
    out = []
    for i, row in enumerate(_rows(path), start=2):
        try:
            out.append(model.model_validate(row))
        except ValidationError as exc:
            raise DataError(f"{path.name} line {i}: {exc.errors()[0]['msg']}") from None
    return out


@cache
def term_facts() -> dict[str, TermFact]:
    return {f.provider: f for f in _read(TERMS_CSV, TermFact)}


@cache
def order_shapes() -> tuple[OrderShape, ...]:
    shapes = tuple(_read(ORDERS_CSV, OrderShape))
    for s in shapes:
        re.compile(s.offer_key_pattern)
    return shapes


@cache
def interruption_rates() -> tuple[InterruptionRate, ...]:
    return tuple(_read(INTERRUPTIONS_CSV, InterruptionRate))


def spot_kind(provider: str) -> TermKind:
    """How a provider's spot offers are sold: its own row's kind, else a cloud's spot."""
    own = [r.kind for r in interruption_rates() if r.provider == provider]
    return own[0] if own else TermKind.SPOT


def interruption_rate(provider: str, kind: TermKind) -> InterruptionRate | None:
    """The provider's rate for this kind, else the kind's default row."""
    rows = interruption_rates()
    return (next((r for r in rows if r.provider == provider and r.kind == kind), None)
            or next((r for r in rows if r.provider == "*" and r.kind == kind), None))

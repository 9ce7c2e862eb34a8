"""Managed fine-tuning priced per training token, a row of its own kind beside rented GPUs.

`pipeline/data/managed_finetuning.csv` holds one sourced row per (service, model or size band,
method) as the service's page prints it; `data/managed_finetuning/PROVENANCE.md` says which
page each came from. A row matches a model by its Hugging Face id (`model_pattern`, a
case-insensitive glob) or by its parameter count (`min_params_b`..`max_params_b`, inclusive,
empty for an open end). Within one service and method, a matching id row is the page's own
price for that model and wins over the size bands.

The cost is price × training tokens / 1e6, at least the minimum charge where the page states
one. Training tokens are the job's (dataset tokens × epochs), which is what every recorded row
bills (`counts_epochs` = yes); validation tokens, billed on top where
`bills_validation_tokens` = yes, are not in them and the quote says so.
"""

from __future__ import annotations

import csv
import math
from datetime import date
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path
from typing import Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.core.errors import DataError, UserInputError

MANAGED_CSV = Path(__file__).parent.parent / "data" / "managed_finetuning.csv"
COLUMNS = ["service", "model_pattern", "min_params_b", "max_params_b", "method",
           "usd_per_million_training_tokens", "minimum_charge_usd", "counts_epochs",
           "bills_validation_tokens", "source_url", "source_date", "read_on", "note"]

ServiceMethod = Literal["lora", "full"]

# The job's method -> the method a service sells for it. QLoRA is priced as LoRA: the service
# trains a LoRA adapter (in its own precision), which is the artifact a QLoRA job produces.
SERVICE_METHOD: dict[str, ServiceMethod] = {"lora": "lora", "qlora": "lora", "full": "full"}


class ManagedPrice(BaseModel):
    """One row of the CSV: a service's price per 1M training tokens for a model or size band."""

    model_config = ConfigDict(frozen=True)

    service: str
    model_pattern: str | None = Field(description="Hugging Face id glob; None: a size band")
    min_params_b: float | None = Field(description="billions, inclusive; None: no lower end")
    max_params_b: float | None = Field(description="billions, inclusive; None: no upper end")
    method: ServiceMethod
    usd_per_million_training_tokens: float
    minimum_charge_usd: float | None = Field(description="per job, where the page states one")
    bills_validation_tokens: bool | None = Field(description="None: the page does not say")
    source_url: str
    source_date: date | None = Field(description="the date the page shows; None: undated")
    read_on: date = Field(description="the day the row was read from the page")
    note: str

    @property
    def label(self) -> str:
        """The model or band as the row states it: "mistralai/Mixtral-8x7B*", "16.1-80B"."""
        if self.model_pattern:
            return self.model_pattern
        if self.min_params_b is None:
            return f"up to {self.max_params_b:g}B"
        if self.max_params_b is None:
            return f"over {self.min_params_b:g}B"
        return f"{self.min_params_b:g}-{self.max_params_b:g}B"

    def matches_id(self, model_id: str) -> bool:
        return bool(self.model_pattern) and fnmatchcase(model_id.lower(),
                                                        (self.model_pattern or "").lower())

    def matches_size(self, params_b: float) -> bool:
        if self.model_pattern:
            return False
        low_ok = self.min_params_b is None or params_b >= self.min_params_b
        return low_ok and (self.max_params_b is None or params_b <= self.max_params_b)


class ManagedQuote(BaseModel):
    """A managed service's price for the job's training tokens."""

    model_config = ConfigDict(frozen=True)

    service: str
    method: ServiceMethod = Field(description="the method the service sells (lora, full)")
    matched_by: Literal["model_id", "size_band"]
    row: ManagedPrice
    training_tokens: float
    token_cost_usd: float = Field(description="price × training tokens / 1e6")
    cost_usd: float = Field(description="token cost, at least the minimum charge")
    notes: list[str]

    @property
    def source_url(self) -> str:
        return self.row.source_url


def _number(text: str, *, optional: bool) -> float | None:
    if text == "" and optional:
        return None
    x = float(text)  # ValueError on junk
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"expected a non-negative number, got {text!r}")
    return x


def _yes_no(text: str) -> bool | None:
    if text not in ("yes", "no", ""):
        raise ValueError(f"expected yes, no or empty, got {text!r}")
    return None if text == "" else text == "yes"


def _row(r: dict[str, str]) -> ManagedPrice:
    if r["method"] not in get_args(ServiceMethod):
        allowed = "|".join(get_args(ServiceMethod))
        raise ValueError(f"method {r['method']!r} is not one of {allowed}")
    if r["counts_epochs"] != "yes":
        raise ValueError("counts_epochs must be yes: a row billing dataset tokens once would need "
                         "the job's epochs, which the quote does not take")
    if not r["source_url"].startswith("https://"):
        raise ValueError(f"source_url {r['source_url']!r} is not an https address")
    row = ManagedPrice(
        service=r["service"], model_pattern=r["model_pattern"] or None,
        min_params_b=_number(r["min_params_b"], optional=True),
        max_params_b=_number(r["max_params_b"], optional=True),
        method=cast(ServiceMethod, r["method"]),
        usd_per_million_training_tokens=cast(float, _number(
            r["usd_per_million_training_tokens"], optional=False)),
        minimum_charge_usd=_number(r["minimum_charge_usd"], optional=True),
        bills_validation_tokens=_yes_no(r["bills_validation_tokens"]),
        source_url=r["source_url"],
        source_date=date.fromisoformat(r["source_date"]) if r["source_date"] else None,
        read_on=date.fromisoformat(r["read_on"]), note=r["note"])
    banded = row.min_params_b is not None or row.max_params_b is not None
    if banded == bool(row.model_pattern):
        raise ValueError("a row needs either a model_pattern or a size band, not both or neither")
    return row


def read_managed(path: Path) -> list[ManagedPrice]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != COLUMNS:
            raise DataError(f"{path.name}: columns {reader.fieldnames} are not {COLUMNS}")
        rows = list(reader)
    out = []
    for line, r in enumerate(rows, start=2):
        try:
            out.append(_row(r))
        except ValueError as exc:
            raise DataError(f"{path.name}:{line}: {exc}") from None
    return out


@cache
def managed_prices() -> tuple[ManagedPrice, ...]:
    return tuple(read_managed(MANAGED_CSV))


def _quote(row: ManagedPrice, matched_by: Literal["model_id", "size_band"], job_method: str,
           training_tokens: float) -> ManagedQuote:
    token_cost = row.usd_per_million_training_tokens * training_tokens / 1e6
    cost = max(token_cost, row.minimum_charge_usd or 0.0)
    notes = [f"{row.service} {row.method} {row.label}: "
             f"${row.usd_per_million_training_tokens:g}/1M training tokens ({row.source_url})"]
    if job_method != row.method:
        notes.append(f"the job is {job_method}; priced as the service's {row.method}")
    if row.minimum_charge_usd is not None and cost > token_cost:
        notes.append(f"the minimum charge of ${row.minimum_charge_usd:g} applies")
    if row.bills_validation_tokens:
        notes.append("validation tokens are billed on top at the same rate")
    if row.source_date is None:
        notes.append(f"the page is undated (read {row.read_on})")
    return ManagedQuote(service=row.service, method=row.method, matched_by=matched_by, row=row,
                        training_tokens=training_tokens, token_cost_usd=token_cost,
                        cost_usd=cost, notes=notes)


def managed_quotes(model_id: str, params_b: float, method: str, training_tokens: float,
                   prices: tuple[ManagedPrice, ...] | None = None) -> list[ManagedQuote]:
    """Every recorded managed service's cost for these training tokens, cheapest first.

    `params_b`: the model's parameters in billions (for the size bands); `method`: the job's
    (lora, qlora, full; others have no managed price); `training_tokens`: dataset × epochs.
    No match (an unpriced method, a size outside every band) gives an empty list.
    """
    if not (math.isfinite(params_b) and params_b > 0):
        raise UserInputError(f"params_b must be a positive number of billions, got {params_b!r}")
    if not (math.isfinite(training_tokens) and training_tokens > 0):
        raise UserInputError(f"training_tokens must be positive, got {training_tokens!r}")
    service_method = SERVICE_METHOD.get(method)
    if service_method is None:
        return []
    rows = [p for p in (managed_prices() if prices is None else prices)
            if p.method == service_method]
    quotes = []
    for service in dict.fromkeys(p.service for p in rows):
        own = [p for p in rows if p.service == service]
        by_id = [p for p in own if p.matches_id(model_id)]
        matched = [(p, "model_id") for p in by_id] or \
                  [(p, "size_band") for p in own if p.matches_size(params_b)]
        quotes += [_quote(p, cast(Literal["model_id", "size_band"], how), method,
                          training_tokens) for p, how in matched]
    return sorted(quotes, key=lambda q: (q.cost_usd, q.service))

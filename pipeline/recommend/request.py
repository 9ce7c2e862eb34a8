"""What a recommendation is asked: the training volume and how to rank."""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from gpuscout.core.errors import UserInputError
from gpuscout.pipeline.profiles import Requirement

Objective = Literal["cost", "time", "balanced"]
SpotPolicy = Literal["allow", "prefer", "forbid"]
# Committed offers (a minimum term is paid whether used or not): "none" ranks only those whose
# term the job's own time covers; "allow" ranks every one at its whole-term cost; "max-months"
# those whose term is at most `max_commitment_months`, at their whole-term cost.
Commitment = Literal["none", "allow", "max-months"]
# --objective balanced: the cheapest of the offers within this share of the fastest's hours.
BALANCED_SLACK = 0.25

# Restart after an interruption: provision, pull the image, load model and checkpoint. Ten
# minutes is an assumption (no provider publishes it); it is a parameter of the request.
RESTART_S = 600.0
# A nightly refresh keeps prices a day old; a week allows for a provider failing a few nights
# running. Older prices are not ranked (--explain lists them). Prices replayed from recorded
# captures are historical by construction and exempt: they are ranked and labelled as such.
MAX_PRICE_AGE_DAYS = 7.0


class RecommendRequest(BaseModel):
    tokens: int = Field(gt=0, description="training tokens in total (dataset × epochs)")
    objective: Objective = "cost"
    spot: SpotPolicy = "allow"
    max_hours: float | None = Field(default=None, gt=0)
    checkpoint_every_min: float | None = Field(
        default=None, gt=0,
        description="minutes between checkpoints; None (the default): chosen per offer by "
                    "Young/Daly from its checkpoint write time and its interruption rate")
    max_price_age_days: float | None = Field(
        default=MAX_PRICE_AGE_DAYS, gt=0,
        description="live prices last seen longer ago are not ranked; None: no limit")
    storage_gb: float | None = Field(default=None, ge=0, description="else derived from the job")
    dataset_tokens: int | None = Field(
        default=None, gt=0, description="tokens of the dataset on disk (one epoch); None: "
        "`tokens`")
    keep_days: float = Field(default=0.0, ge=0, description="days the run's storage is kept "
                             "(and charged) after the run")
    download_gb: float | None = Field(default=None, ge=0, description="egress at the end; "
                                      "None: the final weights (the adapter of a PEFT run)")
    require: tuple[Requirement, ...] = Field(
        default=(), description="what an offer's provider must document (ssh, docker, "
        "jupyter, persistent-storage, per-second-billing); offers where it is missing or "
        "unknown are set aside")
    providers: list[str] | None = None
    region: str | None = None
    limit: int = Field(default=10, ge=1)
    restart_s: float = Field(default=RESTART_S, ge=0)
    now: datetime | None = None
    commitment: Commitment = "none"
    max_commitment_months: float | None = Field(default=None, gt=0)
    max_usd: float | None = Field(default=None, gt=0, description="the whole run, USD")
    min_reliability: float | None = Field(
        default=None, ge=0, le=1, description="a marketplace host's reliability, 0 to 1; "
        "offers whose source states none are kept")
    balanced_slack: float = Field(default=BALANCED_SLACK, ge=0)

    # the user's own runs (gpuscout.pipeline.measured.offers): those of the job's framework
    # correct the machines of their GPU; pessimistic ranks at the slow end of each range
    framework: str = "hf"
    correction: bool = True
    pessimistic: bool = False

    @model_validator(mode="after")
    def _months_with_max_months(self) -> RecommendRequest:
        if (self.commitment == "max-months") != (self.max_commitment_months is not None):
            raise ValueError("commitment 'max-months' takes max_commitment_months, and only it")
        return self


_MAX_MONTHS = re.compile(r"^max-months[\s=:]*(\d+(?:\.\d+)?)$")


def commitment_from_option(text: str) -> tuple[Commitment, float | None]:
    """--commitment none | allow | max-months N (also "max-months=N")."""
    value = " ".join(text.strip().lower().split())
    if value in ("none", "allow"):
        return ("none" if value == "none" else "allow"), None
    m = _MAX_MONTHS.match(value)
    if m is None or float(m.group(1)) <= 0:
        raise UserInputError(f"--commitment takes none, allow or max-months N (months > 0), "
                             f"got {text!r}")
    return "max-months", float(m.group(1))


# Bounds that no fine-tuning run reaches (a frontier pre-training run is ~1.5e13 tokens), so a
# value past them is a typo, refused before any arithmetic.
MAX_TOKENS = 1e15
MAX_EPOCHS = 1000.0


def tokens_from_options(tokens: float | None, dataset_tokens: float | None,
                        epochs: float | None) -> int:
    """--tokens, or --dataset-tokens × --epochs (exactly one way), each a finite number in a
    range a fine-tuning run can have."""
    for flag, value in (("--tokens", tokens), ("--dataset-tokens", dataset_tokens),
                        ("--epochs", epochs)):
        if value is not None and not math.isfinite(value):
            raise UserInputError(f"{flag} must be a finite number, got {value}")
    if epochs is not None and not 0 < epochs <= MAX_EPOCHS:
        raise UserInputError(f"--epochs must be above 0 and at most {MAX_EPOCHS:g}, "
                             f"got {epochs:g}")
    if epochs is not None and dataset_tokens is None:
        raise UserInputError("--epochs multiplies --dataset-tokens: give both (or --tokens "
                             "alone)")
    if tokens is not None and dataset_tokens is not None:
        raise UserInputError("give --tokens or --dataset-tokens (with --epochs), not both")
    if tokens is None:
        if dataset_tokens is None:
            raise UserInputError("give the training volume: --tokens N, or --dataset-tokens "
                                 "N --epochs E")
        tokens = dataset_tokens * (1.0 if epochs is None else epochs)
    if not 1 <= tokens <= MAX_TOKENS:
        raise UserInputError(f"the training volume must be between 1 and {MAX_TOKENS:.0e} "
                             f"tokens, got {tokens:g}")
    return int(tokens)

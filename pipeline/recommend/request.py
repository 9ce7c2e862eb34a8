"""What a recommendation is asked: the training volume and how to rank."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from gpuscout.core.errors import UserInputError

Objective = Literal["cost", "time", "balanced"]
SpotPolicy = Literal["allow", "prefer", "forbid"]

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
    providers: list[str] | None = None
    region: str | None = None
    limit: int = Field(default=10, ge=1)
    restart_s: float = Field(default=RESTART_S, ge=0)
    now: datetime | None = None
    # the user's own runs (gpuscout.pipeline.measured.offers): those of the job's framework
    # correct the machines of their GPU; pessimistic ranks at the slow end of each range
    framework: str = "hf"
    correction: bool = True
    pessimistic: bool = False


def tokens_from_options(tokens: float | None, dataset_tokens: float | None,
                        epochs: float | None) -> int:
    """--tokens, or --dataset-tokens × --epochs (exactly one way)."""
    if tokens is not None and dataset_tokens is not None:
        raise UserInputError("give --tokens or --dataset-tokens (with --epochs), not both")
    if tokens is None:
        if dataset_tokens is None:
            raise UserInputError("give the training volume: --tokens N, or --dataset-tokens "
                                 "N --epochs E")
        tokens = dataset_tokens * (epochs or 1.0)
    if tokens < 1:
        raise UserInputError(f"the training volume must be at least 1 token, got {tokens}")
    return int(tokens)

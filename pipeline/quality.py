"""Quality gates: bad rows go to quarantine; a suspicious refresh is refused as a whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.models import Offer, Reject
from pipeline.settings import Settings


@dataclass
class RowGateResult:
    offers: list[Offer] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)


def gate_rows(offers: Sequence[Offer], settings: Settings) -> RowGateResult:
    """Quarantine absurd prices and duplicate offer keys (the first occurrence is kept)."""
    out = RowGateResult()
    seen: set[str] = set()
    for o in offers:
        reason = None
        if o.offer_key in seen:
            reason = f"duplicate offer_key {o.offer_key!r} in one refresh"
        elif not (settings.min_usd_per_gpu_hour <= o.price_usd_per_gpu_hour
                  <= settings.max_usd_per_gpu_hour):
            reason = (f"absurd price ${o.price_usd_per_gpu_hour:.4f}/GPU-hour outside "
                      f"[{settings.min_usd_per_gpu_hour}, {settings.max_usd_per_gpu_hour}]")
        if reason:
            out.rejects.append(Reject(provider=o.provider, offer_key=o.offer_key, reason=reason,
                                      raw=o.model_dump_json()))
        else:
            seen.add(o.offer_key)
            out.offers.append(o)
    return out


def refresh_refusal(n_offers: int, last_good: int | None, settings: Settings) -> str | None:
    """Why a refresh must not be loaded, or None. Compares with the last good refresh."""
    if n_offers == 0:
        return "refresh produced no offers"
    if last_good is not None and last_good >= settings.collapse_min_offers \
            and n_offers < settings.collapse_ratio * last_good:
        return (f"offer count collapsed: {n_offers} vs {last_good} in the last good refresh "
                f"(threshold {settings.collapse_ratio:.0%})")
    return None

"""Quality gates: bad rows go to quarantine; a suspicious refresh is refused as a whole.

Three levels, all thresholds in `Settings` (`GPUSCOUT_*`, see the README's Operations section):

- rows, on their own (`gate_rows`): an absurd price, an implausible VRAM or GPU count, a
  duplicate offer key;
- rows against the warehouse (`gate_prices`): a price far outside its GPU's band, the median
  of that GPU's open offers across providers; when most rows are outside, the whole refresh is
  refused (prices jumped: a unit or currency change upstream);
- the refresh as a whole (`refresh_refusal`): no offers, or an offer count that collapsed
  against the provider's last good refresh.

`unread_rows` decides what rows that were read but not loaded mean for the history: their
offers must not be closed as if they had vanished.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpuscout.core.models import Offer, Reject
from gpuscout.pipeline.settings import Settings


@dataclass
class RowGateResult:
    offers: list[Offer] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)


ABSURD = "absurd price"  # how the absolute price gate's reasons start


def _row_problem(o: Offer, settings: Settings) -> str | None:
    price = o.price_usd_per_gpu_hour
    if not (settings.min_usd_per_gpu_hour <= price <= settings.max_usd_per_gpu_hour):
        return (f"{ABSURD}: ${price:.4f}/GPU-hour outside "
                f"[{settings.min_usd_per_gpu_hour}, {settings.max_usd_per_gpu_hour}]")
    if o.vram_gb is not None and o.vram_gb > settings.max_vram_gb:
        return f"implausible VRAM: {o.vram_gb:g} GB per GPU (limit {settings.max_vram_gb:g})"
    if o.gpu_count > settings.max_gpu_count:
        return (f"implausible GPU count: {o.gpu_count:g} GPUs in one offer "
                f"(limit {settings.max_gpu_count:g})")
    return None


def gate_rows(offers: Sequence[Offer], settings: Settings) -> RowGateResult:
    """Quarantine absurd prices, implausible sizes and duplicate offer keys (the first
    occurrence of a key is kept)."""
    out = RowGateResult()
    seen: set[str] = set()
    for o in offers:
        reason = None
        if o.offer_key in seen:
            reason = f"duplicate offer_key: {o.offer_key!r} twice in one refresh"
        else:
            reason = _row_problem(o, settings)
        if reason:
            out.rejects.append(Reject(provider=o.provider, offer_key=o.offer_key, reason=reason,
                                      raw=o.model_dump_json()))
        else:
            seen.add(o.offer_key)
            out.offers.append(o)
    return out


@dataclass
class BandResult:
    offers: list[Offer] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    checked: int = 0  # rows that could be checked (a band, a last good price, or absurd)
    jumped: int = 0  # of those, rows that are absurd, out of band or moved > price_jump_factor
    refusal: str | None = None  # set when prices jumped as a whole


def gate_prices(offers: Sequence[Offer], medians: Mapping[str, tuple[float, int]],
                previous: Mapping[str, tuple[float, str]], settings: Settings,
                absurd: int = 0) -> BandResult:
    """Quarantine rows priced outside their GPU's band; refuse when most rows jumped.

    `medians`: canonical GPU -> (median USD per GPU-hour of its open offers, how many), i.e. the
    last good data of every provider. A GPU with fewer than `price_band_min_offers` offers, or
    an offer whose GPU is unknown, has no band and passes (the absolute row gate still holds).
    `previous`: offer key -> (price per GPU-hour, currency) of the provider's open versions.
    `absurd`: rows the absolute row gate already quarantined; they count as jumped.
    """
    out = BandResult(checked=absurd, jumped=absurd)
    factor, jump = settings.price_band_factor, settings.price_jump_factor
    for o in offers:
        ref = medians.get(o.gpu_id) if o.gpu_id else None
        banded = ref is not None and ref[1] >= settings.price_band_min_offers and ref[0] > 0
        before = previous.get(o.offer_key)
        moved = None
        if before is not None and before[1] == o.currency and before[0] > 0:
            moved = (o.price_per_hour / o.gpu_count) / before[0]
        if banded or moved is not None:
            out.checked += 1
        if moved is not None and not 1 / jump <= moved <= jump:
            out.jumped += 1
        if not banded:
            out.offers.append(o)
            continue
        assert ref is not None
        median, n = ref
        ratio = o.price_usd_per_gpu_hour / median
        if 1 / factor <= ratio <= factor:
            out.offers.append(o)
            continue
        if moved is None or 1 / jump <= moved <= jump:
            out.jumped += 1
        out.rejects.append(Reject(
            provider=o.provider, offer_key=o.offer_key, raw=o.model_dump_json(),
            reason=(f"price out of band: ${o.price_usd_per_gpu_hour:.4f}/GPU-hour is "
                    f"{ratio:.3g}x the median ${median:.4f} of {n} open {o.gpu_id} offers "
                    f"(band x{factor:g})")))
    if out.checked >= settings.price_jump_min_rows and \
            out.jumped > settings.price_jump_refuse_share * out.checked:
        out.refusal = (f"prices jumped: {out.jumped} of {out.checked} rows are absurd, outside "
                       f"x{factor:g} of their GPU's median or moved more than x{jump:g} since "
                       f"the last good refresh (threshold {settings.price_jump_refuse_share:.0%})")
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


@dataclass
class Unread:
    """Rows a refresh read but did not load, and what that means for closing offers."""

    keep_open: set[str] = field(default_factory=set)  # offer keys not to close as vanished
    new_unkeyed: list[str] = field(default_factory=list)  # reasons of new rows without a key


def unread_rows(parser_rejects: Iterable[Reject], held_back: Iterable[Reject],
                previous: Iterable[tuple[str | None, str]]) -> Unread:
    """Which offers must stay open although a complete refresh did not load them.

    - Rows the pipeline held back (absurd or out-of-band price, no USD rate, ...) are offers
      that were read: they always stay open at their last good version.
    - A row the parser rejected for a reason it did not give for that key in the provider's
      last loaded refresh (`previous`: its quarantined (offer_key, reason)) stays open tonight:
      a field that broke upstream must not read as the offer vanishing. When the same reason
      recurs, the parser's judgement stands (an offer that became "contact sales" then closes).
    - Rejected rows without a key cannot be matched to an offer; when there are more of them
      with some reason than last time, they are listed in `new_unkeyed` and the caller closes
      nothing.
    """
    out = Unread(keep_open={r.offer_key for r in held_back if r.offer_key})
    before = list(previous)
    keyed_before = {(k, r) for k, r in before if k}
    unkeyed_before = Counter(r for k, r in before if not k)
    unkeyed_now: Counter[str] = Counter()
    for r in parser_rejects:
        if r.offer_key:
            if (r.offer_key, r.reason) not in keyed_before:
                out.keep_open.add(r.offer_key)
        else:
            unkeyed_now[r.reason] += 1
    out.new_unkeyed = [reason for reason, n in unkeyed_now.items()
                       if n > unkeyed_before[reason]]
    return out


def reason_kinds(rejects: Iterable[Reject]) -> str:
    """'absurd price (2), duplicate offer_key (1)': the run log's summary of held-back rows."""
    kinds = Counter(_kind(r.reason) for r in rejects)
    return ", ".join(f"{k} ({n})" for k, n in kinds.most_common())


def _kind(reason: str) -> str:
    head = reason.split(":", 1)[0].strip()
    return head if len(head) <= 60 else head[:57] + "..."

"""Quality gates: bad rows go to quarantine; a suspicious refresh is refused as a whole.

Three levels, all thresholds in `Settings` (`GPUSCOUT_*`, see the README's Operations section):

- rows, on their own (`gate_rows`): an absurd price, an implausible VRAM or GPU count, a
  duplicate offer key;
- rows against the warehouse (`gate_prices`): a price far outside its GPU's band, the median
  of that GPU's open offers across providers; when most rows are outside, the whole refresh is
  refused (prices jumped: a unit or currency change upstream);
- the refresh as a whole (`hold_back`): no offers; or drift against the provider's last good
  load: its offer count collapsed, or a field it filled on most offers (VRAM, stock, region,
  interconnect, spot prices: `field_coverage`) came back empty on most. Drift is what a format
  change upstream looks like when nothing fails: a renamed key read as "not given".

`unread_rows` decides what rows that were read but not loaded mean for the history: their
offers must not be closed as if they had vanished.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from gpuscout.core.models import Availability, Offer, ParsedOffer, PricingModel, Reject
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


# The fields the drift gate watches: name -> (how the run log and messages call it, whether an
# offer carries it). Spot is measured apart (`field_coverage`).
WATCHED: dict[str, tuple[str, Callable[[ParsedOffer], bool]]] = {
    "vram": ("VRAM", lambda o: o.vram_gb_per_gpu is not None),
    "stock": ("stock", lambda o: o.availability is not Availability.UNKNOWN
              or o.available_count is not None),
    "region": ("region", lambda o: o.region is not None),
    "interconnect": ("interconnect", lambda o: o.interconnect is not None
                     or o.interconnect_gbps is not None),
}
SPOT = "spot"
LABELS = {**{k: label for k, (label, _) in WATCHED.items()}, SPOT: "spot prices"}


def field_coverage(offers: Sequence[ParsedOffer]) -> dict[str, float]:
    """Field -> share of `offers` (as the adapter read them, before the catalog fills anything
    in) that carry it; `spot`: spot offers per on-demand offer, at most 1 (absent without
    on-demand offers). Empty for no offers: nothing to measure."""
    if not offers:
        return {}
    out = {name: sum(has(o) for o in offers) / len(offers)
           for name, (_, has) in WATCHED.items()}
    on_demand = sum(o.pricing_model is PricingModel.ON_DEMAND for o in offers)
    if on_demand:
        out[SPOT] = min(1.0, sum(o.pricing_model is PricingModel.SPOT for o in offers)
                        / on_demand)
    return out


HoldStatus = Literal["refused", "drift"]


@dataclass(frozen=True)
class HoldBack:
    """Why a refresh is not loaded: its run status and the run log's reason."""

    status: HoldStatus
    reason: str


NO_OFFERS = "refresh produced no offers"


def new_rejects(parser_rejects: Iterable[Reject],
                previous: Iterable[tuple[str | None, str]]) -> list[Reject]:
    """The parser's rejects that its last loaded refresh did not make (`previous`: that
    refresh's quarantined (offer_key, reason)): rows that stopped being readable tonight."""
    before = set(previous)
    return [r for r in parser_rejects if (r.offer_key, r.reason) not in before]


def hold_back(n_offers: int, coverage: Mapping[str, float], parser_rejects: Sequence[Reject],
              last_offers: int | None, last_coverage: Mapping[str, float] | None,
              settings: Settings, *, complete: bool = True) -> HoldBack | None:
    """Whether a refresh must be held back as a whole, against the provider's last good load
    (`last_offers` loaded, `last_coverage` its `field_coverage`; None when unknown).
    `parser_rejects`: the rows the parser refused tonight and not last time (`new_rejects`).

    - no offers and no row newly refused: an empty listing (or one held back row by row: no
      USD rate, absurd prices), refused;
    - drift: the offer count fell below `collapse_ratio` of the last good load (of at least
      `collapse_min_offers` offers), or a field the last good load carried on more than
      `drift_field_share` of its offers is carried by fewer tonight. The reason names each
      field and, when the count fell, what the parser refused (a field gone from every row
      turns rows into rejects rather than into empty fields). Spot prices are rows of their
      own: when a part of the source was not read (`complete` False), the spot rows it held
      are missing, not emptied, and nothing is closed for them, so they are not checked then;
    - no offers otherwise (every row refused, nothing to compare with): refused.
    """
    if n_offers == 0 and not parser_rejects:
        return HoldBack("refused", NO_OFFERS)
    drift = [*_count_fell(n_offers, last_offers, parser_rejects, settings),
             *_fields_emptied(n_offers, coverage, last_coverage, settings,
                              skip=() if complete else (SPOT,))]
    if drift:
        return HoldBack("drift", "drift: " + "; ".join(drift))
    return HoldBack("refused", NO_OFFERS) if n_offers == 0 else None


def _count_fell(n_offers: int, last_offers: int | None, parser_rejects: Sequence[Reject],
                settings: Settings) -> list[str]:
    if last_offers is None or last_offers < settings.collapse_min_offers \
            or n_offers >= settings.collapse_ratio * last_offers:
        return []
    why = f" (rows the parser refused: {reason_kinds(parser_rejects)})" if parser_rejects else ""
    return [f"offer count collapsed: {n_offers} vs {last_offers} in the last good refresh "
            f"(threshold {settings.collapse_ratio:.0%}){why}"]


def _fields_emptied(n_offers: int, coverage: Mapping[str, float],
                    last_coverage: Mapping[str, float] | None, settings: Settings,
                    skip: Sequence[str] = ()) -> list[str]:
    if not last_coverage or n_offers == 0:
        return []
    share = settings.drift_field_share
    out = []
    for name, label in LABELS.items():
        if name in skip:
            continue
        before, now = last_coverage.get(name), coverage.get(name)
        # (spot is not measured without on-demand offers to measure it against)
        if before is not None and now is not None and before > share and now < share:
            out.append(f"{label} empty on {1 - now:.0%} of {n_offers} offers (filled on "
                       f"{before:.0%} in the last good load)")
    return out


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

"""The reasons written next to each offer shown, and why a rejected one cannot serve the run.

shown.sql returns, for the few rows shown, the facts of the offer, its pricing pair and its plan
(the row's `why`); this module turns them into sentences. It follows SQL's rule for missing
facts: a sentence that needs a fact the row lacks (None) is left out, never written with a
blank in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuscout.pipeline.profiles import REQUIREMENT_FACT, Requirement, Sourced, load_profiles
from gpuscout.pipeline.recommend.job_storage import JobStorage
from gpuscout.pipeline.recommend.pair_costs import CostTerms
from gpuscout.pipeline.recommend.pricing import MISSING

# Interconnects between the GPUs of one machine that need no warning for gradient traffic.
FAST_LINKS = ("NVSwitch", "NVLink", "InfinityFabric")
BILLING_UNITS = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}


@dataclass(frozen=True)
class Terms:
    """What the request and the run's sizes add to a row's facts: the terms its pair was
    priced with, and those only the reasons state."""

    run: CostTerms
    checkpoint_gb: float
    write_gbps: float
    hw_failures_per_gpu_hour: float
    dtype: str  # the precision asked
    stale_days: float
    max_age_days: float | None
    commitment: str = "none"
    max_commitment_months: float | None = None
    max_usd: float | None = None
    min_reliability: float | None = None
    storage: JobStorage | None = None  # what the run keeps, item by item
    # the dearest sourced rates an unknown price is counted up to
    storage_bound: Sourced[float] | None = None
    egress_bound: Sourced[float] | None = None


def _text(pattern: str, *args: Any) -> str | None:
    """`pattern % args`, or None when a fact it needs is missing."""
    return None if any(a is None for a in args) else pattern % args


def _joined(*parts: str | None) -> str | None:
    """The parts end to end, or None when one is missing."""
    return None if any(p is None for p in parts) else "".join(parts)  # type: ignore[arg-type]


def _gpus(row: dict[str, Any]) -> int:
    return round(row["gpus_per_node"] * row["nodes"])


def _usd(x: float | None) -> str | None:
    return None if x is None else f"${x:,.2f}"


def _cents(x: float | None) -> str | None:
    """A small charge: "$0.04", "< $0.01" (not "$0.00" for something that costs)."""
    return None if x is None else "< $0.01" if 0 < x < 0.005 else _usd(x)


def _term_text(why: dict[str, Any]) -> str:
    """"36 months (26,280 h, paid monthly)"."""
    length, unit, hours = why["min_term"], why["min_term_unit"], why["term_hours"]
    said = (f"{length:g} {unit}{'s' if length != 1 else ''}" if length and unit
            else "its minimum term")
    paid = why["term_payment"]
    inside = [f"{hours:,.0f} h" if hours else None,
              f"paid {paid}" if paid else "payment schedule not stated"]
    return f"{said} ({', '.join(p for p in inside if p)})"


def rejected_because(row: dict[str, Any], why: dict[str, Any], terms: Terms) -> str | None:
    """Why an offer cannot serve the run (None: it can), the first reason that applies."""
    why = {**why, "term_hours": row.get("min_term_hours")}
    rule = _rule(row, why, terms)
    if rule is not None:
        return rule
    if why["reject_reason"] is not None:
        note = (f"; no inter-node fabric known for {row['provider']}: not placed on several "
                "machines" if why["no_fabric_note"] else "")
        if row.get("set_aside") == "multi-machine spot without a published rate":
            note = _text("; at the %s rate it would take %.1f h and cost %s",
                         why["interruption_basis"], why["expected_hours"],
                         _usd(row["total_usd"])) or ""
        return why["reject_reason"] + note
    if why["too_old"]:
        return _text("price last seen %d days ago, older than --max-price-age %g days",
                     row["price_age_days"], terms.max_age_days)
    if why["expected_s"] is None:
        return _text("interrupted too often (%.3f/h over %d machine(s)) for %.0f-min "
                     "checkpoints: it would never finish", why["interrupts_per_hour"],
                     row["nodes"], why["interval_s"] / 60)
    if why["too_slow"]:
        assert terms.run.max_hours is not None
        if row["pricing_model"] == "spot" and why["run_s"] / 3600 <= terms.run.max_hours:
            return _text("takes %.1f h with the expected spot restarts (%.1f h without "
                         "interruptions), over --max-hours %.1f", why["expected_hours"],
                         why["run_s"] / 3600, terms.run.max_hours)
        return _text("takes %.1f h, over --max-hours %.1f", why["expected_hours"],
                     terms.run.max_hours)
    return None


def _rule(row: dict[str, Any], why: dict[str, Any], terms: Terms) -> str | None:
    """An offer that could run the job, set aside by a rule of the request."""
    kind = row.get("set_aside")
    if kind == "committed beyond the job":
        return _text("commits to %s for a job of %.2f h: the whole term costs %s "
                     "(--commitment allow ranks it at that cost)", _term_text(why),
                     why["expected_hours"], _usd(row["total_usd"]))
    if kind == "committed beyond --commitment":
        return _text("commits to %s, over --commitment max-months %g; the whole term costs %s",
                     _term_text(why), terms.max_commitment_months, _usd(row["total_usd"]))
    if kind == "host below --min-reliability":
        return _text("host reliability %.1f %%, under --min-reliability %.1f %%",
                     None if row["host_reliability"] is None else 100 * row["host_reliability"],
                     None if terms.min_reliability is None else 100 * terms.min_reliability)
    if kind is not None and kind.startswith("--require "):
        return _required(row, why, kind)
    if kind == "over --max-usd":
        return _text("costs %s for the run, over --max-usd %s", _usd(row["total_usd"]),
                     _usd(terms.max_usd))
    return None


def reasons(row: dict[str, Any], why: dict[str, Any], terms: Terms) -> list[str]:
    """The reasons shown with an offer, in a fixed order: what is rented (the GPU variant, the
    order, the term, the market), placement, billing, checkpoints, spot, what is not counted,
    and the price's age and stock."""
    why = {**why, "term_hours": row.get("min_term_hours")}
    said = [
        _variant(row, why),
        _term(row, why),
        _order(row, why),
        _market(row, why),
        _resold(row),
        _fits(row, why),
        _interconnect(row),
        _cluster(row, why),
        _billing(why) + _billing_source(row, why),
        _text("pays %.2f h for %.2f h of work", why["billed_s"] / 3600,
              why["expected_s"] / 3600)
        if why["expected_s"] is not None and why["billed_s"] - why["expected_s"] >= 60
        else None,
        _checkpoints(row, why, terms),
        _spot(row, why),
        _dearer_than_on_demand(row, why),
        _storage(row, why, terms),
        _egress(row, why, terms),
        _text("runs in %s (no %s on this GPU)", row["dtype"], terms.dtype)
        if row["dtype"] is not None and row["dtype"] != terms.dtype else None,
        "stale: the provider's last refresh failed; last good price" if row["stale"] else None,
        _age(row, why, terms),
        _text("%s reported no stock when last read (%s): ranked after the offers that may "
              "be rented now", row["provider"], why["seen_at"])
        if row["availability"] == "out_of_stock" else None,
    ]
    return [s for s in said if s is not None]


def _variant(row: dict[str, Any], why: dict[str, Any]) -> str | None:
    if not row["gpu_variant_assumed"]:
        return None
    return (f"GPU variant not stated ({why['gpu_label']!r}): sized as {row['gpu_id']}, the "
            "conservative variant (its memory bandwidth and compute, no NVLink unless stated)")


def _term(row: dict[str, Any], why: dict[str, Any]) -> str | None:
    kind = row["term_kind"]
    if kind == "committed":
        source = why["term_source"] or "offer"
        cited = ("" if source == "offer" else
                 f" (payment per {source.removeprefix('offer; payment: ')})"
                 if source.startswith("offer; payment: ") else f" (per {source})")
        return _text("committed for %s%s: charged %s h at %s per machine-hour, %s in all for "
                     "the term", _term_text(why), cited,
                     f"{why['charged_s'] / 3600:,.0f}", _usd(row["price_usd_per_machine_hour"]),
                     _usd(row["compute_usd"]))
    if kind in ("bid", "interruptible"):
        return f"sold as {kind}: may be stopped before the run ends"
    return None


def _order(row: dict[str, Any], why: dict[str, Any]) -> str | None:
    machines, nodes = why["machines_in_offer"], row["nodes"]
    if (machines is None or machines <= 1) and (nodes is None or nodes <= 1) \
            and (why["min_nodes"] or 1) <= 1:
        return None
    source = why["order_source"]
    order = (_text("one order is %d machines of %d GPUs%s", why["min_nodes"],
                   row["gpus_per_node"], "" if source in (None, "offer") else f" ({source})")
             if (why["min_nodes"] or 1) > 1 else None)
    prices = _text("%s per GPU-hour, %s per machine-hour, %s per order-hour (%d machines)",
                   _usd(row["price_usd_per_gpu_hour"]), _usd(row["price_usd_per_machine_hour"]),
                   _usd(row["price_usd_per_order_hour"]), nodes)
    return "; ".join(p for p in (order, prices) if p)


def _market(row: dict[str, Any], why: dict[str, Any]) -> str | None:
    asks, parts = row["ask_count"], []
    if asks is not None and asks >= 2:
        depth = _text("lowest of %d asks (%s/h per machine); median %s/h", asks,
                      _usd(why["listed_usd_per_machine_hour"]),
                      _usd(why["ask_median_usd_per_machine_hour"]))
        if depth and why["ask_max_usd_per_machine_hour"] is not None:
            depth += f", highest {_usd(why['ask_max_usd_per_machine_hour'])}/h"
        if depth and why["outlier_ask"]:
            depth += ": the lowest is a lone outlier, ranked at the median"
        parts.append(depth)
    elif asks == 1:
        parts.append("a single ask: no market depth behind the price")
    if row["host_reliability"] is not None:
        parts.append(f"host reliability {100 * row['host_reliability']:.1f} %")
    similar = row["similar_offers"] or 1
    if similar > 1:
        low, high = why["price_low"], why["price_high"]
        spread = (f"{_usd(low)}/h" if low == high else f"{_usd(low)}–{_usd(high)}/h")
        parts.append(f"{similar} offers differing only by host, {spread} per machine: shown "
                     "once, at the best")
    parts = [p for p in parts if p]
    return "; ".join(parts) if parts else None


def _resold(row: dict[str, Any]) -> str | None:
    cloud = row["resold_from"]
    if cloud is None:
        return None
    return f"a {cloud} machine rented through {row['provider']} (not read from {cloud} directly)"


def _fits(row: dict[str, Any], why: dict[str, Any]) -> str | None:
    nodes = row["nodes"]
    if nodes is not None and row["gpus_per_node"] * nodes > 1:
        spread = _text(" (%s over %d GPUs)", row["sharding"], _gpus(row))
    else:
        spread = " (one GPU)"
    return _joined(_text("fits: needs %.1f of %.1f GB usable per GPU", why["need_gb_per_gpu"],
                         why["usable_gb_per_gpu"]), spread)


def _interconnect(row: dict[str, Any]) -> str | None:
    if row["gpus_per_node"] <= 1:
        return None
    link = row["interconnect"]
    if link in FAST_LINKS:
        return f"{link} between GPUs"
    return _text("%s between GPUs: gradient/shard traffic is slower", link)


def _cluster(row: dict[str, Any], why: dict[str, Any]) -> str | None:
    nodes = row["nodes"]
    if nodes is None or nodes <= 1:
        return None
    assumed = ", Gb/s not stated: assumed" if why["fabric_gbps"] is None else ""
    efficiency = why["scaling_efficiency"]
    fabric = _text("%d machines over %s at %.0f Gb/s each (%s%s): %s ring at ~%.0f GB/s per "
                   "GPU, %.0f%% scaling; ", nodes, row["network"], row["network_gbps"],
                   why["fabric_source"], assumed, row["sharding"], why["ring_gbs"],
                   None if efficiency is None else 100 * efficiency)
    if why["max_nodes_source"] == "assumed":
        size = _text("cluster size not published: assumed up to %d machines", why["max_nodes"])
    else:
        size = _text("clusters of up to %d machines (%s)", why["max_nodes"],
                     why["max_nodes_source"])
        if why["min_nodes"] and why["min_nodes"] > 1 and why["max_nodes"] == why["min_nodes"]:
            size = _text("the order is exactly %d machines", why["min_nodes"])
    return _joined(fabric, size)


def _billing(why: dict[str, Any]) -> str:
    increment = why["billing_increment_s"]
    if increment is None:
        return "billing granularity unknown: assumed hourly"
    unit = BILLING_UNITS.get(increment, f"{increment} s")
    minimum = why["min_charge_s"]
    return f"billed per {unit}" + (f", minimum {minimum:d} s" if (minimum or 0) > 0 else "")


def _checkpoints(row: dict[str, Any], why: dict[str, Any], terms: Terms) -> str | None:
    if why["expected_s"] is None:
        return None
    interval, young_daly = why["interval_s"], why["young_daly_s"]
    if terms.run.checkpoint_s is not None:
        how = _text("checkpoint every %.0f min (--checkpoint-every)", interval / 60)
    elif young_daly is None:
        how = "one checkpoint: no interruption that loses work is modeled"
    elif interval >= why["compute_s"]:
        how = _text("one checkpoint: the run is shorter than the Young/Daly interval "
                    "√(2·C·MTBF) = %.1f h", young_daly / 3600)
    else:
        how = _text("checkpoint every %.0f min: Young/Daly √(2·C·MTBF)", interval / 60)
    losing = why["losing_per_hour"]
    mtbf = ""
    if losing is not None and losing > 0:
        causes = [c for c in (
            _text("%d GPUs × %.3g failures per GPU-hour", _gpus(row),
                  terms.hw_failures_per_gpu_hour)
            if why["hw_interrupts_per_hour"] > 0 else None,
            "spot interruptions"
            if row["pricing_model"] == "spot" and not why["notice_saves"] else None,
        ) if c is not None]
        mtbf = _text(" with C = %.3g s and MTBF %.0f h (%s)", why["write_s"], 1 / losing,
                     " + ".join(causes))
    writers = why["checkpoint_writers"]
    written = _text("; %.1f GB written by %d machine%s at once at %.1f GB/s each: %.2f h "
                    "writing checkpoints", terms.checkpoint_gb, writers,
                    "s" if writers is not None and writers > 1 else "", terms.write_gbps,
                    why["checkpoint_total_s"] / 3600)
    return _joined(how, mtbf, written)


def _spot(row: dict[str, Any], why: dict[str, Any]) -> str | None:
    if row["pricing_model"] != "spot" or why["expected_s"] is None:
        return None
    nodes, share, notice = row["nodes"], why["loss_share"], why["spot_notice_s"]
    if nodes > 1:
        rate = _text("any of %d machines stops the job: %d × %.5f = %.4f interruptions/h",
                     nodes, nodes, why["machine_interrupts_per_hour"],
                     why["spot_interrupts_per_hour"])
    else:
        rate = _text("%.5f interruptions/h", why["spot_interrupts_per_hour"])
    if why["notice_saves"]:
        saved = _text("; the %d s notice fits a %.0f s checkpoint, so only the restart is "
                      "lost (needs save-on-notice)", notice, why["write_s"])
    elif notice is not None:
        saved = _text("; the %d s notice is too short for a %.0f s checkpoint", notice,
                      why["write_s"])
    else:
        saved = "; notice time unknown"
    return _joined(_text("spot (%s, %s rate: %s): ", row["term_kind"],
                         why["interruption_basis"], why["interruption_source"]), rate,
                   _text("; ~%.2f expected, +%.1f%% time from lost work and restarts",
                         why["expected_interruptions"], 100 * share / (1 - share)), saved)


def _dearer_than_on_demand(row: dict[str, Any], why: dict[str, Any]) -> str | None:
    od_total, total = why["od_total_usd"], why["total_usd"]
    if row["pricing_model"] != "spot" or od_total is None or total is None or total <= od_total:
        return None
    od_price = why["od_price_usd_per_hour"]
    if od_price is not None and row["price_usd_per_hour"] < od_price:
        cause = "the expected restarts cost more than the discount saves"
    else:
        cause = "its hourly price is no lower"
    return (f"dearer than {row['provider']} on-demand on the same machines "
            f"(${od_total:.2f}): {cause}")


def _age(row: dict[str, Any], why: dict[str, Any], terms: Terms) -> str | None:
    days = row["price_age_days"]
    if why["replayed"]:
        return _text("price from a recorded capture of %s (%d days old), replayed: not a "
                     "current price", why["seen_day"], days)
    if days is not None and days > terms.stale_days:
        return f"price observed {days:d} days ago"
    return None


def cite(provider: str | None, fact: str, value: Any) -> str:
    """Where a profile's fact was read: "runpod: URL, read 2026-12-02" from the shipped
    profiles where they hold the value the warehouse priced with, else the warehouse's
    profile (written by an older gpuscout, or by hand)."""
    if provider is None:
        return "source unknown"
    profile = load_profiles().get(provider)
    if profile is not None:
        said = profile.fact(fact)
        if said.source_url and said.value is not None and value is not None \
                and abs(float(said.value) - float(value)) < 1e-9:
            read = f", read {said.verified_at}" if said.verified_at else ""
            return f"{provider}: {said.source_url}{read}"
    return f"{provider}'s profile in the warehouse"


def _through(row: dict[str, Any], profile: str | None) -> str:
    """", resold through X" when the rate is the resold cloud's, not the aggregator's."""
    if profile is None or profile == row["provider"]:
        return ""
    return f"; {profile}'s rate, the machine resold through {row['provider']}"


def _whose(row: dict[str, Any]) -> str:
    """The provider, and the cloud it resells where it does (whose profile was read too)."""
    cloud = row["resold_from"]
    return row["provider"] + (f" and {cloud}, whose machine it resells" if cloud else "")


def _billing_source(row: dict[str, Any], why: dict[str, Any]) -> str:
    if why["billing_increment_s"] is None:
        return "; the cost range's low end bills per second"
    source = why["billing_source"]
    if source == "offer":
        return " (stated by the offer)"
    profile = load_profiles().get(source or "")
    own_spot = (row["pricing_model"] == "spot" and profile is not None
                and profile.state("spot_billing_increment_s") == "known")
    fact = "spot_billing_increment_s" if own_spot else "billing_increment_s"
    return (f" ({cite(source, fact, why['billing_increment_s'])}"
            f"{_through(row, source)})")


def _bound(bound: Sourced[float] | None, unit: str) -> str:
    if bound is None or bound.value is None:
        return "no provider's rate is sourced"
    return (f"the dearest sourced rate, ${bound.value:g}/{unit} "
            f"({cite(bound.provider, bound.fact, bound.value)})")


def _kept(terms: Terms) -> str:
    keep = terms.storage.keep_days if terms.storage is not None else 0.0
    return f" + {keep:g} day{'s' if keep != 1 else ''} kept after" if keep else ""


def _storage(row: dict[str, Any], why: dict[str, Any], terms: Terms) -> str | None:
    """What the run's storage costs and why: its GB, rate, hours and source."""
    if terms.run.storage_gb <= 0 or why["expected_s"] is None:
        return None
    what = (terms.storage.summary() if terms.storage is not None
            else f"{terms.run.storage_gb:,.1f} GB")
    hours = f"{why['expected_hours']:.2f} h{_kept(terms)}"
    if why["storage_none"]:
        keep = (" — it cannot be kept after the run" if terms.storage is not None
                and terms.storage.keep_days > 0 else "")
        return (f"storage: {row['provider']} keeps nothing beyond the machine's own disk "
                f"({cite(row['provider'], 'persistent_storage', False)}): the run's "
                f"{what} lives there, in its price, and is gone when the machine ends{keep}")
    if why["storage_rate_unknown"]:
        return (f"storage price unknown for {_whose(row)}: {what} for {hours} counted from $0 "
                f"up to {_cents(why['storage_high_usd'])} at "
                f"{_bound(terms.storage_bound, 'GB-month')}")
    rate, profile = why["storage_usd_per_gb_month"], why["storage_profile"]
    return (f"storage: {what} × ${rate:g}/GB-month × {hours} = {_cents(row['storage_usd'])} "
            f"({cite(profile, 'storage_usd_per_gb_month', rate)}{_through(row, profile)})")


def _egress(row: dict[str, Any], why: dict[str, Any], terms: Terms) -> str | None:
    """What the download at the end costs and why."""
    gb = terms.run.egress_gb
    if gb <= 0:
        return None
    what = (f"{gb:,.2f} GB of final weights" if terms.storage is None
            or terms.storage.download_gb == terms.storage.final_gb
            else f"{gb:,.2f} GB (--download-gb)")
    if why["egress_rate_unknown"]:
        return (f"egress price unknown for {_whose(row)}: {what} counted from $0 up to "
                f"{_cents(why['egress_high_usd'])} at {_bound(terms.egress_bound, 'GB')}")
    rate, profile = why["egress_usd_per_gb"], why["egress_profile"]
    source = f"{cite(profile, 'egress_usd_per_gb', rate)}{_through(row, profile)}"
    free = why["egress_free_gb_month"]
    if free and why["egress_billable_gb"] < gb:
        allowance = (f"; the first {free:,.0f} GB a month are free "
                     f"({cite(profile, 'egress_free_gb_month', free)}), counted as this "
                     "run's alone")
    else:
        allowance = ""
    return (f"egress: {what} × ${rate:g}/GB = {_cents(row['egress_usd'])} ({source})"
            f"{allowance}")


_ANSWER_SAID = {"ssh": "SSH", "docker": "custom Docker images", "jupyter": "Jupyter",
                "persistent-storage": "persistent storage",
                "per-second-billing": "per-second billing"}


def _required(row: dict[str, Any], why: dict[str, Any], kind: str) -> str:
    """Why --require set the offer aside: the fact its provider documents, or that none does."""
    name, answer = kind.removeprefix("--require ").rsplit(" ", 1)
    req = Requirement(name)
    fact = REQUIREMENT_FACT[req]
    said = _ANSWER_SAID[name]
    if answer == MISSING:
        value = why[fact]
        if req is Requirement.PER_SECOND_BILLING:
            unit = BILLING_UNITS.get(value, f"{value} s")
            source = ("stated by the offer" if why["billing_source"] == "offer"
                      else cite(why["billing_source"], fact, value))
            return f"--require {name}: billed per {unit}, not per second ({source})"
        return (f"--require {name}: {row['provider']} offers no {said} "
                f"({cite(row['provider'], fact, value)})")
    state = load_profiles().get(row["provider"])
    varies = state is not None and state.state(fact) == "varies"
    how = ("set per offer, host or cloud, and not stated for this one" if varies
           else "no public source found")
    return f"--require {name}: {said} unknown for {row['provider']} ({how})"


def _round(usd: float | None) -> float | None:
    return None if usd is None else round(usd, 2)


def charges(row: dict[str, Any], why: dict[str, Any]) -> list[dict[str, Any]]:
    """Billing, storage and egress of a ranked offer, each with its rate and source (the fields
    of result.Charge)."""
    increment, source = why["billing_increment_s"], why["billing_source"]
    billing = {"what": "billing", "unit": "s", "rate": increment,
               "state": "unknown" if increment is None else "known",
               "source": None if increment is None else "offer" if source == "offer"
               else cite(source, "billing_increment_s", increment)}
    storage_rate, storage_from = why["storage_usd_per_gb_month"], why["storage_profile"]
    storage = {"what": "storage", "unit": "USD/GB-month", "rate": storage_rate,
               "state": "not offered" if why["storage_none"]
               else "unknown" if why["storage_rate_unknown"] else "known",
               "usd": row["storage_usd"], "usd_low": _round(why["storage_low_usd"]),
               "usd_high": _round(why["storage_high_usd"]),
               "source": cite(row["provider"], "persistent_storage", False)
               if why["storage_none"] else None if storage_rate is None
               else cite(storage_from, "storage_usd_per_gb_month", storage_rate)}
    egress_rate = why["egress_usd_per_gb"]
    egress = {"what": "egress", "unit": "USD/GB", "rate": egress_rate,
              "state": "unknown" if why["egress_rate_unknown"] else "known",
              "usd": row["egress_usd"], "usd_low": _round(why["egress_low_usd"]),
              "usd_high": _round(why["egress_high_usd"]),
              "source": None if egress_rate is None
              else cite(why["egress_profile"], "egress_usd_per_gb", egress_rate)}
    return [billing, storage, egress]

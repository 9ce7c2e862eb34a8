"""The HTML report: price history, $/VRAM-GB-hour, spot vs on-demand, provider freshness and a
recommendation with its cost breakdown, on one self-contained page.

`load_report_data()` reads the warehouse (the SQL is in `warehouse/queries/report_*.sql`) and
runs `recommend()`; `build_report()` turns that data into HTML and reads nothing else. plotly.js
is inlined once in the page (no CDN), so the report opens offline and from `file://`. plotly is
imported inside the functions that draw, so importing this module stays cheap.
"""

from __future__ import annotations

import html
import math
import os
import re
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscout.core.errors import DataError

if TYPE_CHECKING:
    import duckdb
    import plotly.graph_objects as go

    from gpuscout.pipeline.checklist import ChecklistRow
    from gpuscout.pipeline.health import ProviderHealth
    from gpuscout.pipeline.measured import Comparison
    from gpuscout.pipeline.recommend import RankedOffer, Recommendation, RecommendRequest
    from gpuscout.sizing.architectures import Architecture
    from gpuscout.sizing.types import JobSpec

# GPUs drawn in the price-history chart: those offered now by the most providers.
TOP_GPUS = 8
# Chart containers carry these ids (data-chart); the browser test waits for marks in each.
CHARTS = ("price-history", "vram-price", "spot-vs-on-demand", "freshness", "recommendation-cost")
SECTIONS = ("history", "vram", "spot", "freshness", "health", "recommendation", "checklist")
# Shown after them when the warehouse holds runs of your own (`gpuscout runs add`).
RUNS_SECTION, RUNS_CHART = "runs", "your-runs"

_PLOT_CONFIG = {"displaylogo": False, "responsive": True,
                "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
_FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


@dataclass
class ReportData:
    """Everything the page shows; rows are plain dicts as the report queries return them."""

    generated_at: datetime
    source: str
    history: list[dict[str, Any]]
    vram: list[dict[str, Any]]
    spot: list[dict[str, Any]]
    freshness: list[dict[str, Any]]
    job: dict[str, str]
    recommendation: Recommendation | None
    recommendation_error: str | None = None
    warnings: list[str] = field(default_factory=list)
    checklist: list[ChecklistRow] = field(default_factory=list)
    runs: list[Comparison] = field(default_factory=list)
    health: list[ProviderHealth] = field(default_factory=list)  # each provider at a glance


# The rule, said once wherever a batch is shown (the CLI's recommend says the same).
GLOBAL_BATCH = ("micro-batch × accumulation × data-parallel GPUs: every GPU of an offer, as "
                "the recommendation spreads the job over all of them (DDP or ZeRO), so it grows "
                "with the offer's GPUs")
# Run statuses of providers that no longer sell (pipeline/refresh.py's ENDED): not stale.
ENDED = ("retired", "no_public_prices")


def job_line(job: dict[str, str]) -> str:
    """The job the recommendation priced, in one line for the page's header."""
    parts = [job.get("model"), job.get("method"), job.get("batch"),
             f"{job['tokens']} tokens" if "tokens" in job else None]
    return " · ".join(p for p in parts if p)


def describe_job(arch: Architecture, job: JobSpec, req: RecommendRequest) -> dict[str, str]:
    """The job as the page states it, one line per aspect."""
    method = job.method + (f" (r={job.lora_rank}, {job.lora_targets})"
                           if job.method in ("lora", "qlora", "dora") else "")
    base = job.quant if job.quant != "none" else job.dtype
    return {
        "model": arch.model_id,
        "method": method,
        "base weights": base + (" + double quant" if job.quant == "nf4" and job.double_quant
                                else ""),
        "tokens": f"{req.tokens:,}",
        "batch": f"micro-batch {job.batch_size} × {job.seq_len:,} tokens per GPU, "
                 f"accumulation {job.grad_accum}",
        "global batch": GLOBAL_BATCH,
        "optimizer": job.optimizer + (", mixed precision" if job.mixed_precision else ""),
        "objective": f"{req.objective}, spot {req.spot}"
                     + (f", max {req.max_hours:g} h" if req.max_hours else "")
                     + (f", max ${req.max_usd:,.2f}" if req.max_usd else "")
                     + (f", hosts of reliability ≥ {req.min_reliability:g}"
                        if req.min_reliability is not None else ""),
        "commitments": ("allowed, at their whole-term cost" if req.commitment == "allow"
                        else f"terms of at most {req.max_commitment_months:g} months, at their "
                             "whole-term cost" if req.commitment == "max-months"
                        else "only where the job's own time covers the term"),
        "checkpoints": (f"every {req.checkpoint_every_min:g} min"
                        if req.checkpoint_every_min is not None
                        else "per offer: the Young/Daly interval √(2·C·MTBF)"),
    }


def load_report_data(con: duckdb.DuckDBPyConnection, arch: Architecture, job: JobSpec,
                     req: RecommendRequest, *, top_gpus: int = TOP_GPUS,
                     now: datetime | None = None, source: str = "",
                     warnings: list[str] | None = None) -> ReportData:
    """Query the warehouse and run the recommendation (with the same `now` for price ages)."""
    from gpuscout.core.clock import now_utc
    from gpuscout.pipeline.checklist import provider_checklist
    from gpuscout.pipeline.health import provider_health
    from gpuscout.pipeline.measured.evidence import Evidence
    from gpuscout.pipeline.measured.usecases import compare
    from gpuscout.pipeline.recommend import recommend
    from gpuscout.warehouse.queries import check_filter_values, run_named

    check_filter_values(con, providers=req.providers, region=req.region)
    now = now or req.now or now_utc()
    req = req.model_copy(update={"now": now})
    rec, error = None, None
    try:
        rec = recommend(con, arch, job, req)
    except DataError as exc:  # an empty warehouse still gets a page that says so
        error = str(exc)
    return ReportData(
        generated_at=now, source=source,
        history=run_named(con, "report_price_history", {"top_gpus": top_gpus}).to_pylist(),
        vram=run_named(con, "report_vram_price").to_pylist(),
        spot=run_named(con, "report_spot").to_pylist(),
        freshness=run_named(con, "report_freshness", {"now": now.isoformat()}).to_pylist(),
        job=describe_job(arch, job, req), recommendation=rec, recommendation_error=error,
        warnings=list(warnings or []), checklist=provider_checklist(today=now.date()),
        runs=compare(Evidence.from_connection(con).runs), health=provider_health(con, now=now),
    )


# --- charts -------------------------------------------------------------------------------


def _utc(ts: datetime | None) -> str | None:
    # plotly.js reads no UTC offset in date strings: hand it naive UTC.
    if ts is None:
        return None
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    return ts.isoformat(sep=" ", timespec="seconds")


def _layout(fig: go.Figure, *, height: int, **kw: Any) -> go.Figure:
    fig.update_layout(template="plotly_white", height=height, font={"family": _FONT, "size": 12},
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, **kw)
    fig.update_yaxes(automargin=True)
    fig.update_xaxes(automargin=True)
    return fig


def history_figure(rows: list[dict[str, Any]]) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for gpu in dict.fromkeys(r["gpu_id"] for r in rows):  # rank order, from the query
        series = [r for r in rows if r["gpu_id"] == gpu]
        fig.add_trace(go.Scatter(
            x=[_utc(r["at"]) for r in series], y=[r["cheapest_usd_per_gpu_hour"] for r in series],
            name=gpu, mode="lines+markers", line={"shape": "hv", "width": 2},
            marker={"size": 7},
            customdata=[[r["cheapest_provider"], r["median_usd_per_gpu_hour"], r["offers"],
                         r["providers"]] for r in series],
            hovertemplate=("<b>%{fullData.name}</b> %{x|%Y-%m-%d}<br>cheapest $%{y:.2f}/GPU-h "
                           "(%{customdata[0]})<br>median $%{customdata[1]:.2f} of "
                           "%{customdata[2]} offers, %{customdata[3]} providers<extra></extra>"),
        ))
    return _layout(fig, height=460, yaxis_title="USD per GPU-hour (cheapest on-demand)",
                   yaxis_tickprefix="$", xaxis_title="observed", hovermode="closest",
                   legend={"title": {"text": "GPU"}})


def vram_figure(rows: list[dict[str, Any]]) -> go.Figure:
    import plotly.graph_objects as go

    best: dict[str, float] = {}
    for r in rows:
        best[r["gpu_id"]] = min(best.get(r["gpu_id"], math.inf), r["usd_per_vram_gb_hour"])
    gpus = sorted(best, key=lambda g: (best[g], g))  # best value first
    providers = sorted({r["provider"] for r in rows})
    cell = {(r["gpu_id"], r["provider"]): r for r in rows}
    value = [[cell[g, p]["usd_per_vram_gb_hour"] if (g, p) in cell else None
              for p in providers] for g in gpus]
    # Colour on a log scale: values span two orders of magnitude (consumer cards to B300).
    z = [[None if v is None else math.log10(v) for v in row] for row in value]
    ticks = [t for t in (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
             if min(best.values()) / 2 <= t <= max(v for r in value for v in r if v) * 2]
    custom = [[[None] * 4 if (g, p) not in cell else
               [cell[g, p]["usd_per_vram_gb_hour"], cell[g, p]["usd_per_gpu_hour"],
                cell[g, p]["vram_gb"], cell[g, p]["offers"]]
               for p in providers] for g in gpus]
    # The cell labels are preformatted: plotly's texttemplate would print an empty cell as 0.
    text = [["" if v is None else f"{v:.3f}" for v in row] for row in value]
    fig = go.Figure(go.Heatmap(
        z=z, x=providers, y=gpus, text=text, customdata=custom, texttemplate="%{text}",
        textfont={"size": 9}, colorscale="RdYlGn", reversescale=True, hoverongaps=False,
        xgap=1, ygap=1,
        colorbar={"title": {"text": "$/VRAM-GB-h"}, "tickvals": [math.log10(t) for t in ticks],
                  "ticktext": [f"{t:g}" for t in ticks]},
        hovertemplate=("<b>%{y}</b> at %{x}<br>$%{customdata[0]:.4f} per VRAM-GB-hour<br>"
                       "$%{customdata[1]:.2f}/GPU-h, %{customdata[2]:.0f} GB, "
                       "%{customdata[3]} offers<extra></extra>"),
    ))
    return _layout(fig, height=max(320, 24 * len(gpus) + 140), xaxis_side="top",
                   xaxis_tickangle=-40, yaxis_autorange="reversed")


def spot_label(share: float) -> str:
    """Spot against on-demand, as a discount ("48 % off") or, where the cheapest spot offer
    costs more than the cheapest on-demand one, as the premium it is ("119 % dearer")."""
    pct = round(share * 100)
    if pct == 0:
        return "same price"
    return f"{pct} % off" if pct > 0 else f"{-pct} % dearer"


def spot_figure(rows: list[dict[str, Any]]) -> go.Figure:
    import plotly.graph_objects as go

    gpus = [r["gpu_id"] for r in rows]
    fig = go.Figure([
        go.Bar(x=gpus, y=[r["on_demand_usd"] for r in rows], name="on-demand",
               marker_color="#4c78a8",
               customdata=[[r["on_demand_provider"], r["on_demand_offers"]] for r in rows],
               hovertemplate=("<b>%{x}</b> on-demand $%{y:.2f}/GPU-h (%{customdata[0]}, "
                              "cheapest of %{customdata[1]})<extra></extra>")),
        go.Bar(x=gpus, y=[r["spot_usd"] for r in rows], name="spot / interruptible",
               marker_color="#f58518",
               text=[spot_label(r["spot_discount"]) for r in rows], textposition="outside",
               # a premium in red: spot costs more there than on-demand does
               textfont={"size": 10, "color": ["#b8322a" if round(r["spot_discount"] * 100) < 0
                                               else "#1d2330" for r in rows]},
               constraintext="none", cliponaxis=False,
               customdata=[[r["spot_provider"], r["spot_offers"]] for r in rows],
               hovertemplate=("<b>%{x}</b> spot $%{y:.2f}/GPU-h (%{customdata[0]}, cheapest "
                              "of %{customdata[1]}), %{text}<extra></extra>")),
    ])
    return _layout(fig, height=480, barmode="group", yaxis_title="USD per GPU-hour (cheapest)",
                   yaxis_tickprefix="$", xaxis_tickangle=-45,
                   legend={"orientation": "h", "y": 1.08, "x": 0})


# Bands of a price's age (its observed_at against the report's time). A nightly refresh keeps
# prices a day old; past MAX_PRICE_AGE_DAYS a live price is no longer ranked.
AGE_BANDS = (("fresh", "price at most a day old", "#54a24b"),
             ("aging", "price 1 to {max:g} days old", "#eeca3b"),
             ("old", "price over {max:g} days old (a live one is not ranked by default)",
              "#e45756"),
             ("none", "no current offers", "#b8bec9"),
             ("ended", "retired or no public prices: no longer refreshed", "#8c93a1"))


def age_band(row: dict[str, Any], max_age_days: float) -> str:
    """fresh, aging, old (by the newest price's age), none (no offers) or ended (retired)."""
    if row["last_status"] in ENDED:
        return "ended"
    age = row["price_age_days"]
    if age is None:
        return "none"
    return "fresh" if age <= 1 else "aging" if age <= max_age_days else "old"


def is_stale(row: dict[str, Any]) -> bool:
    """Its last refresh failed and it keeps its last good prices; a provider that stopped
    selling (retired) is not stale."""
    return bool(row["stale"]) and row["last_status"] not in ENDED


def freshness_figure(rows: list[dict[str, Any]], max_age_days: float) -> go.Figure:
    """One bar per provider, its length the age of its newest current price, its colour that
    age's band; hatched where the last refresh failed (stale: last good prices)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for stale in (False, True):
        for band, label, color in AGE_BANDS:
            part = [r for r in rows if is_stale(r) == stale and age_band(r, max_age_days) == band]
            if not part:
                continue
            name = label.format(max=max_age_days)
            fig.add_trace(go.Bar(
                y=[r["provider"] for r in part], x=[r["price_age_days"] or 0 for r in part],
                orientation="h", name=f"stale (last refresh failed), {name}" if stale else name,
                marker={"color": color, "pattern": {"shape": "/" if stale else ""}},
                showlegend=True,
                text=[f"{r['price_age_days']:.0f} d" if r["price_age_days"] is not None
                      else "retired" if band == "ended" else "no offers" for r in part],
                textposition="outside",
                customdata=[[_utc(r["newest_observed_at"]) or "-",
                             _utc(r["last_success_at"]) or "never", r["last_status"],
                             r["offers"]] for r in part],
                hovertemplate=("<b>%{y}</b>: newest price %{customdata[0]} (%{x:.1f} days "
                               "old)<br>last refresh %{customdata[2]}, last success "
                               "%{customdata[1]}<br>%{customdata[3]} current offers"
                               "<extra></extra>"),
            ))
    order = [r["provider"] for r in rows]  # freshest first, from the query
    return _layout(fig, height=max(260, 26 * len(rows) + 130), barmode="overlay",
                   xaxis_title="age of the newest current price, days", xaxis_rangemode="tozero",
                   yaxis={"categoryorder": "array", "categoryarray": order[::-1]},
                   legend={"orientation": "h", "y": 1.02, "x": 0, "yanchor": "bottom"})


def _machine(row: RankedOffer) -> str:
    shape = f"{row.gpu_id} ×{row.gpus_per_node}"
    return shape + (f" ×{row.nodes} machines" if row.nodes > 1 else "")


def offer_label(rank: int, row: RankedOffer) -> str:
    from gpuscout.pipeline.recommend.result import sold_as

    term = sold_as(row.term_kind, row.min_term_hours)
    return f"#{rank} {row.provider} · {_machine(row)} · {term}"


def offer_labels(rows: list[RankedOffer]) -> list[str]:
    """A label per ranked offer, no two alike: offers that read the same (one provider's
    machine sold the same way, in two regions or two host sizes) get what sets them apart,
    the region or the words of their keys that differ, so they never show as twin bars."""
    labels = [offer_label(i, r) for i, r in enumerate(rows, 1)]
    base = [label.split(" ", 1)[1] for label in labels]
    for same in {b for b in base if base.count(b) > 1}:
        group = [i for i, b in enumerate(base) if b == same]
        regions = [rows[i].region or "-" for i in group]
        if len(set(regions)) == len(group):
            extra = regions
        else:
            words = [re.split(r"[|:/,\s]+", rows[i].offer_key) for i in group]
            common = set.intersection(*(set(w) for w in words))
            extra = [" ".join(w for w in ws if w not in common) or rows[i].offer_key
                     for ws, i in zip(words, group, strict=True)]
        for i, more in zip(group, extra, strict=True):
            labels[i] += f" · {more}"
    return labels


# The parts of a run's cost, as the chart and the table show them.
COST_PARTS = (("compute_usd", "compute (billed hours × price)", "#4c78a8"),
              ("storage_usd", "persistent storage", "#72b7b2"),
              ("egress_usd", "egress of the final weights", "#eeca3b"))


def part_unknown(row: RankedOffer, key: str) -> bool:
    """This part's price is unknown for the offer (so it is not in the total, only in its
    range)."""
    part = key.removesuffix("_usd")
    return any(c.what == part and c.state == "unknown" for c in row.charges)


def undrawn_parts(rec: Recommendation) -> list[str]:
    """Why each part the cost chart leaves out is left out: its price unknown (not counted),
    or under a cent for every offer."""
    out = []
    for key, name, _ in COST_PARTS:
        unknown = sum(part_unknown(r, key) for r in rec.ranked)
        if any(getattr(r, key) and not part_unknown(r, key) for r in rec.ranked):
            continue
        if unknown == len(rec.ranked):
            out.append(f"{name}, its price unknown for every offer (not counted)")
        elif unknown:
            out.append(f"{name}, its price unknown for {unknown} of {len(rec.ranked)} offers "
                       "(not counted) and under a cent for the others")
        else:
            out.append(f"{name}, under a cent for every offer")
    return out


def recommendation_figure(rec: Recommendation) -> go.Figure:
    """The whole cost of each ranked offer, stacked by part; a part is drawn, and in the
    legend, only where some offer has a known price for it."""
    import plotly.graph_objects as go

    labels = offer_labels(rec.ranked)
    fig = go.Figure()
    for key, name, color in COST_PARTS:
        values = [None if part_unknown(r, key) else getattr(r, key) for r in rec.ranked]
        if not any(v for v in values):
            continue
        fig.add_trace(go.Bar(
            y=labels, x=values, name=name, orientation="h", marker_color=color,
            customdata=[[r.total_usd, r.expected_hours] for r in rec.ranked],
            hovertemplate=(f"%{{y}}<br>{name}: $%{{x:.2f}}<br>total $%{{customdata[0]:.2f}}, "
                           f"%{{customdata[1]:.2f}} h expected<extra></extra>"),
        ))
    return _layout(fig, height=max(260, 34 * len(labels) + 120), barmode="stack",
                   xaxis_title="USD for the whole run", xaxis_tickprefix="$",
                   yaxis_autorange="reversed", showlegend=True,
                   legend={"orientation": "h", "y": 1.1, "x": 0, "traceorder": "normal"})


def runs_figure(runs: list[Comparison]) -> go.Figure:
    """Your runs: measured tokens/s against what the model predicts now, one colour per
    GPU / framework / method, and the line where they are equal."""
    import plotly.graph_objects as go

    shown = [c for c in runs if c.run.tokens_per_s and c.predicted_now_tokens_per_s]
    fig = go.Figure()
    for stack in dict.fromkeys(f"{c.run.gpu_id} / {c.run.framework} / {c.run.method}"
                               for c in shown):
        part = [c for c in shown
                if f"{c.run.gpu_id} / {c.run.framework} / {c.run.method}" == stack]
        fig.add_trace(go.Scatter(
            x=[c.predicted_now_tokens_per_s for c in part],
            y=[c.run.tokens_per_s for c in part], name=stack, mode="markers",
            marker={"size": 10},
            customdata=[[c.run.run_id, c.run.model, c.tokens_error_now_pct] for c in part],
            hovertemplate=("<b>%{customdata[0]}</b> %{customdata[1]}<br>predicted %{x:,.0f}, "
                           "measured %{y:,.0f} tokens/s (%{customdata[2]:+.1f} %)<extra></extra>"),
        ))
    top = max([1.0, *(max(c.predicted_now_tokens_per_s or 0, c.run.tokens_per_s or 0)
                      for c in shown)]) * 1.1
    fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="measured = predicted",
                             line={"dash": "dot", "color": "#888"}, hoverinfo="skip"))
    return _layout(fig, height=440, xaxis_title="predicted tokens/s (the model now)",
                   yaxis_title="measured tokens/s", xaxis_rangemode="tozero",
                   yaxis_rangemode="tozero",
                   legend={"title": {"text": "GPU / framework / method"}})


# --- page ---------------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _chart(name: str, fig: go.Figure) -> str:
    body = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"chart-{name}",
                       config=_PLOT_CONFIG)
    return f'<figure class="chart" data-chart="{name}">{body}</figure>'


def _empty(what: str) -> str:
    return f'<p class="empty">No data for {_e(what)} in this warehouse.</p>'


def _num(field_name: str, value: float | int | None, fmt: str) -> str:
    # The raw value rides along in data-value so tests (and scrapers) need not parse the text.
    if value is None:
        return f'<td class="num" data-field="{field_name}">-</td>'
    return (f'<td class="num" data-field="{field_name}" data-value="{value!r}">'
            f"{format(value, fmt)}</td>")


def _table(headers: list[str], rows: list[str], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return (f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _freshness_table(rows: list[dict[str, Any]], max_age_days: float) -> str:
    body = []
    for r in rows:
        status = "stale" if is_stale(r) else r["last_status"]
        classes = f"{'stale ' if is_stale(r) else ''}age-{age_band(r, max_age_days)}"
        body.append(
            f'<tr class="{classes}"><td>{_e(r["provider"])}</td>'
            f"<td>{_e(status)}</td><td class=\"ts\">{_e(_utc(r['last_run_at']))}</td>"
            f"<td class=\"ts\">{_e(_utc(r['last_success_at']) or 'never')}</td>"
            f"{_num('offers', r['offers'], 'd')}"
            f"<td class=\"ts\">{_e(_utc(r['newest_observed_at']) or '-')}</td>"
            f"{_num('price_age_days', r['price_age_days'], '.1f')}"
            f"<td class=\"why\">{_e(r['last_error'] or '')}</td></tr>")
    return _table(["provider", "last refresh", "last run (UTC)", "last success (UTC)", "offers",
                   "newest price observed (UTC)", "price age, days", "error or note"], body)


def _checklist_table(rows: list[ChecklistRow]) -> str:
    from gpuscout.pipeline.checklist import COLUMNS

    body = []
    for r in rows:
        cells = []
        for c in r.cells:
            tip = (f"{c.source_url} (read {c.verified_at}, {c.age_days} days ago)"
                   if c.source_url else "no public source found")
            cls = " ".join(x for x in (c.state, "stale" if c.stale else "") if x)
            cells.append(f'<td class="{cls}" data-field="{c.fact}" title="{_e(tip)}">'
                         f"{_e(c.text)}{'*' if c.stale else ''}</td>")
        body.append(f"<tr><td>{_e(r.provider)}</td>{''.join(cells)}"
                    f"{_num('age_days', r.age_days, 'd')}</tr>")
    headers = ["provider", *(f"{c.key}: {c.title}" for c in COLUMNS), "oldest fact, days"]
    return _table(headers, body, "checklist")


def _health_table(rows: list[ProviderHealth]) -> str:
    body = []
    for r in rows:
        problem = (f"{r.last_problem_status} {(_utc(r.last_problem_at) or '')[:16]}: "
                   f"{r.last_problem_error or ''}" if r.last_problem_status else "")
        keys = "; ".join(f"{k.variable} {'set' if k.set else 'not set'}"
                         f"{' (needed)' if k.required else ''}: {k.adds}" for k in r.keys)
        body.append(
            f'<tr class="{"stale" if r.stale else ""}"><td>{_e(r.provider)}</td>'
            f"<td>{_e(r.last_status)}</td>"
            f"<td class=\"ts\">{_e(_utc(r.last_success_at) or 'never')}</td>"
            f"{_num('price_age_days', r.price_age_days, '.1f')}"
            f"<td class=\"why\">{_e(problem)}</td><td class=\"why\">{_e(keys or 'none')}</td>"
            "</tr>")
    return _table(["provider", "last status", "last success (UTC)", "price age, days",
                   "last failure, refusal, drift or skip, and why",
                   "keys read: set or not, what each adds"], body, "health")


def _recommendation_html(data: ReportData) -> str:
    from gpuscout.pipeline.recommend.result import set_aside_line, sold_as

    job = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in data.job.items())
    parts = [f'<dl class="job">{job}</dl>']
    parts += [f'<p class="warning">{_e(w)}</p>' for w in data.warnings]
    rec = data.recommendation
    if rec is None:
        return "".join(parts) + f'<p class="empty">{_e(data.recommendation_error)}</p>'
    if not rec.ranked:
        parts.append('<p class="empty">No current offer can run this job; the cheaper ones '
                     "that were rejected are listed below.</p>")
    else:
        top = rec.ranked[0]
        per_hour = (f"${top.price_usd_per_order_hour:,.2f} per hour for the order of "
                    f"{top.nodes} machines (${top.price_usd_per_machine_hour:,.2f} each)"
                    if top.nodes > 1 else
                    f"${top.price_usd_per_machine_hour:,.2f} per machine-hour")
        parts.append(
            f'<p class="verdict" data-field="best">Best: <b>{_e(offer_label(1, top))}</b>: '
            f'<b data-field="best_total" data-value="{top.total_usd!r}">'
            f"${top.total_usd:,.2f}</b> in total (compute ${top.compute_usd:,.2f} + storage "
            f"{_usd_part(top, 'storage_usd')} + egress {_usd_part(top, 'egress_usd')}), "
            f"{top.expected_hours:,.2f} h expected, {top.charged_hours:,.2f} h charged at "
            f"{per_hour} ({_e(sold_as(top.term_kind, top.min_term_hours))}).</p>")
        parts.append(_chart("recommendation-cost", recommendation_figure(rec)))
        if undrawn := undrawn_parts(rec):
            parts.append(f'<p class="note" data-field="undrawn">Not drawn: '
                         f"{_e('; '.join(undrawn))}.</p>")
        rows = []
        for i, r in enumerate(rec.ranked, 1):
            rows.append(
                f'<tr class="offer" data-offer="{_e(r.offer_key)}"><td class="num">{i}</td>'
                f'<td>{_e(r.provider)}</td><td><span class="machine">{_e(_machine(r))}</span>'
                f"<br><small>{_e(r.offer_key)}</small></td>"
                f"<td>{_e(sold_as(r.term_kind, r.min_term_hours))}</td>"
                f"<td>{_e(r.sharding)}</td>"
                f"{_num('price_usd_per_machine_hour', r.price_usd_per_machine_hour, ',.2f')}"
                f"<td>{_unbroken_words(r.price_age_label)}</td>"
                f"{_num('expected_hours', r.expected_hours, ',.2f')}"
                f"{_num('charged_hours', r.charged_hours, ',.2f')}"
                f"{_num('compute_usd', r.compute_usd, ',.2f')}"
                f"{_part_cell(r, 'storage_usd')}{_part_cell(r, 'egress_usd')}"
                f"{_num('total_usd', r.total_usd, ',.2f')}</tr>"
                # the reasons get a full-width row of their own, under the numbers
                f'<tr class="reasons"><td></td><td colspan="12">'
                f"{' · '.join(_e(x) for x in r.reasons)}</td></tr>")
        parts.append(_table(["#", "provider", "machine", "sold as", "parallelism",
                             "$/machine-h", "price age", "expected h", "charged h",
                             "compute $", "storage $",
                             "egress $",
                             "total $"], rows, "recommendation"))
    parts.append(
        f"<p class=\"note\">{rec.offers_evaluated} offers priced over {rec.shapes_evaluated} "
        f"machine shapes; storage {rec.storage_gb:,.1f} GB during the run"
        f"{f' and {rec.keep_days:g} days after' if rec.keep_days else ''} (base model, "
        f"dataset and its tokenized cache, two checkpoints of {rec.checkpoint_gb:,.2f} GB, "
        f"final weights), {rec.egress_gb:,.2f} GB downloaded at the end.</p>")
    parts += [f'<p class="note">{_e(n)}</p>' for n in [set_aside_line(rec), *rec.price_notes]]
    if rec.managed:
        rows = [f'<tr class="managed"><td>{_e(q.service)}</td><td>{_e(q.method)}</td>'
                f"{_num('usd_per_million', q.row.usd_per_million_training_tokens, ',.2f')}"
                f"{_num('cost_usd', q.cost_usd, ',.2f')}"
                f"<td class=\"why\">{' · '.join(_e(n) for n in q.notes)}</td></tr>"
                for q in rec.managed]
        parts.append("<h3>Managed fine-tuning, priced per training token</h3>"
                     "<p class=\"note\">No GPU to rent: the service's price for this model "
                     "and method times the job's training tokens.</p>"
                     + _table(["service", "method", "$ per 1M tokens", "total $", "notes"],
                              rows, "managed"))
    if rec.rejected_cheaper:
        rows = [f"<tr><td>{_e(r.provider)}</td><td>{_e(r.offer_key)}</td>"
                f"{_num('price_usd_per_hour', r.price_usd_per_hour, ',.2f')}"
                f"<td class=\"why\">{_e(r.rejected_because)}</td></tr>"
                for r in rec.rejected_cheaper[:10]]
        parts.append("<details><summary>Cheaper offers per hour that were rejected</summary>"
                     + _table(["provider", "offer", "$/h", "why not"], rows) + "</details>")
    return "".join(parts)


def _unbroken_words(text: str) -> str:
    """Text that wraps at its spaces only, never at a date's hyphens ("2026-08-" / "22")."""
    return " ".join(f'<span class="nw">{_e(w)}</span>' for w in text.split())


def _usd_part(row: RankedOffer, key: str) -> str:
    return "unknown (not counted)" if part_unknown(row, key) else f"${getattr(row, key):,.2f}"


def _part_cell(row: RankedOffer, key: str) -> str:
    """A storage or egress cell: the figure, or "unknown" where the reasons say so (the raw
    value, 0, still rides in data-value: it is what the total counts)."""
    if not part_unknown(row, key):
        return _num(key, getattr(row, key), ",.2f")
    return (f'<td class="num unknown" data-field="{key}" data-value="{getattr(row, key)!r}" '
            f'title="price unknown: not counted in the total">unknown</td>')


def _runs_table(runs: list[Comparison]) -> str:
    rows = [f'<tr data-run="{_e(c.run.run_id)}"><td>{_e(c.run.run_id)}</td>'
            f"<td>{_e(c.run.model)}</td><td>{_e(c.run.gpu_id)}</td>"
            f"<td>{_e(c.run.framework)} / {_e(c.run.method)}</td>"
            f"{_num('measured_tokens_per_s', c.run.tokens_per_s, ',.0f')}"
            f"{_num('predicted_tokens_per_s', c.predicted_now_tokens_per_s, ',.0f')}"
            f"{_num('error_pct', c.tokens_error_now_pct, '+.1f')}"
            f"{_num('measured_peak_gb', c.run.peak_gb, ',.1f')}"
            f"{_num('predicted_peak_gb', c.predicted_now_peak_gb, ',.1f')}</tr>"
            for c in runs]
    return _table(["run", "model", "GPU", "framework / method", "measured tokens/s",
                   "predicted tokens/s", "error %", "measured GB", "predicted GB"], rows)


_CSS = """
:root { color-scheme: light; --fg: #1d2330; --muted: #5b6475; --line: #dde2ea; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, Segoe UI, Roboto, sans-serif;
       color: var(--fg); background: #f4f6f9; }
header { background: #1d2330; color: #fff; padding: 20px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 0; color: #c6ccd8; }
.stats { display: flex; gap: 28px; margin-top: 12px; flex-wrap: wrap; }
.stats b { display: block; font-size: 20px; color: #fff; }
.stats span { color: #c6ccd8; font-size: 12px; }
main { max-width: 1280px; margin: 0 auto; padding: 8px 24px 32px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px;
          padding: 16px 20px; margin: 18px 0; }
section h2 { margin: 0 0 4px; font-size: 18px; }
.note, .empty { color: var(--muted); margin: 4px 0 10px; }
.warning { color: #8a5a00; }
figure.chart { margin: 8px 0 12px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left;
         vertical-align: top; }
th { background: #f0f2f6; font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.why { color: var(--muted); font-size: 12px; min-width: 380px; }
td small { color: var(--muted); word-break: break-all; }
table.recommendation tr.offer td { border-bottom: none; padding-bottom: 1px; }
table.recommendation tr.reasons td { color: var(--muted); font-size: 12px; padding-top: 0; }
td.ts { white-space: nowrap; }
tr.stale td { background: #fdecec; }
tr.age-old td[data-field="price_age_days"] { color: #b8322a; font-weight: 600; }
td.unknown { color: var(--muted); font-style: italic; }
span.machine, span.nw { white-space: nowrap; }
header p.priced { color: #fff; margin-top: 8px; }
table.checklist td { text-align: center; } table.checklist td:first-child { text-align: left; }
table.checklist td.unknown { color: var(--muted); }
table.checklist td.stale { background: #fff4e0; }
dl.job { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
dl.job dt { color: var(--muted); }
dl.job dd { margin: 0; }
.verdict { font-size: 15px; }
footer { color: var(--muted); text-align: center; padding: 0 0 24px; font-size: 12px; }
"""


def _plotly_script() -> str:
    import plotly
    from plotly.offline import get_plotlyjs

    # "</script" inside the inlined library would end the element early; "<\/" is the same
    # string to JavaScript.
    js = get_plotlyjs().replace("</script", "<\\/script")
    return f"<script>/* plotly.js from plotly {plotly.__version__}, inlined */\n{js}</script>"


def build_report(data: ReportData) -> str:
    """The whole page as one string: CSS, plotly.js, data and charts inline."""
    from gpuscout.pipeline.recommend.request import MAX_PRICE_AGE_DAYS

    fresh = data.freshness
    offers = sum(r["offers"] for r in fresh)
    stale = [r["provider"] for r in fresh if is_stale(r)]
    ended = [r["provider"] for r in fresh if r["last_status"] in ENDED]
    old = [r for r in fresh if age_band(r, MAX_PRICE_AGE_DAYS) == "old"]
    gpus = {r["gpu_id"] for r in data.vram}
    newest = max((r["newest_observed_at"] for r in fresh if r["newest_observed_at"]),
                 default=None)
    stats = "".join(f'<div data-stat="{_e(k)}"><b>{_e(v)}</b><span>{_e(k)}</span></div>'
                    for k, v in (
        ("current offers", f"{offers:,}"), ("providers", len(fresh) - len(ended)),
        ("stale providers", len(stale)),
        *((("providers ended (retired, no public prices)", len(ended)),) if ended else ()),
        (f"providers with prices over {MAX_PRICE_AGE_DAYS:g} days old", len(old)),
        ("GPUs with on-demand offers", len(gpus)),
        ("newest price (UTC)", (_utc(newest) or "-")[:10])))
    priced = (f'<p class="priced" data-field="job">Recommendation priced for: '
              f"{_e(job_line(data.job))}</p>" if data.job.get("model") else "")
    when = _utc(data.generated_at)
    sections = [
        ("history", "Price per GPU-hour over time",
         f"The cheapest whole on-demand offer open at each moment the price history changed, "
         f"for the {len({r['gpu_id'] for r in data.history})} GPUs offered now by the most "
         "providers (hover for the median and the number of offers). A GPU with a single "
         "observation is one point.",
         _chart("price-history", history_figure(data.history)) if data.history
         else _empty("the price history")),
        ("vram", "$ per VRAM-GB-hour by provider and GPU",
         "The cheapest whole on-demand offer of each provider and GPU, per GPU-hour divided by "
         "the GPU's memory; best value first. Blank: the provider does not offer that GPU.",
         _chart("vram-price", vram_figure(data.vram)) if data.vram else _empty("VRAM prices")),
        ("spot", "Spot vs on-demand",
         "For GPUs sold both ways: the cheapest spot (interruptible, preemptible or bid) and "
         "the cheapest on-demand offer per GPU-hour across providers, with spot's discount, or "
         "its premium (in red) where the cheapest spot offer costs more than the cheapest "
         "on-demand one.",
         _chart("spot-vs-on-demand", spot_figure(data.spot)) if data.spot
         else _empty("GPUs with both spot and on-demand offers")),
        ("freshness", "Freshness of each provider",
         "How old each provider's newest current price is (a replayed archive keeps its "
         f"capture time), coloured by that age: green within a day, amber up to "
         f"{MAX_PRICE_AGE_DAYS:g} days, red beyond; hatched where its last refresh failed (a "
         "stale provider keeps its last good offers). A retired provider is grey, and not "
         "stale.",
         (_chart("freshness", freshness_figure(fresh, MAX_PRICE_AGE_DAYS))
          + _freshness_table(fresh, MAX_PRICE_AGE_DAYS)) if fresh
         else _empty("refresh runs")),
        ("health", "Provider health",
         "Per provider: its last status and success, its last failure, refusal, drift or skip "
         "with the reason, the age of its newest price, and the keys its adapter reads (when "
         "this report was built), whether each is set and what it would add.",
         _health_table(data.health) if data.health else _empty("providers")),
        ("recommendation", "Recommendation for a fine-tuning job",
         "Every current offer priced for the whole run (billing granularity, storage, egress, "
         "spot interruptions), ranked; the cost of the best offers is broken down below.",
         _recommendation_html(data)),
        ("checklist", "What each provider offers beyond the GPU price",
         "Billing increment and minimum, persistent storage and its price, egress, spot, "
         "SSH / Docker / Jupyter / root / pinned CUDA images, multi-node fabric and commitments, "
         "each read from the provider's documentation (hover a cell for its source and date). "
         "✓ yes, ✗ no, ? no public source found, ~ set per offer or host; * read over a year "
         "ago.",
         _checklist_table(data.checklist) if data.checklist
         else _empty("provider facts")),
    ]
    if data.runs:
        sections.append(
            (RUNS_SECTION, "Your runs: predicted against measured",
             "Each run you added (gpuscout runs add): the tokens/s its log measured against "
             "what the model predicts for its job now; points under the line ran slower than "
             "predicted. Estimates and recommendations correct jobs of the same GPU, "
             "framework and method by them.",
             _chart(RUNS_CHART, runs_figure(data.runs)) + _runs_table(data.runs)))
    body = "".join(
        f'<section id="{sid}"><h2>{_e(title)}</h2><p class="note">{_e(note)}</p>{content}'
        "</section>" for sid, title, note, content in sections)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>gpuscout report {_e(when[:10] if when else '')}</title>"
        f"<style>{_CSS}</style>{_plotly_script()}</head><body>"
        f"<header><h1>gpuscout: GPU cloud offers</h1><p>Generated {_e(when)} UTC from "
        f"{_e(data.source)}</p>{priced}<div class=\"stats\">{stats}</div></header>"
        f"<main>{body}</main><footer>gpuscout · prices in USD · every figure comes from the "
        "warehouse's views (current_offers, offer_history, provider_status) and "
        "gpuscout recommend</footer></body></html>\n")


# --- writing ------------------------------------------------------------------------------


def write_report(page: str, out_dir: Path) -> Path:
    """Write `out_dir/index.html` atomically, so a published path is never half a page; a
    folder that cannot take it (missing parent, read-only, full) is one line, no temp file
    left behind."""
    target = out_dir / "index.html"
    tmp = out_dir / f".index.html.{os.getpid()}.tmp"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise DataError(f"cannot write the report to {target}: {exc.strerror or exc}") from exc
    return target


def generate_report(db: Path | str, out_dir: Path, arch: Architecture, job: JobSpec,
                    req: RecommendRequest, *, top_gpus: int = TOP_GPUS,
                    now: datetime | None = None, warnings: list[str] | None = None) -> Path:
    """Read the warehouse (read-only), build the page and write it; returns index.html."""
    from gpuscout.warehouse.connection import connect

    with connect(db, read_only=True) as con:
        data = load_report_data(con, arch, job, req, top_gpus=top_gpus, now=now,
                                source=str(db), warnings=warnings)
    return write_report(build_report(data), out_dir)


def publish_report(db: Path | str, out_root: Path | str, night: date | datetime) -> Path:
    """The nightly report at `<out_root>/<YYYY-MM-DD>/index.html`, for the default job.

    Call it after the flow's own warehouse connection is closed: it opens the file read-only.
    """
    from gpuscout.pipeline.recommend import RecommendRequest
    from gpuscout.sizing.job import MAIN_JOB, MAIN_JOB_TOKENS

    day = night.date() if isinstance(night, datetime) else night
    arch, job, warnings = MAIN_JOB.resolve_per_offer()
    req = RecommendRequest(tokens=MAIN_JOB_TOKENS)
    return generate_report(db, Path(out_root) / day.isoformat(), arch, job, req,
                           warnings=warnings)

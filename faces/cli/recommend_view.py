"""The recommendation as a table with its reasons, for the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuscout.cli.output import console as make_console
from gpuscout.pipeline.recommend import RankedOffer, Recommendation
from gpuscout.pipeline.recommend.result import set_aside_line, sold_as

if TYPE_CHECKING:
    from rich.table import Table


def _shape(row: RankedOffer) -> str:
    shape = f"{row.gpu_id} ×{row.gpus_per_node}"
    shape += f" ×{row.nodes} nodes" if row.nodes > 1 else ""
    shape += " (variant assumed)" if row.gpu_variant_assumed else ""
    return shape + (f"\n{row.similar_offers} hosts" if row.similar_offers > 1 else "")


def _prices(row: RankedOffer) -> str:
    """Per GPU-hour, machine-hour and order-hour (all the machines the run takes), labelled."""
    lines = [f"{row.price_usd_per_gpu_hour:.2f} /GPU-h"]
    if row.gpus_per_node > 1:
        lines.append(f"{row.price_usd_per_machine_hour:.2f} /machine-h")
    if row.nodes > 1:
        lines.append(f"{row.price_usd_per_order_hour:.2f} /order-h")
    return "\n".join(lines)


def _span(row: RankedOffer, what: str) -> str:
    """The figure's range under it: "(9.1–14.0)"."""
    if row.range is None:
        return ""
    r = row.range.expected_hours if what == "hours" else row.range.total_usd
    return f"\n({r.low:,.2f}–{r.high:,.2f})"


def managed_table(rec: Recommendation) -> Table:
    """Managed fine-tuning beside the rented offers: per-token prices, no GPU to choose."""
    from rich.table import Table

    best = rec.ranked[0].total_usd if rec.ranked else None
    table = Table(title="managed fine-tuning, priced per training token (no GPU to rent)",
                  header_style="bold")
    for col in ("service", "method", "$/1M tokens", "total $", "vs best rented", "notes"):
        table.add_column(col, overflow="fold")
    for q in rec.managed:
        versus = "" if not best else f"{q.cost_usd / best:.1f}×"
        table.add_row(q.service, q.method, f"{q.row.usd_per_million_training_tokens:.2f}",
                      f"{q.cost_usd:,.2f}", versus, "\n".join(q.notes))
    return table


def print_recommendation(rec: Recommendation, *, explain: bool) -> None:
    from rich.table import Table

    out = make_console()
    table = Table(title=f"{rec.model_id} · {rec.method} · {rec.tokens:,} tokens — "
                        f"{len(rec.ranked)} best of {rec.offers_evaluated} offers",
                  header_style="bold", show_lines=True)
    for col in ("#", "provider", "machine", "sold as", "$", "price age", "hours", "charged h",
                "total $", "why"):
        table.add_column(col, overflow="fold")
    for i, row in enumerate(rec.ranked, 1):
        table.add_row(str(i), row.provider, _shape(row), sold_as(row.term_kind,
                                                                  row.min_term_hours),
                      _prices(row), row.price_age_label,
                      f"{row.expected_hours:.2f}" + _span(row, "hours"),
                      f"{row.charged_hours:,.2f}", f"{row.total_usd:,.2f}" + _span(row, "usd"),
                      "\n".join(row.reasons))
    out.print(table)
    out.print(f"storage {rec.storage_gb:.1f} GB during the run, checkpoints "
              f"{rec.checkpoint_gb:.2f} GB, final weights {rec.egress_gb:.2f} GB; "
              f"{rec.shapes_evaluated} machine shapes sized", highlight=False)
    if rec.managed:
        out.print(managed_table(rec))
    for w in [set_aside_line(rec), *rec.uncertainty_notes, *rec.price_notes, *rec.warnings]:
        out.print(f"- {w}", highlight=False)
    if not rec.ranked:
        out.print("[red]no offer can run this job[/red]: see --explain")
    if explain and not rec.rejected_cheaper:
        out.print("- no offer cheaper per hour than the best was set aside", highlight=False)
    elif explain:
        rejected = Table(title="offers set aside that were cheaper by the hour, or whose run "
                               "alone would have won", header_style="bold")
        for col in ("provider", "offer", "sold as", "$/machine-h", "whole cost $", "why not"):
            rejected.add_column(col, overflow="fold")
        for row in rec.rejected_cheaper:
            rejected.add_row(row.provider, row.offer_key,
                             sold_as(row.term_kind, row.min_term_hours),
                             f"{row.price_usd_per_machine_hour:.2f}",
                             "-" if row.total_usd is None else f"{row.total_usd:,.2f}",
                             row.rejected_because)
        out.print(rejected)

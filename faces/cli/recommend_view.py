"""The recommendation for the terminal: one line per offer by default, every reason with
`--explain`, the full table with `--wide`.

The compact lines fit the console's width (a terminal's own; 160 columns when piped): the
fixed columns are sized to their contents and the short reason gets what is left, cut at a
word, never inside one. Whatever the compact lines leave out (ranges, per machine and per
order prices, every reason, the offers set aside) is in the lines under them, in --explain,
in --wide and in --format json.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpuscout.cli.output import console as make_console
from gpuscout.pipeline.recommend import RankedOffer, Recommendation
from gpuscout.pipeline.recommend.result import set_aside_line, sold_as

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from gpuscout.sizing.job import Job

# The parallelism as people write it.
STRATEGY = {"none": "1 GPU", "ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2",
            "zero3": "ZeRO-3", "fsdp": "FSDP"}
# Under this many columns for the short reason, the hours and totals drop their ranges.
MIN_WHY = 16
GAP = "  "
NEEDS = re.compile(r"needs [\d.,]+ of [\d.,]+ GB")
WIDE = 160  # the columns --wide draws its table in, at least
UNITS = ("units: $/GPU-h per GPU-hour, as ranked; hours of wall clock, expected; total $ for "
         "the whole run; a–b: from the figure ranked to the slow end of its range; \"needs "
         "N of M GB\": per GPU, in GB of 10⁹ bytes (cards are sold in GiB: an 80 GiB card "
         "holds 85.9 GB, of which 95 % is planned on)")
GLOBAL_BATCH = ("global batch = micro-batch × accumulation × data-parallel GPUs (every GPU of "
                "the offer: recommend picks DDP or ZeRO per offer, so the global batch grows "
                "with the GPUs)")


# --- the compact lines ----------------------------------------------------------------------


def machine(row: RankedOffer) -> str:
    """GPU ×GPUs per machine, and ×machines when the run spans several."""
    shape = f"{row.gpu_id} ×{row.gpus_per_node}"
    return shape + (f" ×{row.nodes}" if row.nodes > 1 else "")


def short_reasons(row: RankedOffer) -> list[str]:
    """The short reason, as phrases from the most to the least telling: what the job needs
    of the memory, what to know before renting, then how the job is spread."""
    said = [need_phrase(row)]
    if row.gpu_variant_assumed:
        said.append("GPU variant assumed")
    if row.stale:
        said.append("stale price")
    if row.availability == "out_of_stock":
        said.append("no stock when read")
    if row.charged_hours > row.billed_hours + 1e-9:
        said.append(f"pays a {row.charged_hours:,.0f} h term")
    if row.similar_offers > 1:
        said.append(f"{row.similar_offers} hosts")
    if row.resold_from:
        said.append(f"resold {row.resold_from}")
    return [*said, STRATEGY.get(row.sharding, row.sharding)]


def need_phrase(row: RankedOffer) -> str:
    """ "needs N of M GB" as the offer's own fit reason words it (from the unrounded need),
    so the short reason and the reasons never disagree in the last digit."""
    for reason in row.reasons:
        found = NEEDS.search(reason)
        if found:
            return found.group(0)
    return f"needs {row.need_gb_per_gpu:.1f} of {row.usable_gb_per_gpu:.1f} GB"


def fit_phrases(phrases: Sequence[str], width: int) -> str:
    """As many whole phrases as fit in `width`, joined by commas; a first phrase too long is
    cut at a space with an ellipsis. A word is never split."""
    out = ""
    for phrase in phrases:
        joined = f"{out}, {phrase}" if out else phrase
        if len(joined) > width:
            break
        out = joined
    if out or not phrases or width < 2:
        return out
    words = phrases[0].split()
    while words and len(" ".join(words)) + 1 > width:
        words.pop()
    return " ".join(words) + "…" if words else ""


def _span(value: float, low: float | None, high: float | None, ranges: bool) -> str:
    """The figure ranked, and its range: "1.21–1.81" when the figure is the range's low end
    (the usual case), "1.50 (1.21–1.81)" when not."""
    if not ranges or low is None or high is None or abs(high - low) < 0.005:
        return f"{value:,.2f}"
    if abs(value - low) < 0.005:
        return f"{value:,.2f}–{high:,.2f}"
    return f"{value:,.2f} ({low:,.2f}–{high:,.2f})"


def compact_lines(rec: Recommendation, width: int) -> list[str]:
    """The header and one line per ranked offer, none wider than `width` unless the figures
    alone are (the ranges go first, then the short reason)."""
    for ranges in (True, False):
        rows = []
        for i, r in enumerate(rec.ranked, 1):
            hours = r.range.expected_hours if r.range else None
            usd = r.range.total_usd if r.range else None
            rows.append([str(i), r.provider, machine(r), sold_as(r.term_kind, r.min_term_hours),
                         f"{r.price_usd_per_gpu_hour:,.2f}",
                         _span(r.expected_hours, hours.low if hours else None,
                               hours.high if hours else None, ranges),
                         _span(r.total_usd, usd.low if usd else None,
                               usd.high if usd else None, ranges)])
        head = ["#", "provider", "GPU ×n ×machines", "term", "$/GPU-h", "hours", "total $"]
        widths = [max(len(c) for c in col) for col in zip(head, *rows, strict=True)]
        why_width = width - sum(widths) - len(GAP) * len(widths)
        if why_width >= MIN_WHY or not ranges:
            break
    right = {0, 4, 5, 6}  # numbers are right-aligned

    def line(cells: list[str], why: str) -> str:
        text = GAP.join(c.rjust(w) if j in right else c.ljust(w)
                        for j, (c, w) in enumerate(zip(cells, widths, strict=True)))
        return f"{text}{GAP}{why}".rstrip()

    out = [line(head, "why" if why_width >= 3 else "")]
    for cells, r in zip(rows, rec.ranked, strict=True):
        out.append(line(cells, fit_phrases(short_reasons(r), max(0, why_width))))
    return out


def per_hour_line(rec: Recommendation) -> str:
    """What one hour of each ranked offer costs, labelled: per machine, and per order where
    the run takes several machines."""
    parts = []
    for i, r in enumerate(rec.ranked, 1):
        if r.nodes > 1:
            parts.append(f"#{i} {r.price_usd_per_order_hour:,.2f} for the order of {r.nodes} "
                         f"machines ({r.price_usd_per_machine_hour:,.2f} per machine)")
        else:
            gpus = "1 GPU" if r.gpus_per_node == 1 else f"{r.gpus_per_node} GPUs"
            parts.append(f"#{i} {r.price_usd_per_machine_hour:,.2f} (1 machine, {gpus})")
    return "$ per hour of what the run rents: " + "; ".join(parts)


def batch_line(rec: Recommendation, job: Job | None) -> str:
    """The batch each offer trains with, and the rule for the global batch."""
    if job is None:
        return GLOBAL_BATCH
    dp = [f"#{i} {r.gpus_per_node * r.nodes}" for i, r in enumerate(rec.ranked, 1)]
    return (f"batch: micro-batch {job.batch_size} × {job.seq_len:,} tokens per GPU, "
            f"accumulation {job.grad_accum}; {GLOBAL_BATCH}"
            + (f"; data-parallel GPUs: {', '.join(dp)}" if dp else ""))


def managed_line(rec: Recommendation) -> str:
    best = rec.ranked[0].total_usd if rec.ranked else None
    quotes = [f"{q.service} {q.cost_usd:,.2f} $"
              + (f" ({q.cost_usd / best:.1f}× the best rented)" if best else "")
              for q in rec.managed]
    return ("managed fine-tuning, priced per training token (no GPU to rent; --wide for the "
            "notes): " + ", ".join(quotes))


# --- --explain: every reason under its offer --------------------------------------------------


def explain_lines(rec: Recommendation, width: int) -> list[str]:
    """Per ranked offer: what it is, its prices per GPU, machine and order, its hours and
    cost with their ranges and parts, and every reason; wrapped at words."""
    out: list[str] = []

    def wrap(text: str, first: str, rest: str) -> None:
        out.extend(textwrap.wrap(text, width=max(width, 40), initial_indent=first,
                                 subsequent_indent=rest, break_long_words=False,
                                 break_on_hyphens=False))

    for i, r in enumerate(rec.ranked, 1):
        where = f" · {r.region}" if r.region else ""
        wrap(f"#{i} {r.provider} · {machine(r)} · {sold_as(r.term_kind, r.min_term_hours)}"
             f" · {r.offer_key}{where}", "", "   ")
        prices = [f"{r.price_usd_per_gpu_hour:,.2f} $/GPU-h",
                  f"{r.price_usd_per_machine_hour:,.2f} $/machine-h"]
        if r.nodes > 1:
            prices.append(f"{r.price_usd_per_order_hour:,.2f} $/order-h ({r.nodes} machines)")
        if any("per order-hour" in x for x in r.reasons):  # a reason prices the order
            prices = []
        wrap("; ".join([*(["price " + ", ".join(prices)] if prices else []),
                        f"price age {r.price_age_label}"]), "   ", "     ")
        hours = f"{r.expected_hours:,.2f} h expected"
        usd = f"{r.total_usd:,.2f} $ in total"
        if r.range is not None:
            h, t = r.range.expected_hours, r.range.total_usd
            hours += _bracket(h.low, h.high)
            usd += (f" ({t.low:,.2f}–{t.high:,.2f}: {r.range.basis})"
                    if abs(t.high - t.low) >= 0.005 else f" (range: {r.range.basis})")
        parts = (f"compute {r.compute_usd:,.2f} + storage {cost_part(r, 'storage')} + "
                 f"egress {cost_part(r, 'egress')}")
        wrap(f"{hours}, {r.charged_hours:,.2f} h charged; {usd}: {parts}; "
             f"{r.tokens_per_s:,.0f} tokens/s", "   ", "     ")
        for reason in r.reasons:
            wrap(reason, "   - ", "     ")
    return out


def _bracket(low: float, high: float) -> str:
    return "" if abs(high - low) < 0.005 else f" ({low:,.2f}–{high:,.2f})"


def cost_part(row: RankedOffer, part: str) -> str:
    """A part of the whole cost as a figure, or "unknown" where the offer's reasons say its
    price is unknown (it is then not counted in the total)."""
    if any(x.startswith(f"{part} price unknown") for x in row.reasons):
        return "unknown (not counted)"
    return f"{getattr(row, f'{part}_usd'):,.2f}"


# --- --wide: the full table -----------------------------------------------------------------


def _shape(row: RankedOffer) -> str:
    shape = f"{row.gpu_id} ×{row.gpus_per_node}"
    shape += f" ×{row.nodes} machines" if row.nodes > 1 else ""
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


def _range(row: RankedOffer, what: str) -> str:
    """The figure's range under it: "(9.1–14.0)"."""
    if row.range is None:
        return ""
    r = row.range.expected_hours if what == "hours" else row.range.total_usd
    return f"\n({r.low:,.2f}–{r.high:,.2f})"


_URL = re.compile(r"https?://([^/\s,;)]+)[^\s,;)]*")


def cited_by_host(reason: str) -> str:
    """A reason with each source URL cut to its host: the table's column is too narrow for a
    whole URL, which --explain and --format json print in full."""
    return _URL.sub(lambda m: m.group(1), reason)


def wide_table(rec: Recommendation) -> Table:
    from rich.table import Table

    heads = ("#", "provider", "machine", "sold as", "$", "price age", "hours", "charged h",
             "total $", "why")
    rows = [(str(i), row.provider, _shape(row), sold_as(row.term_kind, row.min_term_hours),
             _prices(row), row.price_age_label,
             f"{row.expected_hours:.2f}" + _range(row, "hours"), f"{row.charged_hours:,.2f}",
             f"{row.total_usd:,.2f}" + _range(row, "usd"),
             "\n".join(map(cited_by_host, row.reasons)))
            for i, row in enumerate(rec.ranked, 1)]
    table = Table(title=_title(rec), header_style="bold", show_lines=True)
    for j, head in enumerate(heads):
        # The figures keep their lines; the reasons wrap at spaces in a column no narrower
        # than their longest word, so a word is never split ("checkpoin t").
        longest = max((len(w) for r in rows for w in r[j].split()), default=1)
        table.add_column(head, no_wrap=head != "why", overflow="fold",
                         min_width=min(longest, 40) if head == "why" else None)
    for r in rows:
        table.add_row(*r)
    return table


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
                      f"{q.cost_usd:,.2f}", versus, "\n".join(map(cited_by_host, q.notes)))
    return table


def rejected_table(rec: Recommendation) -> Table:
    from rich.table import Table

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
    return rejected


# --- the whole answer -----------------------------------------------------------------------


def _title(rec: Recommendation) -> str:
    return (f"{rec.model_id} · {rec.method} · {rec.tokens:,} tokens — "
            f"{len(rec.ranked)} best of {rec.offers_evaluated} offers")


def _notes(out: Console, lines: Sequence[str]) -> None:
    """One bulleted note each, wrapped at words under the console's width."""
    for note in lines:
        for text in textwrap.wrap(note, width=max(out.width, 40), initial_indent="- ",
                                  subsequent_indent="  ", break_long_words=False,
                                  break_on_hyphens=False):
            _line(out, text)


def _line(out: Console, text: str, style: str | None = None) -> None:
    """A line already wrapped at words. One longer than the console is a single word (a
    source's URL): printed whole for the terminal to wrap, never cropped or cut."""
    out.print(text, style=style, highlight=False, markup=False, soft_wrap=True)


def print_recommendation(rec: Recommendation, *, explain: bool, wide: bool = False,
                         job: Job | None = None, out: Console | None = None) -> None:
    """Compact lines (default), with every reason (`explain`), or the full table (`wide`)."""
    out = out or make_console()
    if wide:
        # The full table needs about 160 columns; in a narrower terminal its lines run on
        # (the terminal wraps them) rather than squeezing the reasons a few letters wide.
        from rich.console import Console

        Console(file=out.file, width=max(out.width, WIDE), force_terminal=out.is_terminal,
                color_system="auto" if out.color_system else None,
                no_color=out.no_color).print(wide_table(rec))
    else:
        out.print(_title(rec), style="bold", highlight=False, markup=False)
        lines = compact_lines(rec, out.width)
        out.print(lines[0], style="bold", highlight=False, markup=False, no_wrap=True)
        for text in lines[1:]:
            out.print(text, highlight=False, markup=False, no_wrap=True)
        if explain and rec.ranked:
            out.print()
            for text in explain_lines(rec, out.width):
                _line(out, text)
            out.print()
    summary = [UNITS, per_hour_line(rec)] if rec.ranked else [UNITS]
    summary += [batch_line(rec, job),
                f"storage {rec.storage_gb:.1f} GB during the run, checkpoints "
                f"{rec.checkpoint_gb:.2f} GB, final weights {rec.egress_gb:.2f} GB; "
                f"{rec.shapes_evaluated} machine shapes sized"]
    if rec.managed and not wide:
        summary.append(managed_line(rec))
    _notes(out, summary)
    if rec.managed and wide:
        out.print(managed_table(rec))
    _notes(out, [set_aside_line(rec), *rec.uncertainty_notes, *rec.price_notes, *rec.warnings])
    if not rec.ranked:
        out.print("[red]no offer can run this job[/red]: see --explain")
    if explain and not rec.rejected_cheaper:
        _notes(out, ["no offer cheaper per hour than the best was set aside"])
    elif explain:
        out.print(rejected_table(rec))
    if not explain and not wide:
        hint = ("--explain: every reason under each offer and the cheaper offers set aside; "
                "--wide: the full table; --format json: everything")
        for text in textwrap.wrap(hint, width=max(out.width, 40), break_long_words=False):
            _line(out, text, style="dim")

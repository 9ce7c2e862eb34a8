"""`gpuscout estimate`: memory and time of one fine-tuning job, as a table or JSON.

Register with `app.command("estimate")(estimate_command)`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuscout.cli.db_option import DbOption, warehouse
from gpuscout.cli.job_options import job_options
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.job import Job  # the command's annotation: typer reads it at start-up

if TYPE_CHECKING:  # the model modules load data; keep them off the CLI's start-up path
    from gpuscout.sizing.fit import FitAdvice
    from gpuscout.sizing.types import Estimate

GpuOpt = Annotated[str | None, typer.Option("--gpu", help="GPU id, e.g. h100-sxm-80gb")]
TokensOpt = Annotated[float | None, typer.Option(
    "--tokens", help="training tokens in total (for hours)")]
FormatOpt = Annotated[str, typer.Option("--format", help="table|json")]
CorrectionOpt = Annotated[bool, typer.Option(
    "--correction/--no-correction",
    help="correct tokens/s and hours by your own runs of this GPU, framework and method "
         "(gpuscout runs add)")]
OfferOpt = Annotated[str | None, typer.Option(
    "--offer", help="PROVIDER:KEY of a current offer: its GPU, GPUs per machine, interconnect "
                    "and network place the job as the recommendation does (a key's unique start "
                    "will do)")]
FitOpt = Annotated[bool, typer.Option(
    "--fit", help="with --gpu: the largest micro-batch and sequence that fit, and the changes "
                  "that make the job fit, with their memory and cost")]


# The breakdown's terms that are the allocator's margin, not what the job needs
MARGIN_TERMS = ("allocator_reserve", "stale_loss_segments")


def estimate_to_dict(est: Estimate) -> dict[str, Any]:
    from gpuscout.sizing.memory import fit_verdict

    mem, t = est.memory, est.time
    flops = t.flops_per_token if t else est.flops_per_token
    extra = [] if t else ["pass --gpu for tokens/s, step time and hours"]
    return {
        "model": est.model_id,
        "gpu": est.gpu_id,
        "dtype": est.dtype,
        "method": est.job.method,
        "need_gb_per_gpu": mem.need_gb_per_gpu,
        "usable_gb_per_gpu": mem.usable_gb_per_gpu,
        "margin_gb": mem.margin_gb,
        "fits": mem.fits,
        "fits_with_margin": mem.fits_with_margin,
        "verdict": fit_verdict(mem),
        "peak_gb_per_gpu": mem.peak_gb_per_gpu,
        "allocated_gb": mem.allocated_gb,
        "reserved_gb": mem.reserved_gb,
        "breakdown": mem.breakdown,
        "trainable_params": mem.trainable_params,
        "total_params": mem.total_params,
        "host_ram_gb": mem.host_ram_gb,
        "flops_per_token": flops,
        "tokens_per_s": t.tokens_per_s if t else None,
        "tokens_per_s_per_gpu": t.tokens_per_s_per_gpu if t else None,
        "step_time_s": t.step_time_s if t else None,
        "mfu": t.mfu if t else None,
        "bound": t.bound if t else None,
        "optimizer_step_s": t.optimizer_step_s if t else None,
        "communication_s": t.communication_s if t else None,
        "communication_exposed_s": t.communication_exposed_s if t else None,
        "placement": t.placement if t else None,
        "micro_batch_s": t.micro_batch_s if t else None,
        "hours": t.hours if t else None,
        "job": est.job.model_dump(),
        "range": _range(est),
        "correction": _correction(est),
        "notes": [*est.notes, *mem.notes, *(t.notes if t else extra)],
    }


def _range(est: Estimate) -> dict[str, Any] | None:
    u = est.uncertainty
    if u is None:
        return None
    return {"regime": u.regime, "calibration_rows": u.calibration_rows, "runs": u.runs,
            "tokens_per_s": u.tokens_per_s.model_dump(),
            "hours": u.hours.model_dump() if u.hours else None}


def _correction(est: Estimate) -> dict[str, Any] | None:
    c = est.correction
    if c is None:
        return None
    peak = (est.memory.peak_gb_per_gpu * c.memory_factor if c.memory_factor is not None
            else None)
    return {"runs": c.runs, "gpu": c.gpu_id, "framework": c.framework, "method": c.method,
            "tokens_per_s_factor": c.factor, "model_tokens_per_s": c.model_tokens_per_s,
            "memory_runs": c.memory_runs, "memory_factor": c.memory_factor,
            "corrected_peak_gb_per_gpu": peak, "text": c.text}


def _print_table(data: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console()
    _print_memory(console, data)
    if data["tokens_per_s"] is not None:
        _print_time(console, data)
    fix = data["correction"]
    if fix is not None:
        console.print(fix["text"], highlight=False)
    if data["range"] is not None:
        console.print(_range_line(data["range"]), highlight=False)
    if fix is not None and fix["corrected_peak_gb_per_gpu"] is not None:
        console.print(f"peak corrected by {fix['memory_runs']} of your runs: "
                      f"{fix['corrected_peak_gb_per_gpu']:,.2f} GB per GPU "
                      f"(×{fix['memory_factor']:.2f})", highlight=False)
    for note in data["notes"]:
        if fix is None or note != fix["text"]:
            console.print(f"- {note}", highlight=False)


def _print_memory(console: Any, data: dict[str, Any]) -> None:
    """What the job needs, term by term, then the allocator's margin and the verdict."""
    from rich.table import Table

    title = f"{data['model']} · {data['method']} · {data['dtype']}" + (
        f" · {data['gpu']}" if data["gpu"] else "")
    table = Table(title=title, show_header=True)
    table.add_column("term")
    table.add_column("GB per GPU", justify="right")
    for name, gb in data["breakdown"].items():
        if gb and name not in MARGIN_TERMS:
            table.add_row(name.replace("_", " "), f"{gb:,.2f}")
    table.add_row("[bold]needs[/bold]", f"[bold]{data['need_gb_per_gpu']:,.2f}[/bold]")
    margin = data["margin_gb"]
    for name, gb in margin.items():
        table.add_row(f"+ margin: {name.replace('_', ' ')}", f"{gb:,.2f}")
    if margin:
        table.add_row("with the allocator's margin",
                      f"{data['need_gb_per_gpu'] + sum(margin.values()):,.2f}")
    console.print(table)
    console.print(f"trainable {data['trainable_params']:,} of {data['total_params']:,} params"
                  + (f"; host RAM {data['host_ram_gb']:,.1f} GB" if data["host_ram_gb"] else ""))
    if data["verdict"] is not None:
        console.print(data["verdict"] if data["fits"] else f"[red]{data['verdict']}[/red]",
                      highlight=False)


def _print_time(console: Any, data: dict[str, Any]) -> None:
    """Tokens/s with the bound that binds, and, on several GPUs, the communication."""
    several = data["job"]["gpus"] > 1
    per_gpu = f" ({data['tokens_per_s_per_gpu']:,.0f} per GPU)" if several else ""
    line = (f"{data['tokens_per_s']:,.0f} tokens/s{per_gpu}, step {data['step_time_s']:.2f} s, "
            f"{data['flops_per_token'] / 1e9:,.1f} GFLOP/token, MFU {data['mfu']:.0%}, "
            f"{data['bound']}-bound")
    if data["hours"] is not None:
        line += f", {data['hours']:,.1f} h"
    console.print(line, highlight=False)
    if several:
        binds = "binds" if data["bound"] == "communication" else "does not bind"
        console.print(f"communication {data['communication_s']:.3f} s per step, "
                      f"{data['communication_exposed_s']:.3f} s of it not hidden by compute "
                      f"({binds}); over {data['placement']}", highlight=False)


def _range_line(r: dict[str, Any]) -> str:
    tps, hours = r["tokens_per_s"], r["hours"]
    line = f"range {tps['low']:,.0f}–{tps['high']:,.0f} tokens/s"
    if hours is not None:
        line += f", {hours['low']:,.1f}–{hours['high']:,.1f} h"
    basis = (f"8 of 10 of the calibration's {r['calibration_rows']} rows of {r['regime']} "
             "measured within it")
    if r["runs"]:
        basis = (f"narrowed by {r['runs']} of your runs; before them, the calibration's "
                 f"{r['calibration_rows']} rows of {r['regime']}")
    return f"{line} ({basis})"


def _print_fit(advice: FitAdvice) -> None:
    from rich.console import Console
    from rich.table import Table

    from gpuscout.sizing.memory import vram_label

    console = Console()
    batch = advice.max_batch_size
    seq = advice.max_seq_len
    console.print(f"on {advice.gpu_id} ({vram_label(advice.vram_gb)}): largest micro-batch at "
                  f"this sequence length {batch if batch is not None else 'none (not even 1)'}; "
                  f"longest sequence at this micro-batch "
                  f"{f'{seq:,} tokens' if seq is not None else 'none'}", highlight=False)
    table = Table(title="changes" + ("" if advice.fits else " that make the job fit"),
                  show_header=True)
    for col in ("change", "needs GB", "saves GB", "fits", "tokens/s", "cost ×"):
        table.add_column(col, justify="left" if col == "change" else "right")
    for c in advice.changes:
        table.add_row(c.change, f"{c.need_gb_per_gpu:,.1f}", f"{c.saves_gb:,.1f}",
                      "yes" if c.fits else "no",
                      "" if c.tokens_per_s is None else f"{c.tokens_per_s:,.0f}",
                      "" if c.cost_factor is None else f"{c.cost_factor:.2f}")
    console.print(table)
    console.print(f"needs: tensors and CUDA context per GPU, of {advice.usable_gb_per_gpu:,.1f} "
                  "GB usable; cost ×: GPU-seconds per token against the job as given",
                  highlight=False)


@job_options()
def estimate_command(job: Job, gpu: GpuOpt = None, tokens: TokensOpt = None,
                     output_format: FormatOpt = "table", fit: FitOpt = False,
                     correction: CorrectionOpt = True, offer: OfferOpt = None,
                     db: DbOption = None) -> None:
    """Estimate peak GPU memory (with a breakdown) and training time of a fine-tuning job."""
    from gpuscout.api import estimate
    from gpuscout.api import fit as fit_advice

    if output_format not in ("table", "json"):
        raise UserInputError(f"--format {output_format!r} is not one of table|json")
    if fit and gpu is None and offer is None:
        raise UserInputError("--fit needs --gpu: what fits depends on the GPU's memory")
    data = estimate_to_dict(estimate(job, gpu=gpu, tokens=tokens, correction=correction,
                                     db=warehouse(db), offer=offer))
    advice = fit_advice(job, gpu=gpu or data["gpu"]) if fit and data["gpu"] else None
    if output_format == "json":
        if advice is not None:
            data["fit"] = advice.model_dump()
        typer.echo(json.dumps(data, indent=2))
    else:
        _print_table(data)
        if advice is not None:
            _print_fit(advice)

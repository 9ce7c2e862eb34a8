"""`gpuscout estimate`: memory and time of one fine-tuning job, as a table or JSON.

The job options are declared once here (the `*Opt` aliases) and turned into inputs by
`job_from_options()`, so `gpuscout recommend` can reuse both. Register with
`app.command("estimate")(estimate_command)`.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.choices import CHOICES

if TYPE_CHECKING:  # the model modules load data; keep them off the CLI's start-up path
    from gpuscout.sizing.architectures import Architecture
    from gpuscout.sizing.types import Estimate, JobSpec

ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="Model id from the catalog (e.g. meta-llama/Llama-3.1-8B; org optional)")]
ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", help="A local Hugging Face config.json (read offline)")]
ParamsOpt = Annotated[float | None, typer.Option(
    "--params", help="Parameter count of an unknown model (generic Llama-like shape)")]
MethodOpt = Annotated[str, typer.Option(
    "--method", help="full|lora|qlora|dora|ia3|prefix|prompt|adapter")]
RankOpt = Annotated[int, typer.Option("--lora-rank", help="LoRA/DoRA rank r")]
TargetsOpt = Annotated[str, typer.Option("--lora-targets", help="qv|attn|all-linear")]
DtypeOpt = Annotated[str, typer.Option("--dtype", help="fp32|fp16|bf16 compute precision")]
QuantOpt = Annotated[str, typer.Option(
    "--quant", help="none|int8|nf4 base weights (qlora implies nf4)")]
DoubleQuantOpt = Annotated[bool, typer.Option(
    "--double-quant/--no-double-quant", help="NF4 double quantization of the scales")]
OptimizerOpt = Annotated[str, typer.Option(
    "--optimizer", help="adamw|adamw-8bit|paged-adamw-8bit|sgd|adafactor")]
MixedOpt = Annotated[bool, typer.Option(
    "--mixed-precision/--pure", help="fp32 master weights and states, or all 16-bit")]
BatchOpt = Annotated[int, typer.Option("--batch-size", help="micro-batch per GPU")]
SeqOpt = Annotated[int, typer.Option("--seq-len", help="tokens per sequence")]
AccumOpt = Annotated[int, typer.Option("--grad-accum", help="gradient accumulation steps")]
CheckpointOpt = Annotated[bool, typer.Option(
    "--grad-checkpointing/--no-grad-checkpointing", help="recompute activations")]
FlashOpt = Annotated[bool, typer.Option(
    "--flash-attention/--no-flash-attention", help="FlashAttention/SDPA vs eager attention")]
ChunkedOpt = Annotated[bool, typer.Option(
    "--chunked-loss/--no-chunked-loss", help="fused/chunked cross-entropy (Liger-style)")]
PackedOpt = Annotated[bool, typer.Option(
    "--packed/--variable-lengths", help="sequences packed to --seq-len, or batches of varying "
                                        "length (the allocator then keeps stale loss segments)")]
GpusOpt = Annotated[int, typer.Option("--gpus", help="number of GPUs")]
ShardingOpt = Annotated[str, typer.Option(
    "--sharding", help="none|ddp|zero1|zero2|zero3|fsdp")]
OffloadOpt = Annotated[str, typer.Option("--offload", help="none|optimizer|params")]
GpuOpt = Annotated[str | None, typer.Option("--gpu", help="GPU id, e.g. h100-sxm-80gb")]
TokensOpt = Annotated[float | None, typer.Option(
    "--tokens", help="training tokens in total (for hours)")]
FormatOpt = Annotated[str, typer.Option("--format", help="table|json")]

_CHOICES = CHOICES


def _choice(name: str, value: str) -> str:
    allowed = _CHOICES[name]
    v = value.strip().lower()
    if v not in allowed:
        raise UserInputError(f"--{name.replace('_', '-')} {value!r} is not one of "
                             f"{'|'.join(allowed)}")
    return v


def resolve_model(model: str | None, config: Path | None,
                  params: float | None) -> tuple[Architecture, list[str]]:
    """Exactly one of --model, --config, --params picks the architecture."""
    from gpuscout.sizing.architectures import from_param_count, load_hf_config, lookup

    given = [x for x in (model, config, params) if x is not None]
    if len(given) != 1:
        raise UserInputError("give exactly one of --model ID, --config PATH or --params N")
    if model is not None:
        return lookup(model), []
    if config is not None:
        return load_hf_config(config), [f"architecture read from {config}"]
    assert params is not None
    arch = from_param_count(params)
    return arch, [f"unknown model: a generic Llama-shaped {params / 1e9:.3g}B stand-in "
                  f"({arch.num_layers} layers, hidden {arch.hidden_size}, vocabulary "
                  f"{arch.vocab_size}); activations and logits are rough"]


def job_from_options(*, model: str | None = None, config: Path | None = None,
                     params: float | None = None, method: str = "lora", lora_rank: int = 16,
                     lora_targets: str = "qv", dtype: str = "bf16", quant: str = "none",
                     double_quant: bool = True, optimizer: str = "adamw",
                     mixed_precision: bool = True, batch_size: int = 1, seq_len: int = 2048,
                     grad_accum: int = 1, grad_checkpointing: bool = True,
                     flash_attention: bool = True, chunked_loss: bool = False,
                     packed: bool = False, gpus: int = 1,
                     sharding: str = "none", offload: str = "none",
                     ) -> tuple[Architecture, JobSpec, list[str]]:
    """The architecture, validated job and warnings for a set of command-line options."""
    from gpuscout.sizing.types import JobSpec

    arch, warnings = resolve_model(model, config, params)
    fields: dict[str, Any] = {
        "method": _choice("method", method), "lora_rank": lora_rank,
        "lora_targets": _choice("lora_targets", lora_targets),
        "dtype": _choice("dtype", dtype), "quant": _choice("quant", quant),
        "double_quant": double_quant, "optimizer": _choice("optimizer", optimizer),
        "mixed_precision": mixed_precision, "batch_size": batch_size, "seq_len": seq_len,
        "grad_accum": grad_accum, "grad_checkpointing": grad_checkpointing,
        "flash_attention": flash_attention, "chunked_loss": chunked_loss,
        "variable_lengths": not packed, "gpus": gpus,
        "sharding": _choice("sharding", sharding), "offload": _choice("offload", offload),
    }
    return arch, JobSpec(**fields), warnings


def load_gpu(gpu_id: str) -> Any:
    """The catalog GpuSpec for `gpu_id`, or a UserInputError with close ids."""
    from gpuscout.core.catalog import load_catalog  # the catalog is only needed with --gpu

    catalog = load_catalog()
    key = gpu_id.strip().lower()
    if key in catalog.gpus:
        return catalog.gpu(key)
    close = difflib.get_close_matches(key, list(catalog.gpus), n=5, cutoff=0.5)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    raise UserInputError(f"unknown GPU {gpu_id!r}{hint}")


def estimate_to_dict(est: Estimate, arch: Architecture,
                     warnings: list[str] | None = None) -> dict[str, Any]:
    from gpuscout.sizing.throughput import flops_per_token

    mem, t = est.memory, est.time
    flops = t.flops_per_token if t else flops_per_token(arch, est.job)[0]
    extra = [] if t else ["pass --gpu for tokens/s, step time and hours"]
    return {
        "model": est.model_id,
        "gpu": est.gpu_id,
        "dtype": est.dtype,
        "method": est.job.method,
        "peak_gb_per_gpu": mem.peak_gb_per_gpu,
        "allocated_gb": mem.allocated_gb,
        "reserved_gb": mem.reserved_gb,
        "fits": mem.fits,
        "breakdown": mem.breakdown,
        "trainable_params": mem.trainable_params,
        "total_params": mem.total_params,
        "host_ram_gb": mem.host_ram_gb,
        "flops_per_token": flops,
        "tokens_per_s": t.tokens_per_s if t else None,
        "tokens_per_s_per_gpu": t.tokens_per_s_per_gpu if t else None,
        "step_time_s": t.step_time_s if t else None,
        "mfu": t.mfu if t else None,
        "hours": t.hours if t else None,
        "job": est.job.model_dump(),
        "notes": [*(warnings or []), *est.notes, *mem.notes, *(t.notes if t else extra)],
    }


def _print_table(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    title = f"{data['model']} · {data['method']} · {data['dtype']}" + (
        f" · {data['gpu']}" if data["gpu"] else "")
    table = Table(title=title, show_header=True)
    table.add_column("term")
    table.add_column("GB per GPU", justify="right")
    for name, gb in data["breakdown"].items():
        if gb:
            table.add_row(name.replace("_", " "), f"{gb:,.2f}")
    table.add_row("[bold]peak[/bold]", f"[bold]{data['peak_gb_per_gpu']:,.2f}[/bold]")
    console.print(table)
    console.print(f"trainable {data['trainable_params']:,} of {data['total_params']:,} params"
                  + (f"; host RAM {data['host_ram_gb']:,.1f} GB" if data["host_ram_gb"] else ""))
    if data["fits"] is not None:
        console.print("fits" if data["fits"] else "[red]does not fit[/red]")
    if data["tokens_per_s"] is not None:
        line = (f"{data['tokens_per_s']:,.0f} tokens/s, step {data['step_time_s']:.2f} s, "
                f"{data['flops_per_token'] / 1e9:,.1f} GFLOP/token, MFU {data['mfu']:.0%}")
        if data["hours"] is not None:
            line += f", {data['hours']:,.1f} h"
        console.print(line)
    for note in data["notes"]:
        console.print(f"- {note}", highlight=False)


def estimate_command(
    model: ModelOpt = None, config: ConfigOpt = None, params: ParamsOpt = None,
    method: MethodOpt = "lora", lora_rank: RankOpt = 16, lora_targets: TargetsOpt = "qv",
    dtype: DtypeOpt = "bf16", quant: QuantOpt = "none", double_quant: DoubleQuantOpt = True,
    optimizer: OptimizerOpt = "adamw", mixed_precision: MixedOpt = True,
    batch_size: BatchOpt = 1, seq_len: SeqOpt = 2048, grad_accum: AccumOpt = 1,
    grad_checkpointing: CheckpointOpt = True, flash_attention: FlashOpt = True,
    chunked_loss: ChunkedOpt = False, packed: PackedOpt = False, gpus: GpusOpt = 1,
    sharding: ShardingOpt = "none",
    offload: OffloadOpt = "none", gpu: GpuOpt = None, tokens: TokensOpt = None,
    output_format: FormatOpt = "table",
) -> None:
    """Estimate peak GPU memory (with a breakdown) and training time of a fine-tuning job."""
    from gpuscout.sizing.estimate import estimate

    fmt: Literal["table", "json"]
    if output_format not in ("table", "json"):
        raise UserInputError(f"--format {output_format!r} is not one of table|json")
    fmt = "json" if output_format == "json" else "table"
    arch, job, warnings = job_from_options(
        model=model, config=config, params=params, method=method, lora_rank=lora_rank,
        lora_targets=lora_targets, dtype=dtype, quant=quant, double_quant=double_quant,
        optimizer=optimizer, mixed_precision=mixed_precision, batch_size=batch_size,
        seq_len=seq_len, grad_accum=grad_accum, grad_checkpointing=grad_checkpointing,
        flash_attention=flash_attention, chunked_loss=chunked_loss, packed=packed, gpus=gpus,
        sharding=sharding, offload=offload)
    spec = load_gpu(gpu) if gpu else None
    if tokens is not None and tokens < 1:
        raise UserInputError(f"--tokens must be at least 1, got {tokens:g}")
    if tokens is not None and spec is None:
        warnings.append("--tokens needs --gpu to turn into hours")
    est = estimate(arch, job, spec, int(tokens) if tokens else None)
    data = estimate_to_dict(est, arch, warnings)
    if fmt == "json":
        typer.echo(json.dumps(data, indent=2))
    else:
        _print_table(data)

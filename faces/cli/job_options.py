"""The job options of `estimate`, `recommend` and `report`, made from `Job`'s fields.

`@job_options()` adds one command-line option per field of `gpuscout.sizing.job.Job` (its
description is the help text) and hands the command a validated `Job` as `job`. A new job
option is therefore one field of `Job`; nothing here lists them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

import typer

from gpuscout.sizing.job import Job

F = TypeVar("F", bound=Callable[..., Any])

# Flags that are not simply --field-name: booleans spelled as a pair.
FLAGS = {
    "double_quant": "--double-quant/--no-double-quant",
    "mixed_precision": "--mixed-precision/--pure",
    "grad_checkpointing": "--grad-checkpointing/--no-grad-checkpointing",
    "flash_attention": "--flash-attention/--no-flash-attention",
    "chunked_loss": "--chunked-loss/--no-chunked-loss",
    "packed": "--packed/--variable-lengths",
    "checkpoint_offload": "--checkpoint-offload/--no-checkpoint-offload",
    "activation_offloading": "--activation-offloading/--no-activation-offloading",
    "compile": "--compile/--no-compile",
    "fused_kernels": "--fused-kernels/--no-fused-kernels",
    "optimizer_in_backward": "--optimizer-in-backward/--no-optimizer-in-backward",
    "grad_clipping": "--grad-clipping/--no-grad-clipping",
    "fp32_loss": "--fp32-loss/--no-fp32-loss",
    "train_embeddings": "--train-embeddings/--no-train-embeddings",
    "upcast_non_quantized": "--upcast-non-quantized/--no-upcast-non-quantized",
    "adapter_fp32": "--adapter-fp32/--no-adapter-fp32",
    "base_fp32": "--base-fp32/--no-base-fp32",
    "quantize_head": "--quantize-head/--no-quantize-head",
    "embedding_grad": "--embedding-grad/--no-embedding-grad",
    "logits_kept": "--logits-kept/--no-logits-kept",
    "sequence_parallel": "--sequence-parallel/--no-sequence-parallel",
    "distributed_optimizer": "--distributed-optimizer/--no-distributed-optimizer",
    "online": "--online/--offline",
    "overlap_comm": "--overlap-comm/--no-overlap-comm",
}


def _cli_type(annotation: Any) -> Any:
    # A closed set arrives as text: Job's own check names the allowed values in one line.
    return str if get_origin(annotation) is Literal else annotation


def _parameter(name: str, default: Any) -> inspect.Parameter:
    field = Job.model_fields[name]
    flag = FLAGS.get(name, "--" + name.replace("_", "-"))
    option = typer.Option(flag, help=field.description)
    annotation = _cli_type(field.annotation)
    if Path in get_args(annotation):
        option = typer.Option(flag, help=field.description, dir_okay=False)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[annotation, option])


def job_options(exclude: Iterable[str] = (), **defaults: Any) -> Callable[[F], F]:
    """Give a typer command the job options (less `exclude`, with `defaults` overriding
    Job's); the command takes `job: Job` instead of them."""
    skip = set(exclude)
    unknown = (skip | set(defaults)) - set(Job.model_fields)
    if unknown:
        raise TypeError(f"not fields of Job: {sorted(unknown)}")
    names = [n for n in Job.model_fields if n not in skip]

    def decorate(command: F) -> F:
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
               for p in inspect.signature(command, eval_str=True).parameters.values()
               if p.name != "job"]
        added = [_parameter(n, defaults.get(n, Job.model_fields[n].default)) for n in names]

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            fields = {n: kwargs.pop(n) for n in names}
            return command(job=Job(**fields), **kwargs)

        params = [*added, *own]
        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run  # type: ignore[return-value]

    return decorate

"""Framework presets: what each fine-tuning framework does by default, from its own source.

`sizing/data/frameworks.csv` holds one row per (framework, setting) with the value the
framework's code defaults to and the file (owner/repo:path@commit) it was read from. A row may
hold only for some jobs (`when`: `gpus=1`, `method=full&gpus>1`, `quant!=none`, `seq_len<512`
...), where the framework's code path differs by them (litgpt checkpoints only under its
multi-GPU strategy); at most one row of a setting holds for a job. A setting no row sets keeps
the generic value (`GENERIC`), which is what this estimator assumed before presets existed.
Explicit job options always win over the preset.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuscout.sizing.choices import CHOICES
from gpuscout.sizing.types import LORA_METHODS

FRAMEWORKS_CSV = Path(__file__).parent / "data" / "frameworks.csv"

# The value of each preset-able setting when neither the user nor the preset names one.
GENERIC: dict[str, Any] = {
    "grad_checkpointing": True,
    "optimizer": "adamw",
    "mixed_precision": True,
    "upcast_non_quantized": True,
    "loss": "eager",
    "activation_offloading": False,
    "optimizer_in_backward": False,
    "compile": False,
    "fused_kernels": False,
    "checkpoint_offload": False,
    "nf4_backend": "bitsandbytes",
    # the QLoRA paper's recipe (bnb_4bit_use_double_quant=True)
    "double_quant": True,
    "train_embeddings": False,
    # transformers TrainingArguments: max_grad_norm = 1.0, which every HF-Trainer-based
    # framework inherits
    "grad_clipping": True,
    # the adapter a LoRA job gets when neither it nor its framework names one (axolotl's
    # schema has no default rank or targets: its users must set them)
    "lora_rank": 16,
    "lora_targets": "qv",
    "lora_dropout": 0.0,
    # PEFT casts adapter weights to fp32 (get_peft_model's autocast_adapter_dtype=True)
    "adapter_fp32": True,
    # the frozen base as loaded in the compute dtype, quantized layers aside
    "base_fp32": False,
    "quantize_head": False,
    "embedding_grad": False,
    "logits_kept": False,
    # transformers' causal LMs cast the logits to fp32 for their loss
    "fp32_loss": True,
    # batches padded to their longest sample (the trainers' collators), not packed
    "packed": False,
    "sequence_parallel": False,
    "distributed_optimizer": False,
    "fp8_recipe": "te",
}
# Settings that only mean something for a LoRA-family method: a preset's value for them is
# not worth a note on a full fine-tune.
_LORA_SETTINGS = frozenset({"lora_rank", "lora_targets", "lora_dropout"})
_BOOL = {"true": True, "false": False}


def _value(setting: str, text: str) -> Any:
    generic = GENERIC[setting]
    if isinstance(generic, bool):
        return _BOOL[text.strip().lower()]
    if isinstance(generic, int | float):
        return type(generic)(text)
    allowed = CHOICES.get(setting)
    if allowed is not None and text not in allowed:
        raise ValueError(f"frameworks.csv: {setting}={text!r} is not one of {allowed}")
    return text


# `when`: conditions joined by "&", each `key=value`, `key!=value`, `key<number` or
# `key>number` on the job as given (gpus, method, quant, seq_len, grad_accum).
_CONDITION = re.compile(r"^(gpus|method|quant|seq_len|grad_accum)(!=|=|<|>)([\w.-]+)$")


@dataclass(frozen=True)
class PresetRow:
    value: Any
    source: str
    when: tuple[tuple[str, str, str], ...] = ()

    def holds(self, job: dict[str, Any]) -> bool:
        return all(_holds(job, key, op, want) for key, op, want in self.when)


def _holds(job: dict[str, Any], key: str, op: str, want: str) -> bool:
    have = _job_value(job, key)
    if op in ("<", ">"):
        number = float(have)
        return number < float(want) if op == "<" else number > float(want)
    return (str(have) == want) == (op == "=")


def _job_value(job: dict[str, Any], key: str) -> Any:
    if key == "quant":
        # QLoRA is LoRA on an NF4 base whatever --quant says (JobSpec's own rule)
        quant = job.get("quant") or "none"
        return "nf4" if job.get("method") == "qlora" and quant == "none" else quant
    defaults = {"gpus": 1, "method": "lora", "seq_len": 2048, "grad_accum": 1}
    value = job.get(key)
    return defaults[key] if value is None else value


def _when(text: str, where: str) -> tuple[tuple[str, str, str], ...]:
    out = []
    for part in filter(None, (p.strip() for p in text.split("&"))):
        m = _CONDITION.match(part)
        if not m:
            raise ValueError(f"frameworks.csv: {where}: cannot read condition {part!r}")
        out.append((m.group(1), m.group(2), m.group(3)))
    return tuple(out)


@lru_cache(maxsize=1)
def presets() -> dict[str, dict[str, list[PresetRow]]]:
    """framework -> setting -> its rows (value, source, condition)."""
    out: dict[str, dict[str, list[PresetRow]]] = {f: {} for f in CHOICES["framework"]}
    with FRAMEWORKS_CSV.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            fw, setting = row["framework"], row["setting"]
            if fw not in out or setting not in GENERIC:
                raise ValueError(f"frameworks.csv: unknown framework/setting {fw}/{setting}")
            if not row["source"].strip():
                raise ValueError(f"frameworks.csv: {fw}/{setting} has no source")
            rows = out[fw].setdefault(setting, [])
            rows.append(PresetRow(_value(setting, row["value"]), row["source"],
                                  _when(row.get("when") or "", f"{fw}/{setting}")))
            if sum(not r.when for r in rows) > 1:
                raise ValueError(f"frameworks.csv: {fw}/{setting} has two unconditional rows")
    return out


def cited(framework: str, job: dict[str, Any]) -> dict[str, PresetRow]:
    """The preset rows of `framework` that hold for `job` (the options as given), by setting.
    A row with a condition wins over the setting's unconditional one; two holding conditional
    rows are an error in the file."""
    out: dict[str, PresetRow] = {}
    for setting, rows in presets()[framework].items():
        held = [r for r in rows if r.when and r.holds(job)]
        if len(held) > 1:
            raise ValueError(f"frameworks.csv: two {framework}/{setting} rows hold for one job")
        plain = [r for r in rows if not r.when]
        if held or plain:
            out[setting] = (held or plain)[0]
    return out


def _fmt(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _worth_a_note(setting: str, job: dict[str, Any]) -> bool:
    """Whether a preset value means anything for this job (an adapter's rank does not for a
    full fine-tune, an FP8 recipe not without --dtype fp8)."""
    if setting in _LORA_SETTINGS:
        return job.get("method") in LORA_METHODS
    if setting == "fp8_recipe":
        return job.get("dtype") == "fp8"
    if setting == "sequence_parallel":
        return (job.get("tensor_parallel") or 1) > 1
    if setting == "distributed_optimizer":
        return (job.get("gpus") or 1) > 1
    return True


def fill(framework: str | None,
         given: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`given` with every preset-able setting that is None filled from the framework's preset
    rows that hold for the job, else the generic value; and one note naming the preset values
    that applied. `framework` None fills the generic values only."""
    preset = cited(framework, given) if framework else {}
    out = dict(given)
    applied: list[str] = []
    assumed: list[str] = []
    for setting, generic in GENERIC.items():
        if out.get(setting) is not None:
            continue
        if setting == "checkpoint_offload" and out.get("grad_checkpointing") is False:
            out[setting] = False  # offloads checkpointed inputs: nothing to offload without
            continue
        if setting == "grad_clipping" and out.get("optimizer_in_backward"):
            out[setting] = False  # each gradient is applied before any norm over all of them
            continue
        lora = setting in _LORA_SETTINGS
        if setting in preset:
            out[setting] = preset[setting].value
            if _worth_a_note(setting, out):
                applied.append(f"{setting}={_fmt(out[setting])}")
        else:
            out[setting] = generic
            if framework and lora and out.get("method") in LORA_METHODS:
                assumed.append(f"{setting}={_fmt(generic)}")
    notes = []
    if applied:
        notes.append(f"--framework {framework} preset applied: {', '.join(applied)} (sources "
                     f"in sizing/data/frameworks.csv; explicit options override)")
    if assumed:
        notes.append(f"{framework} sets no default LoRA adapter: {', '.join(assumed)} "
                     f"assumed; give --lora-rank and --lora-targets as your config sets them")
    return out, notes

"""Framework presets: what each fine-tuning framework does by default, from its own source.

`sizing/data/frameworks.csv` holds one row per (framework, setting) with the value the
framework's code defaults to and the file (owner/repo:path@commit) it was read from. A setting
a framework has no row for keeps the generic value (`GENERIC`), which is what this estimator
assumed before presets existed. Explicit job options always win over the preset.
"""

from __future__ import annotations

import csv
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
    "train_embeddings": False,
    # transformers TrainingArguments: max_grad_norm = 1.0, which every HF-Trainer-based
    # framework inherits
    "grad_clipping": True,
    # the adapter a LoRA job gets when neither it nor its framework names one (axolotl's
    # schema has no default rank or targets: its users must set them)
    "lora_rank": 16,
    "lora_targets": "qv",
    "lora_dropout": 0.0,
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


@lru_cache(maxsize=1)
def presets() -> dict[str, dict[str, tuple[Any, str]]]:
    """framework -> setting -> (value, source)."""
    out: dict[str, dict[str, tuple[Any, str]]] = {f: {} for f in CHOICES["framework"]}
    with FRAMEWORKS_CSV.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            fw, setting = row["framework"], row["setting"]
            if fw not in out or setting not in GENERIC:
                raise ValueError(f"frameworks.csv: unknown framework/setting {fw}/{setting}")
            if not row["source"].strip():
                raise ValueError(f"frameworks.csv: {fw}/{setting} has no source")
            out[fw][setting] = (_value(setting, row["value"]), row["source"])
    return out


def _fmt(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def fill(framework: str, given: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`given` with every preset-able setting that is None filled from the framework's preset,
    else the generic value; and one note naming the preset values that applied."""
    preset = presets()[framework]
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
            out[setting] = preset[setting][0]
            if not lora or out.get("method") in LORA_METHODS:
                applied.append(f"{setting}={_fmt(out[setting])}")
        else:
            out[setting] = generic
            if lora and out.get("method") in LORA_METHODS:
                assumed.append(f"{setting}={_fmt(generic)}")
    notes = []
    if applied:
        notes.append(f"--framework {framework} preset applied: {', '.join(applied)} (sources "
                     f"in sizing/data/frameworks.csv; explicit options override)")
    if assumed:
        notes.append(f"{framework} sets no default LoRA adapter: {', '.join(assumed)} "
                     f"assumed; give --lora-rank and --lora-targets as your config sets them")
    return out, notes

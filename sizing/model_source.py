"""`--model org/name` to an architecture: the Hub, the local caches, then the catalog.

Resolution order (`resolve_model`):

1. online (`--online`, or `GPUSCOUT_ONLINE=1`; never with `HF_HUB_OFFLINE=1`): the repository's
   `config.json` on the Hugging Face Hub, kept in gpuscout's cache with its commit and date;
2. offline: a config an earlier online run kept, then the Hugging Face cache of a model
   downloaded with transformers (`gpuscout.sizing.hub`);
3. the bundled catalog (`sizing/data/architectures.csv`, `architectures.lookup`), where a
   re-published copy (TheBloke/Llama-2-70B-GPTQ) resolves to its base and an org that does not
   publish the name is an error with the ids that do.

A quantized repository says how its weights are stored: its config's `quantization_config`
(GPTQ, AWQ, bitsandbytes, FP8, MXFP4), or, for a catalog copy, its name's suffix. That sets the
job's `--quant` when the user gives none (`ModelSource.quant`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import Architecture, from_hf_config, lookup
from gpuscout.sizing.choices import Quant
from gpuscout.sizing.hub import (
    REPO_ID,
    Fetcher,
    HubConfig,
    cached_config,
    fetch_config,
    hf_cached_config,
    online_requested,
)

MAX_ID_CHARS = 200


@dataclass(frozen=True)
class ModelSource:
    """The architecture, the quantization its checkpoint is stored in, and what to tell."""

    arch: Architecture
    quant: Quant | None = None
    notes: list[str] = field(default_factory=list)


def quantization_of(cfg: Mapping[str, Any]) -> tuple[Quant | None, str | None]:
    """(--quant, note) for a config's quantization_config: GPTQ/AWQ int4 -> gptq,
    bitsandbytes 4-bit -> nf4 and 8-bit -> int8; FP8 and MXFP4 checkpoints are trained from
    their bf16 dequantization, which the note says."""
    qc = cfg.get("quantization_config")
    if not isinstance(qc, Mapping):
        text = cfg.get("text_config")
        qc = text.get("quantization_config") if isinstance(text, Mapping) else None
    if not isinstance(qc, Mapping):
        return None, None
    method = str(qc.get("quant_method", "")).lower()
    bits = qc.get("bits") or qc.get("w_bit")
    if method in ("gptq", "awq"):
        if bits not in (None, 4):
            return None, (f"{method} {bits}-bit checkpoint: only 4-bit GPTQ/AWQ is modeled; "
                          f"sized from the base weights in 16-bit")
        return "gptq", f"{method.upper()} 4-bit checkpoint: --quant gptq"
    if method == "bitsandbytes":
        if qc.get("load_in_4bit") or qc.get("_load_in_4bit"):
            return "nf4", "bitsandbytes 4-bit checkpoint: --quant nf4"
        if qc.get("load_in_8bit") or qc.get("_load_in_8bit"):
            return "int8", "bitsandbytes 8-bit checkpoint: --quant int8"
    if method:
        return None, (f"{method} checkpoint: fine-tuning loads it dequantized, so it is sized "
                      f"in --dtype from the base shape")
    return None, None


def quantization_of_name(model_id: str) -> tuple[Quant | None, str | None]:
    """(--quant, note) from a re-published copy's name (-GPTQ, -AWQ, -bnb-4bit, -FP8...)."""
    low = model_id.lower()
    if "gptq" in low or "awq" in low:
        return "gptq", "a GPTQ/AWQ copy (by its name): --quant gptq"
    if "bnb-4bit" in low or low.endswith(("-4bit", "-nf4")):
        return "nf4", "a bitsandbytes 4-bit copy (by its name): --quant nf4"
    if "bnb-8bit" in low or low.endswith("-8bit"):
        return "int8", "an 8-bit copy (by its name): --quant int8"
    if "fp8" in low:
        return None, ("an FP8 copy (by its name): fine-tuning loads it dequantized, so it is "
                      "sized in --dtype")
    return None, None


def _from_config(model_id: str, found: HubConfig) -> ModelSource:
    arch = from_hf_config(found.config, name=f"{model_id} config.json", model_id=model_id,
                          source=found.source)
    quant, qnote = quantization_of(found.config)
    notes = [f"architecture read from {found.source}"]
    return ModelSource(arch=arch, quant=quant, notes=[*notes, *([qnote] if qnote else [])])


def check_model_id(model_id: str) -> str:
    """The id stripped, or a one-line error for something that is not one."""
    mid = model_id.strip()
    if not mid or len(mid) > MAX_ID_CHARS:
        raise UserInputError(f"--model needs a model id such as meta-llama/Llama-3.1-8B "
                             f"(at most {MAX_ID_CHARS} characters)")
    if mid.endswith(".json") or mid.startswith((".", "/", "~")) or mid.count("/") > 1:
        raise UserInputError(f"--model {model_id!r} is not a model id: for a local file pass "
                             f"--config PATH")
    return mid


def resolve_model(model_id: str, *, online: bool | None = None,
                  env: Mapping[str, str] | None = None,
                  fetcher: Fetcher | None = None) -> ModelSource:
    """The architecture of `model_id`, from the first place that has it (module docstring)."""
    from gpuscout.sizing.hub import environment

    env = environment() if env is None else env
    mid = check_model_id(model_id)
    has_org = REPO_ID.match(mid) is not None
    if has_org and online_requested(online, env):
        return _from_config(mid, fetch_config(mid, env, fetcher))
    if has_org:
        for reader in (cached_config, hf_cached_config):
            found = reader(mid, env)
            if found is not None:
                return _from_config(mid, found)
    arch = lookup(mid)
    quant, qnote = quantization_of_name(mid) if mid.lower() != arch.model_id.lower() else (
        None, None)
    notes = [] if mid.lower() in (arch.model_id.lower(), *(a.lower() for a in arch.aliases)) \
        or "/" not in mid else [f"{mid} resolved to the catalog's {arch.model_id}"]
    return ModelSource(arch=arch, quant=quant, notes=[*notes, *([qnote] if qnote else [])])

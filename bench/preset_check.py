"""The per-framework preset check of bench/CALIBRATION.md.

For every framework preset (`sizing/data/frameworks.csv`): the settings it moves away from the
generic job, each with the file it was read from; what it does to the estimate of one reference
job per method; and, for the calibration rows measured with that framework's own code, the
error without and with the preset filling the settings the row does not state. The rows are
read as everywhere else (`sizing.calibration`); nothing here is tuned.
"""

from __future__ import annotations

import statistics
from typing import Any

from gpuscout.core.catalog import load_catalog
from gpuscout.sizing.calibration import CalibrationRow, calibrate, row_framework
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.frameworks import GENERIC, cited, fill
from gpuscout.sizing.job import Job
from gpuscout.sizing.types import JobSpec

REFERENCE_MODEL = "meta-llama/Llama-3.1-8B"
REFERENCE_GPU = "a100-sxm-80gb"
# one job per method, one GPU, as a user names it: batch 1 × 2048 tokens, nothing else given
REFERENCE_JOBS: tuple[dict[str, Any], ...] = (
    {"method": "lora"}, {"method": "qlora"}, {"method": "full"})
# the shapes whose preset rows are listed: every code path the `when` column tells apart
SHAPES: tuple[dict[str, Any], ...] = (
    {"method": "lora", "gpus": 1, "seq_len": 2048}, {"method": "qlora", "gpus": 1,
                                                     "seq_len": 2048},
    {"method": "full", "gpus": 1, "seq_len": 2048}, {"method": "lora", "gpus": 4,
                                                     "seq_len": 2048},
    {"method": "full", "gpus": 4, "seq_len": 2048}, {"method": "lora", "gpus": 1,
                                                     "seq_len": 256})


def _fmt(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _short(source: str) -> str:
    repo, _, rest = source.partition(":")
    path, _, commit = rest.partition("@")
    return f"{repo.split('/')[-1]} `{path}`@{commit[:7]}"


def settings_table(framework: str) -> list[str]:
    """The settings `framework` moves away from the generic job, with where each holds."""
    lines: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for shape in SHAPES:
        given = {"grad_accum": 1, "quant": "none", **shape}
        for setting, row in cited(framework, given).items():
            if row.value == GENERIC[setting]:
                continue
            when = " & ".join(f"{k}{op}{v}" for k, op, v in row.when) or "always"
            key = (setting, _fmt(row.value), when)
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"| {setting} | {_fmt(row.value)} (generic {_fmt(GENERIC[setting])}) "
                         f"| {when} | {_short(row.source)} |")
    return lines


def _spec(framework: str | None, method: str) -> tuple[Any, JobSpec]:
    if framework is None:
        arch, spec, _ = Job(model=REFERENCE_MODEL, method=method).resolve()
        given = {**spec.model_dump(exclude=set(GENERIC)), **{k: None for k in GENERIC}}
        return arch, JobSpec(**fill(None, given)[0])
    arch, spec, _ = Job(model=REFERENCE_MODEL, method=method, framework=framework).resolve()
    return arch, spec


def reference_lines(framework: str) -> list[str]:
    gpu = load_catalog().gpu(REFERENCE_GPU)
    out: list[str] = []
    for job in REFERENCE_JOBS:
        arch, generic = _spec(None, job["method"])
        _, preset = _spec(framework, job["method"])
        a, b = estimate(arch, generic, gpu), estimate(arch, preset, gpu)
        assert a.time is not None and b.time is not None
        moved = [f"{k} {a.memory.breakdown[k]:.1f}→{b.memory.breakdown[k]:.1f}"
                 for k in a.memory.breakdown
                 if abs(a.memory.breakdown[k] - b.memory.breakdown.get(k, 0.0)) >= 0.1]
        out.append(f"| {job['method']} | {a.memory.peak_gb_per_gpu:.1f} | "
                   f"{b.memory.peak_gb_per_gpu:.1f} | {a.time.tokens_per_s:,.0f} | "
                   f"{b.time.tokens_per_s:,.0f} | {', '.join(moved) or '–'} |")
    return out


def _median(rows: list[CalibrationRow]) -> tuple[str, str]:
    errs = [abs(e) for r in rows if (e := r.error_pct) is not None]
    if not errs:
        return "–", "–"
    return f"{statistics.median(errs):.1f}", f"{sum(e <= 20 for e in errs)} of {len(errs)}"


def row_lines(plain: list[CalibrationRow], preset: list[CalibrationRow],
              sources: dict[int, str]) -> list[str]:
    by_fw: dict[str, list[int]] = {}
    for r in plain:
        fw = row_framework(sources[r.index])
        if fw:
            by_fw.setdefault(fw, []).append(r.index)
    out: list[str] = []
    for fw, idx in by_fw.items():
        a = [plain[i] for i in idx]
        b = [preset[i] for i in idx]
        med_a, within_a = _median(a)
        med_b, within_b = _median(b)
        moved = [f"{x.index}: {x.error_pct:+.1f}→{y.error_pct:+.1f}"
                 for x, y in zip(a, b, strict=True)
                 if x.error_pct is not None and y.error_pct is not None
                 and abs(x.error_pct - y.error_pct) >= 0.5]
        span = f"{min(idx)}–{max(idx)}" if len(idx) > 1 else str(idx[0])
        out.append(f"| {fw} | {span} ({len(idx)}) | {med_a} → {med_b} | {within_a} → "
                   f"{within_b} | {'; '.join(moved) or 'none by 0.5 points or more'} |")
    return out


def render(sources: dict[int, str]) -> str:
    plain, preset = calibrate(), calibrate(presets=True)
    lines = ["## Framework presets, checked against their code (this revision)", "",
             _INTRO, ""]
    for fw in Job.model_fields["framework"].annotation.__args__:  # type: ignore[union-attr]
        lines += [f"### {fw}", "", "| setting | value | holds when | read from |",
                  "|---|---|---|---|"]
        lines += settings_table(fw) or ["| – | the generic job | – | – |"]
        lines += ["", f"{REFERENCE_MODEL}, batch 1 × 2048 tokens, one {REFERENCE_GPU}, "
                  "nothing else given:", "",
                  "| method | generic peak GB | preset peak GB | generic tokens/s | "
                  "preset tokens/s | terms that moved (GB) |", "|---|---|---|---|---|---|"]
        lines += reference_lines(fw)
        lines.append("")
    lines += ["### The preset on the calibration rows of each framework's own runs", "",
              "Each row keeps what its columns state (method, rank, targets, precision, "
              "batch, length, checkpointing, sharding); the preset fills only what the "
              "measurement file has no column for (the loss, offloading, compile, fused "
              "kernels, the NF4 backend, the adapters' dtype, clipping, LoRA dropout where "
              "the notes do not give it), as it fills the options a user leaves out.", "",
              "| framework | rows | memory median % (without → with) | within ±20 % | "
              "rows that moved |", "|---|---|---|---|---|"]
    lines += row_lines(plain, preset, sources)
    lines += ["", _DIRECTIONS]
    return "\n".join(lines)


_INTRO = """\
Every preset value is a row of `sizing/data/frameworks.csv` cited to a file at a commit; a row
may hold only for some jobs (`when`). `tests/sizing/test_sizing_frameworks.py`
(`test_a_preset_changes_the_estimate_only_through_the_values_it_cites`) checks, for each
framework and six job shapes, that the preset's job equals the generic job with exactly the
cited values set as explicit options (so memory and time move through nothing else), and that
every setting it moves has a row that holds. The tables list those settings, what they do to a
reference job, and what they do to the calibration rows measured with the framework itself."""

_DIRECTIONS = """\
What the code says about the directions reported on runs kept out of development (those rows
are not here; no value below was read from them):

- **litgpt QLoRA was under-predicted with the preset.** litgpt's `finetune/lora.py` and
  `full.py` use `strategy = "auto"` on one device: no activation checkpointing (only their
  multi-GPU strategies wrap blocks in `checkpoint_wrapper`), so every block keeps its saved
  tensors, several times the checkpointed inputs the preset used to assume. The QLoRA path
  also leaves a dense bf16 gradient on the embedding (a bitsandbytes `StableEmbedding` swapped
  in after freezing, outside the optimizer, never freed) and holds the 16-bit logits through
  backward (`fit()` keeps `logits`), while `BitsandbytesPrecision` quantizes the LM head with
  the blocks (`bnb.nf4`, no double quantization, in the config_hub recipes) and the bf16-true
  loss keeps bf16 log-probabilities. Together they move litgpt's QLoRA estimate up.
- **torchtune single-device LoRA/QLoRA at 2048 tokens were over-predicted.** The recipe builds
  the adapters in bf16 (bf16 gradients and AdamW states, not PEFT's fp32), and its full
  single-device config pages 8-bit AdamW states and steps in backward; both lower the
  estimate. The larger part is likely the data: `padded_collate_sft` pads a batch to its
  longest sample and `tokenizer.max_seq_len` only truncates, so a run "at 2048 tokens" on
  short samples never builds 2048-token batches; the estimate now says so under
  `--framework torchtune` (`--seq-len` is the longest sample), but it cannot know the data.
  `LinearCrossEntropyLoss` also projects only the tokens whose label is not ignored.
- **Unsloth.** Its fused loss (`unsloth_fused_ce_loss`, target_gb None) sizes its chunks to
  keep each chunk's fp32 logits within min(half the free VRAM, 4 GiB): at 2048 tokens on an 80
  GB card that is one chunk holding the whole batch's logits, not the Liger-sized chunks the
  preset assumed (`--loss unsloth`); and below a max_seq_length of 512 it checkpoints without
  offloading. Both raise the estimate where the preset was low: ms-swift's 2024 Unsloth run
  (row 59, which predates the code read here) went from −54 % under the old reading of the
  loss to −25 %, still below the −16 % the generic job gives it.
- **axolotl** checkpoints only when its YAML says so (`gradient_checkpointing` defaults to
  False in its schema)."""

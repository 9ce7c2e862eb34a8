"""The GPU catalog and label resolution, loaded from the CSV files in `core/data/`.

The catalog is data, not code: every row carries its source. A provider's label or instance
name resolves in layers, and the answer says which layer gave it:

1. `alias`: a row of the alias tables (the provider's exact spelling, with its source);
2. `canonical`: the label is a catalog id;
3. `grammar`: the provider family's instance-name grammar (`names.py`) reads the GPU words,
   count, memory, form factor and NVLink from the name;
4. `label`: generic normalization of a GPU label (vendor words, spacing, SXM4/SXM5, 80G/80GB,
   Ti, SUPER, "Ada Generation", Max-Q) matched against the catalog's model names.

Resolution never guesses: a label that no layer reads, that is marked unmapped, that names
several GPUs and is not settled by the memory it states or the VRAM the provider reports, or
whose stated form factor, memory or reported VRAM contradicts the GPU, comes back as an
explicit `Unknown` with the reason.

`identify` goes one step further for offers, and says so: a label that fixes the GPU family
(and its memory, where it states or the provider reports it) but not the variant ("NVIDIA H100
80GB": SXM or PCIe) keeps a family-level identity, `FamilyLevel`, sized at its conservative
variant (the one without NVSwitch, then the least memory, bandwidth and compute). The variants
a label may be come from the generic layers, or for labels they cannot read, from
`data/gpu_variants.csv` (a source per row).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.core.errors import DataError, UserInputError
from gpuscout.core.models import FormFactor, Interconnect, MemoryType
from gpuscout.core.names import LabelParts, read_instance_name, read_label

DATA_DIR = Path(__file__).parent / "data"
GPUS_CSV = DATA_DIR / "gpus.csv"
ALIASES_CSV = DATA_DIR / "gpu_aliases.csv"
# Provider-specific alias files added with their adapters, same columns as gpu_aliases.csv.
ALIASES_DIR = DATA_DIR / "aliases"
# Labels the generic layers cannot read that name a GPU family but not its variant.
VARIANTS_CSV = DATA_DIR / "gpu_variants.csv"

# Reported VRAM may be GiB printed as GB, usable rather than nominal memory (Vast.ai reports
# 39936 MiB for a 40 GB A100, 23028 MiB for a 24 GB card) or rounded; 12 % covers that and still
# separates every pair the catalog must tell apart (16/24/32, 40/48, 80/94/96, 141/144).
VRAM_TOLERANCE = 0.12

Confidence = Literal["verified", "inferred", "conflicting", "unmapped"]


class GpuSpec(BaseModel):
    """One catalog row. Rates are dense (no sparsity), in TFLOPS/TOPS; bandwidth in GB/s."""

    model_config = ConfigDict(frozen=True)

    canonical_id: str
    vendor: str
    family: str
    architecture: str
    name: str
    vram_gb: float  # as sold, so binary: an "80GB" H100 holds 80 GiB (85.9 GB of 10⁹ bytes)
    memory_type: MemoryType
    mem_bandwidth_gbs: float | None
    form_factor: FormFactor
    nvlink: str = Field(description="intra-node link as the datasheet names it, or 'none'")
    bf16_dense_tflops: float | None
    fp16_dense_tflops: float | None
    fp8_dense_tflops: float | None
    int8_dense_tops: float | None
    tf32_dense_tflops: float | None
    fp32_tflops: float | None
    compute_capability: str | None = Field(description="NVIDIA 'major.minor' or AMD gfx target")
    bf16_support: bool
    fp8_support: bool
    tdp_w: float | None
    release_year: int | None
    source: str
    notes: str

    @property
    def nvlink_gbps(self) -> float | None:
        """Per-GPU NVLink / Infinity Fabric bandwidth in GB/s when the datasheet states it."""
        m = re.search(r"(\d+(?:\.\d+)?)\s*GB/s", self.nvlink)
        return float(m.group(1)) if m else None

    @property
    def cuda_capability(self) -> float | None:
        """NVIDIA compute capability as a number (8.0, 8.9, 9.0), None for AMD/TPU/Gaudi."""
        try:
            return float(self.compute_capability) if self.compute_capability else None
        except ValueError:
            return None

    @property
    def node_interconnect(self) -> Interconnect:
        """What a multi-GPU machine of this GPU uses between its GPUs, by form factor."""
        if self.form_factor in (FormFactor.SXM, FormFactor.SUPERCHIP):
            return Interconnect.NVSWITCH if self.vendor == "NVIDIA" else Interconnect.UNKNOWN
        if self.form_factor == FormFactor.OAM and self.vendor == "AMD":
            return Interconnect.INFINITY_FABRIC
        if self.form_factor in (FormFactor.PCIE, FormFactor.NVL):
            # NVL cards and some PCIe cards pair over NVLink bridges; the offer must say so.
            return Interconnect.PCIE
        return Interconnect.UNKNOWN


class AliasRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    provider_name: str
    name_kind: str
    canonical_id: str | None
    gpu_count_if_implied: float | None
    disambiguate_by_vram_gb: float | None
    confidence: Confidence
    source: str
    notes: str


Layer = Literal["alias", "canonical", "grammar", "label"]


@dataclass(frozen=True)
class Resolved:
    gpu_id: str
    gpu_count: float | None  # when the label implies it (instance types)
    confidence: Confidence
    alias: str
    layer: Layer = "alias"
    nvlink: bool | None = None  # when the name states it (Hyperstack's -NVLink)


@dataclass(frozen=True)
class Unknown:
    """An explicit 'we do not know': counted per refresh and shown in the run log."""

    label: str
    reason: str
    gpu_id: None = None
    gpu_count: None = None
    confidence: None = None
    layer: None = None


Resolution = Resolved | Unknown


@dataclass(frozen=True)
class FamilyLevel:
    """A label that fixes the GPU family but not the variant: sized at `gpu_id`, the
    conservative one of `variants`, and said so (`note`)."""

    label: str
    gpu_id: str
    family: str  # "H100 80GB"
    variants: tuple[str, ...]
    reason: str  # why resolution alone could not settle it
    gpu_count: float | None = None
    confidence: None = None
    layer: Literal["family"] = "family"

    @property
    def note(self) -> str:
        return (f"{self.family}, variant not stated ({' or '.join(self.variants)}): sized as "
                f"{self.gpu_id}, the conservative one")


Identity = Resolved | FamilyLevel | Unknown


def _key(label: str) -> str:
    return " ".join(label.strip().lower().split())


# Words of an id that are not the model: the form factor and the edition.
_ID_FORMS = {"sxm", "sxm2", "sxm4", "sxm5", "pcie", "nvl", "oam"}
_ID_EDITIONS = {"server": "server", "workstation": "workstation", "maxq": "max-q",
                "max": "max-q"}
# A product-line word a label may leave out: "A6000" is the RTX A6000, "RTX 6000" the Quadro
# RTX 6000 (NVIDIA's own short names); the catalog never has both spellings for two GPUs.
_LINE_WORDS = ("quadro ", "rtx ", "tesla ")


def model_words(canonical_id: str) -> str:
    """The model part of a catalog id: `a100-sxm-80gb` → "a100", `rtx-3090-ti-24gb` →
    "rtx 3090 ti", `quadro-rtx-6000-24gb` → "quadro rtx 6000"."""
    words = [w for w in canonical_id.split("-") if not re.fullmatch(r"\d+gb", w)
             and w not in _ID_FORMS and w not in _ID_EDITIONS and w != "q"]
    return " ".join(words)


def _drop_line_word(model: str) -> str:
    for word in _LINE_WORDS:
        if model.startswith(word):
            return model[len(word):]
    return model


def _edition(canonical_id: str) -> str | None:
    words = canonical_id.split("-")
    return next((_ID_EDITIONS[w] for w in words if w in _ID_EDITIONS), None)


def _near(nominal: float, stated: float) -> bool:
    return abs(stated - nominal) <= VRAM_TOLERANCE * nominal


def _conservative_key(g: GpuSpec) -> tuple[float, ...]:
    """Order of variants from the most conservative: no NVSwitch board first (PCIe, NVL), then
    the least memory, memory bandwidth and compute."""
    switched = g.node_interconnect in (Interconnect.NVSWITCH, Interconnect.INFINITY_FABRIC)
    return (float(switched), g.vram_gb, g.mem_bandwidth_gbs or 0.0,
            g.bf16_dense_tflops or g.fp16_dense_tflops or 0.0)


def _family_name(variants: list[GpuSpec]) -> str:
    words = model_words(variants[0].canonical_id).upper()
    sizes = sorted({g.vram_gb for g in variants})
    return words + (f" {sizes[0]:g}GB" if len(sizes) == 1 else "")


def _opt_float(v: str) -> float | None:
    return float(v) if v.strip() else None


class Catalog:
    def __init__(self, gpus: list[GpuSpec], aliases: list[AliasRow],
                 variants: dict[tuple[str, str], tuple[str, tuple[str, ...]]] | None = None,
                 ) -> None:
        self.gpus: dict[str, GpuSpec] = {g.canonical_id: g for g in gpus}
        # model words → catalog rows, for the grammar and label layers
        self._models: dict[str, list[GpuSpec]] = {}
        self._short: dict[str, list[GpuSpec]] = {}  # the same without the line word
        # the same without spaces: "RTXPRO6000", "rtxa6000" as run together in a name
        self._compact: dict[str, list[GpuSpec]] = {}
        for g in gpus:
            model = model_words(g.canonical_id)
            self._models.setdefault(model, []).append(g)
            if _drop_line_word(model) != model:
                self._short.setdefault(_drop_line_word(model), []).append(g)
            self._compact.setdefault(model.replace(" ", ""), []).append(g)
        self._variants = {(p, _key(label)): v for (p, label), v in (variants or {}).items()}
        for _, ids in self._variants.values():
            if unknown := [i for i in ids if i not in self.gpus]:
                raise ValueError(f"gpu_variants names unknown GPUs {unknown}")
        self.aliases = aliases
        self._by_label: dict[tuple[str, str], list[AliasRow]] = {}
        for row in aliases:
            if row.canonical_id is not None and row.canonical_id not in self.gpus:
                raise ValueError(f"alias {row.provider}/{row.provider_name} names unknown GPU "
                                 f"{row.canonical_id!r}")
            self._by_label.setdefault((row.provider, _key(row.provider_name)), []).append(row)

    def gpu(self, gpu_id: str) -> GpuSpec:
        return self.gpus[gpu_id]

    def find(self, text: str) -> GpuSpec:
        """The GPU a user or a log names: a canonical id, the one id it starts (`l4` →
        l4-24gb), or a GPU's name as devices and logs print it (`NVIDIA A100-SXM4-80GB`);
        else a UserInputError with the close ids."""
        import difflib

        key = text.strip().lower()
        if key in self.gpus:
            return self.gpus[key]
        starts = [g for g in self.gpus if g.startswith(key + "-")]
        if len(starts) == 1:
            return self.gpus[starts[0]]
        if starts:
            raise UserInputError(f"GPU {text!r} names several: {', '.join(starts)}")
        found = self.resolve("", text)
        if isinstance(found, Resolved):
            return self.gpus[found.gpu_id]
        close = difflib.get_close_matches(key, list(self.gpus), n=5, cutoff=0.5)
        hint = f"; did you mean: {', '.join(close)}" if close else ""
        raise UserInputError(f"unknown GPU {text!r}{hint}")

    def gpu_filter(self, text: str) -> str:
        """A `--gpu` filter as the offers query takes it: a catalog id or its start at a
        hyphen (`h100`, `a100-sxm`), lower case; a GPU's printed name (`NVIDIA A100-SXM4-80GB`)
        becomes its id. A value that names no GPU is a UserInputError with the ids and
        family starts closest to it."""
        from gpuscout.core.suggest import did_you_mean

        key = text.strip().lower()
        if key and any(g == key or g.startswith(key + "-") for g in self.gpus):
            return key
        found = self.resolve("", text) if key else None
        if isinstance(found, Resolved):
            return found.gpu_id
        starts = {"-".join(parts[:i]) for parts in (g.split("-") for g in self.gpus)
                  for i in range(1, len(parts) + 1)}
        raise UserInputError(f"--gpu {text!r} names no GPU in the catalog"
                             f"{did_you_mean(key, starts, n=5)} (`gpuscout gpus` lists them; "
                             f"a start such as h100 matches every variant)")

    def resolve(self, provider: str, label: str, vram_hint: float | None = None) -> Resolution:
        """Map a provider's GPU spelling or instance name to a canonical GPU, or say why not.

        `vram_hint` is the VRAM per GPU the provider reports (GB); it settles labels that name
        several GPUs (Vast.ai's "A100 SXM4" is 40 or 80 GB) and vetoes a label whose GPU has a
        different VRAM.
        """
        rows = self._by_label.get((provider, _key(label)))
        if rows:
            return self._from_alias(rows, label, vram_hint)
        if _key(label) in self.gpus:  # the canonical id is an unambiguous spelling anywhere
            return self._check_vram(Resolved(_key(label), None, "verified", label,
                                             layer="canonical"), vram_hint, label)
        parts = read_instance_name(provider, label)
        if parts is not None:
            found = parts.gpu if parts.family and parts.gpu in self.gpus else self._match(
                read_label(parts.gpu), label, vram_hint, memory_gb=parts.memory_gb,
                form=parts.form)
            if isinstance(found, Unknown):
                return found
            return self._check_vram(Resolved(found, parts.count, "inferred", parts.grammar,
                                             layer="grammar", nvlink=parts.nvlink),
                                    vram_hint, label)
        words = read_label(label)
        if not words.model:
            return Unknown(label, f"no alias for {provider!r} label {label!r}")
        found = self._match(words, label, vram_hint)
        if isinstance(found, Unknown):
            if found.reason.startswith("no catalog GPU"):
                return Unknown(label, f"no alias for {provider!r} label {label!r}, and "
                                      f"{found.reason}")
            return found
        return self._check_vram(Resolved(found, words.count, "inferred", words.model,
                                         layer="label"), vram_hint, label)

    def identify(self, provider: str, label: str, vram_hint: float | None = None) -> Identity:
        """`resolve`, or where it cannot settle the variant of a family the label fixes, that
        family sized at its conservative variant (see the module docstring)."""
        res = self.resolve(provider, label, vram_hint)
        if isinstance(res, Resolved):
            return res
        variants, count = self._family(provider, label, vram_hint)
        if len(variants) < 2:
            return res
        variants.sort(key=_conservative_key)
        listed = self._variants.get((provider, _key(label)))
        return FamilyLevel(label=label, gpu_id=variants[0].canonical_id,
                           family=listed[0] if listed else _family_name(variants),
                           variants=tuple(g.canonical_id for g in variants), reason=res.reason,
                           gpu_count=count)

    def _family(self, provider: str, label: str,
                vram_hint: float | None) -> tuple[list[GpuSpec], float | None]:
        """The variants of one GPU family a label may be (fewer than two: none), and the count
        it implies."""
        listed = self._variants.get((provider, _key(label)))
        if listed is not None:
            return [self.gpus[i] for i in listed[1]], None
        rows = [r for r in self._by_label.get((provider, _key(label)), [])
                if r.canonical_id is not None]
        if len(rows) > 1:  # an alias naming several GPUs, no VRAM to settle it
            ids = {r.canonical_id for r in rows if r.canonical_id}
            found = [self.gpus[i] for i in sorted(ids)]
            if len({model_words(g.canonical_id) for g in found}) == 1:
                return found, rows[0].gpu_count_if_implied
            return [], None
        parts = read_instance_name(provider, label)
        if parts is not None and not parts.family:
            found = self._candidates(read_label(parts.gpu), vram_hint,
                                     memory_gb=parts.memory_gb, form=parts.form)
            return found, parts.count
        words = read_label(label)
        if not words.model:
            return [], None
        return self._candidates(words, vram_hint), words.count

    def _candidates(self, words: LabelParts, vram_hint: float | None, *,
                    memory_gb: float | None = None,
                    form: FormFactor | None = None) -> list[GpuSpec]:
        """The catalog GPUs of the model the words name that fit everything stated."""
        memory = memory_gb if memory_gb is not None else words.memory_gb
        form = form or words.form
        found = self._model_rows(words.model)
        if form is not None:
            found = [g for g in found if g.form_factor == form]
        if memory is not None:
            found = [g for g in found if _near(g.vram_gb, memory)]
        if words.edition is not None:
            found = [g for g in found if _edition(g.canonical_id) == words.edition]
        if len(found) > 1 and vram_hint is not None:
            found = [g for g in found if _near(g.vram_gb, vram_hint)]
        return found

    def _model_rows(self, model: str) -> list[GpuSpec]:
        return (self._models.get(model) or self._short.get(model)
                or self._compact.get(model.replace(" ", "")) or [])

    def _from_alias(self, rows: list[AliasRow], label: str,
                    vram_hint: float | None) -> Resolution:
        mapped = [r for r in rows if r.canonical_id is not None]
        if not mapped:
            return Unknown(label, f"{rows[0].provider!r} label {label!r} is listed as "
                                  f"unmapped: {rows[0].notes or 'no catalog GPU'}")
        if len(mapped) > 1:
            if vram_hint is None:
                return Unknown(label, f"label {label!r} is ambiguous without VRAM "
                                      f"({', '.join(r.canonical_id or '' for r in mapped)})")
            best = min(mapped, key=lambda r: abs(self._vram_of(r) - vram_hint))
            mapped = [best]
        row = mapped[0]
        assert row.canonical_id is not None
        res = Resolved(row.canonical_id, row.gpu_count_if_implied, row.confidence,
                       row.provider_name)
        return self._check_vram(res, vram_hint, label)

    def _match(self, words: LabelParts, label: str, vram_hint: float | None, *,
               memory_gb: float | None = None,
               form: FormFactor | None = None) -> str | Unknown:
        """The one catalog GPU whose model the words name and that fits everything stated."""
        memory = memory_gb if memory_gb is not None else words.memory_gb
        form = form or words.form
        candidates = self._model_rows(words.model)
        if not candidates:
            return Unknown(label, f"no catalog GPU is called {words.model!r}")
        stated = []
        if form is not None:
            candidates = [g for g in candidates if g.form_factor == form]
            stated.append(f"form factor {form}")
        if memory is not None:
            candidates = [g for g in candidates if _near(g.vram_gb, memory)]
            stated.append(f"{memory:g} GB")
        if words.edition is not None:
            candidates = [g for g in candidates if _edition(g.canonical_id) == words.edition]
            stated.append(f"{words.edition} edition")
        if not candidates:
            return Unknown(label, f"label {label!r} states {', '.join(stated)}, which no "
                                  f"{words.model!r} in the catalog has")
        if len(candidates) > 1 and vram_hint is not None:
            candidates = [g for g in candidates if _near(g.vram_gb, vram_hint)] or candidates
        if len(candidates) > 1:
            return Unknown(label, f"label {label!r} names several GPUs "
                                  f"({', '.join(g.canonical_id for g in candidates)})")
        return candidates[0].canonical_id

    def _vram_of(self, row: AliasRow) -> float:
        if row.disambiguate_by_vram_gb is not None:
            return row.disambiguate_by_vram_gb
        assert row.canonical_id is not None
        return self.gpus[row.canonical_id].vram_gb

    def _check_vram(self, res: Resolved, vram_hint: float | None, label: str) -> Resolution:
        if vram_hint is None:
            return res
        nominal = self.gpus[res.gpu_id].vram_gb
        if abs(vram_hint - nominal) > VRAM_TOLERANCE * nominal:
            return Unknown(label, f"label {label!r} maps to {res.gpu_id} ({nominal:g} GB) but "
                                  f"the provider reports {vram_hint:g} GB per GPU")
        return res


def _read_gpus(path: Path) -> list[GpuSpec]:
    with path.open(newline="", encoding="utf-8") as f:
        out = []
        for r in csv.DictReader(f):
            out.append(GpuSpec(
                canonical_id=r["canonical_id"], vendor=r["vendor"], family=r["family"],
                architecture=r["architecture"], name=r["name"], vram_gb=float(r["vram_gb"]),
                memory_type=MemoryType(r["memory_type"]),
                mem_bandwidth_gbs=_opt_float(r["mem_bandwidth_gbs"]),
                form_factor=FormFactor(r["form_factor"]), nvlink=r["nvlink"],
                bf16_dense_tflops=_opt_float(r["bf16_dense_tflops"]),
                fp16_dense_tflops=_opt_float(r["fp16_dense_tflops"]),
                fp8_dense_tflops=_opt_float(r["fp8_dense_tflops"]),
                int8_dense_tops=_opt_float(r["int8_dense_tops"]),
                tf32_dense_tflops=_opt_float(r["tf32_dense_tflops"]),
                fp32_tflops=_opt_float(r["fp32_tflops"]),
                compute_capability=r["compute_capability"] or None,
                bf16_support=r["bf16_support"] == "yes", fp8_support=r["fp8_support"] == "yes",
                tdp_w=_opt_float(r["tdp_w"]),
                release_year=int(r["release_year"]) if r["release_year"] else None,
                source=r["source"], notes=r["notes"],
            ))
        return out


def _read_aliases(path: Path) -> list[AliasRow]:
    with path.open(newline="", encoding="utf-8") as f:
        return [AliasRow(
            provider=r["provider"], provider_name=r["provider_name"], name_kind=r["name_kind"],
            canonical_id=r["canonical_id"] or None,
            gpu_count_if_implied=_opt_float(r["gpu_count_if_implied"]),
            disambiguate_by_vram_gb=_opt_float(r["disambiguate_by_vram_gb"]),
            confidence=_confidence(r["confidence"]), source=r["source"], notes=r["notes"],
        ) for r in csv.DictReader(f)]


def _confidence(text: str) -> Confidence:
    if text not in get_args(Confidence):
        raise DataError(f"alias confidence {text!r} is not one of {get_args(Confidence)}")
    return cast(Confidence, text)


def alias_files() -> list[Path]:
    return [ALIASES_CSV, *sorted(ALIASES_DIR.glob("*.csv"))]


def _read_variants(path: Path) -> dict[tuple[str, str], tuple[str, tuple[str, ...]]]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if missing := [r["provider_name"] for r in rows if not r["source"].strip()]:
        raise DataError(f"gpu_variants.csv rows without a source: {missing}")
    return {(r["provider"], r["provider_name"]): (r["family"], tuple(r["variants"].split()))
            for r in rows}


@cache
def load_catalog() -> Catalog:
    aliases = [row for path in alias_files() for row in _read_aliases(path)]
    return Catalog(_read_gpus(GPUS_CSV), aliases, _read_variants(VARIANTS_CSV))

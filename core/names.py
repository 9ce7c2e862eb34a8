"""Reading a GPU out of a name: provider instance-name grammars and generic label normalization.

Two readers, both pure text → parts, neither of which knows the catalog:

- `read_instance_name(provider, name)`: a provider family's naming grammar (Lambda's
  `gpu_8x_h100_sxm5`, DataCrunch's `8H100.80S.176V`, Nebius's `gpu-h100-sxm_8gpu-...`, ...)
  gives the GPU's own words plus what the name states about count, memory, form factor and
  NVLink. Each grammar is anchored on the whole name: a name it does not fully match is not
  read at all.
- `read_label(text)`: a GPU label as providers print it ("NVIDIA GeForce RTX 4090",
  "Tesla V100-SXM2-16GB", "A100 SXM4 80GB", "RTX 6000 Ada Generation") split into the model
  words and the stated memory, form factor and edition, with vendor words, spacing, `SXM4/5`,
  `80G/80GB` and the like made uniform.

The catalog (`catalog.py`) matches the parts against its rows and refuses anything ambiguous
or contradicted.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuscout.core.models import FormFactor


@dataclass(frozen=True)
class NameParts:
    """What a name states. None: the name does not say."""

    gpu: str  # the GPU's own words, for `read_label`; a catalog id when `family` gave it
    count: float | None = None
    memory_gb: float | None = None  # per GPU
    form: FormFactor | None = None
    nvlink: bool | None = None
    grammar: str = ""
    family: bool = False  # `gpu` is the catalog id of the instance family (families table)


@dataclass(frozen=True)
class LabelParts:
    model: str  # normalized model words, e.g. "rtx 4090", "a100", "rtx 6000 ada"
    memory_gb: float | None = None
    count: float | None = None  # a leading "8 ×"
    form: FormFactor | None = None
    edition: str | None = None  # "max-q", "server", "workstation"


# --- generic label normalization ------------------------------------------------------------

# Words that name a vendor, a brand or a product line rather than the GPU model.
_VENDOR_WORDS = {"nvidia", "geforce", "tesla", "amd", "instinct", "intel", "habana", "google",
                 "cloud", "graphics", "gpu", "gpus", "accelerator", "tensor", "core",
                 "datacenter", "data", "center", "card", "aws", "oracle", "oci",
                 "infrastructure", "compute", "reserved", "™", "®", "(r)", "(tm)"}
_FORMS = {"sxm": FormFactor.SXM, "sxm2": FormFactor.SXM, "sxm3": FormFactor.SXM,
          "sxm4": FormFactor.SXM, "sxm5": FormFactor.SXM, "sxm6": FormFactor.SXM,
          "pcie": FormFactor.PCIE, "pci": FormFactor.PCIE, "fhhl": FormFactor.PCIE,
          "nvl": FormFactor.NVL,
          "oam": FormFactor.OAM}
# Memory technology words carry nothing the catalog row does not already know.
_MEMORY_TECH = {"hbm", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr5", "gddr5x", "gddr6", "gddr6x",
                "gddr7", "ecc"}
_EDITIONS = {"maxq": "max-q", "server": "server", "workstation": "workstation"}
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)(?:gb|g|gib)$")
# Glued spellings: RTX4090, RTX6000ADA, A100-80G, 3080TI, 4080SUPER.
_GLUED = [(re.compile(r"\b(rtx|gtx|quadro)(\d)"), r"\1 \2"),
          (re.compile(r"(\d)(ada|ti|super|xt|xtx)\b"), r"\1 \2")]


def read_label(text: str) -> LabelParts:
    """The model words and the stated memory, form factor and edition of a GPU label."""
    s = text.lower().replace("™", " ").replace("®", " ")
    # Price-list prose around the GPU: "Commitment v1: ...", "... GPU running in Virginia",
    # "... GPU attached to Spot VMs ...", "... GPU on Runpod", "... GPU in Frankfurt ...".
    s = s.split(":", 1)[1] if re.match(r"^[a-z ]+v?\d*:", s) else s
    s = re.sub(r"\bgpus?\s+(?:running|attached|on|in|for)\b.*$", " ", s)
    count = None
    if m := re.match(r"^\s*(\d+)\s*[×x]\s+", s):  # "8 × H100 SXM"
        count, s = float(m.group(1)), s[m.end():]
    s = re.sub(r"max[-_ ]?q", " maxq ", s)
    s = re.sub(r"ada generation|ada lovelace", " ada ", s)
    s = re.sub(r"\bserver edition\b", " server ", s)
    s = re.sub(r"\bworkstation edition\b", " workstation ", s)
    s = re.sub(r"[_/,()\[\]]|(?<!\d)-|-(?!\d)|(?<=\d)-(?=\d)", " ", s)
    for pattern, repl in _GLUED:
        s = pattern.sub(repl, s)
    model: list[str] = []
    memory = form = edition = None
    for word in s.split():
        if word in _VENDOR_WORDS or word in _MEMORY_TECH or word in ("edition", "blackwell"):
            continue
        if m := _MEMORY.match(word):
            memory = float(m.group(1))
        elif word in _FORMS:
            form = _FORMS[word]
        elif word in _EDITIONS:  # "Max-Q Workstation Edition" is the Max-Q
            edition = edition if edition == "max-q" else _EDITIONS[word]
        elif "-" in word:  # a hyphenated rest such as "a100-40gb" after the split above
            model.extend(w for w in word.split("-") if w)
        else:
            model.append(word)
    return LabelParts(" ".join(model), memory, count, form, edition)


# --- instance-name grammars -----------------------------------------------------------------

Grammar = Callable[[str], NameParts | None]


def _form(word: str | None) -> FormFactor | None:
    return _FORMS.get(word.lower()) if word else None


def _lambda(name: str) -> NameParts | None:
    # gpu_<n>x_<gpu>[_<memory>][_<form>], e.g. gpu_8x_h100_sxm5, gpu_1x_a100_sxm4_80gb? no:
    # Lambda writes memory before the form: gpu_8x_a100_80gb_sxm4, gpu_1x_gh200.
    m = re.fullmatch(r"gpu_(\d+)x_([a-z0-9]+?)(?:_(\d+)gb)?(?:_(sxm\d?|pcie))?", name.lower())
    if not m:
        return None
    return NameParts(m.group(2), float(m.group(1)), _opt(m.group(3)), _form(m.group(4)),
                     grammar="lambda gpu_<n>x_<gpu>[_<mem>gb][_<form>]")


def _hyperstack(name: str) -> NameParts | None:
    # n3-<GPU>x<n>[-NVLink][-K8s], e.g. n3-H100x8, n3-A100x4-NVLink, n3-RTX-A6000x1,
    # n3-H100-SXM5x8, n3-H100-PCIe-NVLinkx4 (the NVLink word may also precede the count).
    m = re.fullmatch(r"n\d-(.+?)(-nvlink)?x(\d+)(-nvlink)?(?:-k8s)?", name.lower())
    if not m:
        return None
    gpu = m.group(1)
    words = gpu.split("-")
    form = next((_form(w) for w in words if _form(w)), None)
    gpu = "-".join(w for w in words if not _form(w))
    return NameParts(gpu, float(m.group(3)), None, form,
                     nvlink=True if (m.group(2) or m.group(4)) else None,
                     grammar="hyperstack n3-<gpu>x<n>[-NVLink]")


def _datacrunch(name: str) -> NameParts | None:
    # <n><GPU>.<memory><form>.<vcpus>V, e.g. 8H100.80S.176V, 1A100.40S.22V, 1RTX6000ADA.10V,
    # 1B200.30V (memory and form omitted). S: SXM, P: PCIe.
    m = re.fullmatch(r"(\d+)([A-Z][A-Z0-9]*?)(?:\.(\d+)([SP]))?\.(\d+)V", name)
    if not m:
        return None
    form = {"S": FormFactor.SXM, "P": FormFactor.PCIE}.get(m.group(4) or "")
    return NameParts(m.group(2), float(m.group(1)), _opt(m.group(3)), form,
                     grammar="datacrunch <n><gpu>.<mem><S|P>.<vcpus>V")


def _nebius(name: str) -> NameParts | None:
    # gpu-<gpu>-<form>[-<variant>]_<n>gpu-<vcpus>vcpu-<ram>gb, e.g.
    # gpu-h100-sxm_8gpu-128vcpu-1600gb, gpu-l40s-a_1gpu-8vcpu-32gb.
    m = re.fullmatch(r"gpu-([a-z0-9]+)(?:-(sxm|pcie))?(?:-[a-z])?_(\d+)gpu-\d+vcpu-\d+gb",
                     name.lower())
    if not m:
        return None
    return NameParts(m.group(1), float(m.group(3)), None, _form(m.group(2)),
                     grammar="nebius gpu-<gpu>-<form>_<n>gpu-<vcpus>vcpu-<ram>gb")


def _digitalocean(name: str) -> NameParts | None:
    # gpu-<gpu>x<n>-<memory>gb with the GPU memory of the whole droplet, e.g. gpu-h100x8-640gb,
    # gpu-mi300x1-192gb, gpu-4000adax1-20gb.
    m = re.fullmatch(r"gpu-([a-z0-9]+?)x(\d+)-(\d+)gb", name.lower())
    if not m:
        return None
    count = float(m.group(2))
    gpu = m.group(1)
    if gpu[:2].isdigit():  # "4000ada", "6000ada": DigitalOcean drops the RTX
        gpu = "rtx " + gpu
    elif re.fullmatch(r"mi\d+", gpu):  # "mi300x1": the X of MI300X doubles as the separator
        gpu += "x"
    return NameParts(gpu, count, float(m.group(3)) / count,
                     grammar="digitalocean gpu-<gpu>x<n>-<total mem>gb")


def _paperspace(name: str) -> NameParts | None:
    # <GPU>[-<memory>G][x<n>], e.g. A100-80Gx8, H100x8, A6000x2, V100-32G, RTX4000, P5000.
    m = re.fullmatch(r"([A-Z][A-Z0-9]*?)(?:-(\d+)G)?(?:x(\d+))?", name)
    if not m:
        return None
    return NameParts(m.group(1), float(m.group(3) or 1), _opt(m.group(2)),
                     grammar="paperspace <gpu>[-<mem>G][x<n>]")


def _scaleway(name: str) -> NameParts | None:
    # <GPU>[-SXM]-<n>-<memory>G, e.g. H100-1-80G, H100-SXM-8-80G, L40S-4-48G, B300-SXM-8-288G.
    m = re.fullmatch(r"([A-Z0-9]+)(?:-(SXM|PCIE))?-(\d+)-(\d+)G", name.upper())
    if not m:
        return None
    return NameParts(m.group(1), float(m.group(3)), float(m.group(4)), _form(m.group(2)),
                     grammar="scaleway <gpu>[-SXM]-<n>-<mem>G")


def _vultr(name: str) -> NameParts | None:
    # Bare metal vbm-<c>c-<ram>gb[-<n>]-<gpu>-gpu, e.g. vbm-112c-2048gb-8-h100-gpu,
    # vbm-72c-480gb-gh200-gpu (one GPU).
    m = re.fullmatch(r"vbm-\d+c-\d+gb(?:-(\d+))?-([a-z0-9]+)-gpu", name.lower())
    if not m:
        return None
    return NameParts(m.group(2), float(m.group(1) or 1),
                     grammar="vultr vbm-<c>c-<ram>gb-<n>-<gpu>-gpu")


def _oci(name: str) -> NameParts | None:
    # (BM|VM).GPU.<gpu>[-v<k>].<n>, e.g. BM.GPU.H100.8, VM.GPU.A10.1, BM.GPU.MI300X.8,
    # BM.GPU.GB300.4. The older BM.GPU4.8 / VM.GPU3.1 name no GPU: aliases cover them.
    m = re.fullmatch(r"(?:BM|VM)\.GPU\.([A-Z][A-Z0-9]+)(?:-v\d+)?\.(\d+)", name)
    if not m:
        return None
    return NameParts(m.group(1), float(m.group(2)), grammar="oci <BM|VM>.GPU.<gpu>.<n>")


# Azure sizes with one GPU per this many vCPUs (the size tables of the NC A100 v4, NC H100 v5
# and ND series pages, learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/).
_AZURE_VCPUS_PER_GPU = {("NC", "A100"): 24, ("NC", "H100"): 40, ("ND", "A100"): 12,
                        ("ND", "H100"): 12, ("ND", "H200"): 12, ("ND", "MI300X"): 12}


def _azure(name: str) -> NameParts | None:
    # [Standard_]<family><vcpus><features>[_ ]<GPU>[_ ]v<gen>, e.g. Standard_ND96isr_H100_v5,
    # NC40adsH100v5 (as the price list's skuName writes it), ND96amsr A100 v4. ND sizes are
    # the NVLink (SXM) series.
    m = re.fullmatch(r"(?:Standard_)?(N[CDV])(\d+)[a-z]*[_ ]?([A-Z]+\d+[A-Z]*)[_ ]?v\d+", name,
                     re.IGNORECASE)
    if not m:
        return None
    family, vcpus, gpu = m.group(1).upper(), int(m.group(2)), m.group(3).upper()
    per_gpu = _AZURE_VCPUS_PER_GPU.get((family, gpu))
    count = vcpus / per_gpu if per_gpu and vcpus % per_gpu == 0 else None
    form = FormFactor.SXM if family == "ND" and gpu[0] in "HAB" else None
    return NameParts(gpu, count, None, form, grammar="azure [Standard_]N?<vcpus>_<gpu>_v<n>")


def _family(provider: str, name: str) -> NameParts | None:
    # AWS <family>.<size> (p5.48xlarge) and GCP <series>-<type>-<n>g|t (a3-highgpu-8g): the
    # family names the GPU (core/data/instance_families.csv); GCP's suffix gives the count.
    for family, (gpu_id, suffix_count) in FAMILIES.get(provider, {}).items():
        rest = name[len(family):] if name.startswith(family) else None
        if rest is None or not re.fullmatch(r"\.[a-z0-9]+|-\d+[gt]?", rest):
            continue
        count = None
        if suffix_count and (m := re.fullmatch(r"-(\d+)[gt]", rest)):
            count = float(m.group(1))
        return NameParts(gpu_id, count, grammar=f"{provider} instance family {family}",
                         family=True)
    return None


def _ovhcloud(name: str) -> NameParts | None:
    # <gpu>-<ram GB>, e.g. l40s-90, h100-380, rtx5000-28 (win- for a Windows licence). The
    # flavor states no GPU count (the order catalog's technical blob does) and no form factor.
    m = re.fullmatch(r"(?:win-)?([a-z]+\d+[a-z]*)-\d+", name.lower())
    if not m or re.fullmatch(r"[a-z]\d", m.group(1)):  # t1/t2/b2...: family codes, no GPU
        return None
    return NameParts(m.group(1), grammar="ovhcloud <gpu>-<ram>")


def _opt(text: str | None) -> float | None:
    return float(text) if text else None


GRAMMARS: dict[str, Grammar] = {
    "lambda": _lambda, "hyperstack": _hyperstack, "datacrunch": _datacrunch,
    "nebius": _nebius, "digitalocean": _digitalocean, "paperspace": _paperspace,
    "scaleway": _scaleway, "vultr": _vultr, "oci": _oci, "azure": _azure,
    "ovhcloud": _ovhcloud,
}


def _read_families(path: Path) -> dict[str, dict[str, tuple[str, bool]]]:
    out: dict[str, dict[str, tuple[str, bool]]] = {}
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            out.setdefault(row["provider"], {})[row["family"]] = (
                row["canonical_id"], row["count_from"] == "suffix")
    # longest family first: p5en before p5e before p5
    return {p: dict(sorted(fams.items(), key=lambda kv: -len(kv[0]))) for p, fams in out.items()}


FAMILIES = _read_families(Path(__file__).parent / "data" / "instance_families.csv")


def read_instance_name(provider: str, name: str) -> NameParts | None:
    """The provider grammar's reading of `name`, or None (no grammar, or not its shape)."""
    name = name.strip()
    grammar = GRAMMARS.get(provider)
    return (grammar(name) if grammar else None) or _family(provider, name)

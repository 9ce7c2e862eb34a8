"""Label resolution in layers: alias → canonical id → instance-name grammar → label words.

Each answer names its layer; anything ambiguous or contradicted is Unknown with the reason.
"""

from __future__ import annotations

import pytest

from gpuscout.core.catalog import Resolved, Unknown, load_catalog, model_words
from gpuscout.core.models import FormFactor
from gpuscout.core.names import read_instance_name, read_label

CAT = load_catalog()


@pytest.mark.parametrize(("provider", "name", "gpu", "count", "memory", "form"), [
    ("lambda", "gpu_8x_h100_sxm5", "h100", 8, None, FormFactor.SXM),
    ("lambda", "gpu_8x_a100_80gb_sxm4", "a100", 8, 80, FormFactor.SXM),
    ("lambda", "gpu_1x_gh200", "gh200", 1, None, None),
    ("hyperstack", "n3-A100x4-NVLink", "a100", 4, None, None),
    ("hyperstack", "n3-RTX-A6000x2", "rtx-a6000", 2, None, None),
    ("datacrunch", "8A100.80S.176V", "A100", 8, 80, FormFactor.SXM),
    ("datacrunch", "1B200.30V", "B200", 1, None, None),
    ("nebius", "gpu-h100-sxm_8gpu-128vcpu-1600gb", "h100", 8, None, FormFactor.SXM),
    ("digitalocean", "gpu-h100x8-640gb", "h100", 8, 80, None),
    ("digitalocean", "gpu-mi300x1-192gb", "mi300x", 1, 192, None),
    ("digitalocean", "gpu-4000adax1-20gb", "rtx 4000ada", 1, 20, None),
    ("paperspace", "A100-80Gx8", "A100", 8, 80, None),
    ("scaleway", "H100-SXM-8-80G", "H100", 8, 80, FormFactor.SXM),
    ("ovhcloud", "l40s-180", "l40s", None, None, None),
    ("vultr", "vbm-112c-2048gb-8-h100-gpu", "h100", 8, None, None),
    ("oci", "BM.GPU.H100.8", "H100", 8, None, None),
    ("azure", "Standard_ND96isr_H100_v5", "H100", 8, None, FormFactor.SXM),
    ("azure", "NC40adsH100v5", "H100", 1, None, None),  # the price list's skuName spelling
    ("gcp", "a3-megagpu-8g", "h100-sxm-80gb", 8, None, None),  # the family names the GPU
    ("aws", "p5en.48xlarge", "h200-sxm-141gb", None, None, None),  # p5en, not p5
])
def test_grammars_read_what_the_name_states(provider: str, name: str, gpu: str,
                                            count: float | None, memory: float | None,
                                            form: FormFactor | None) -> None:
    parts = read_instance_name(provider, name)
    assert parts is not None
    assert (parts.gpu, parts.count, parts.memory_gb, parts.form) == (gpu, count, memory, form)


@pytest.mark.parametrize(("provider", "name"), [
    ("lambda", "gpu_8x_h100_sxm5_extra_words"), ("datacrunch", "CPU.4V.16G"),
    ("nebius", "cpu-d3_4vcpu-16gb"), ("oci", "VM.Standard.E5.Flex"),
    ("azure", "Standard_D4s_v5"), ("aws", "m7i.48xlarge"), ("gcp", "n2-standard-8"),
    ("ovhcloud", "t2-45"), ("ovhcloud", "b3-8"),
    ("gcp", "a3-highgpu-8g-extra"),
])
def test_a_name_that_is_not_the_grammar_s_shape_is_not_read(provider: str, name: str) -> None:
    assert read_instance_name(provider, name) is None


@pytest.mark.parametrize(("label", "model", "memory", "form", "edition"), [
    ("NVIDIA GeForce RTX 4090", "rtx 4090", None, None, None),
    ("Tesla V100-SXM2-16GB", "v100", 16, FormFactor.SXM, None),
    ("NVIDIA H100 80GB HBM3", "h100", 80, None, None),
    ("A100-PCIE-40GB", "a100", 40, FormFactor.PCIE, None),
    ("RTX 6000 Ada Generation", "rtx 6000 ada", None, None, None),
    ("RTX6000ADA", "rtx 6000 ada", None, None, None),
    ("NVIDIA GeForce RTX 3080 Ti", "rtx 3080 ti", None, None, None),
    ("RTX 4080 SUPER", "rtx 4080 super", None, None, None),
    ("AMD Instinct™ MI300X", "mi300x", None, None, None),
    ("RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx pro 6000", None, None, "max-q"),
])
def test_labels_are_normalized(label: str, model: str, memory: float | None,
                               form: FormFactor | None, edition: str | None) -> None:
    parts = read_label(label)
    assert (parts.model, parts.memory_gb, parts.form) == (model, memory, form)
    if edition == "max-q":
        assert parts.edition == "max-q"


def test_model_words_of_catalog_ids() -> None:
    assert model_words("a100-sxm-80gb") == "a100"
    assert model_words("rtx-3090-ti-24gb") == "rtx 3090 ti"
    assert model_words("quadro-rtx-6000-24gb") == "quadro rtx 6000"
    assert model_words("v100-sxm2-16gb") == "v100"


@pytest.mark.parametrize(("provider", "label", "gpu_id", "count", "layer"), [
    ("azure", "Standard_ND96isr_H100_v5", "h100-sxm-80gb", 8, "alias"),
    ("anywhere", "h100-sxm-80gb", "h100-sxm-80gb", None, "canonical"),
    ("nebius", "gpu-h200-sxm_8gpu-128vcpu-1600gb", "h200-sxm-141gb", 8, "grammar"),
    ("scaleway", "L40S-4-48G", "l40s-48gb", 4, "grammar"),
    ("digitalocean", "gpu-mi300x8-1536gb", "mi300x-192gb", 8, "grammar"),
    ("newcloud", "NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti-24gb", None, "label"),
    ("newcloud", "Tesla V100-SXM2-16GB", "v100-sxm2-16gb", None, "label"),
    ("newcloud", "RTX 6000", "quadro-rtx-6000-24gb", None, "label"),
    ("newcloud", "A6000", "rtx-a6000-48gb", None, "label"),
])
def test_each_layer_answers_and_says_so(provider: str, label: str, gpu_id: str,
                                        count: float | None, layer: str) -> None:
    res = CAT.resolve(provider, label)
    assert isinstance(res, Resolved), res
    assert (res.gpu_id, res.gpu_count, res.layer) == (gpu_id, count, layer)


@pytest.mark.parametrize(("provider", "label", "vram", "why"), [
    ("newcloud", "H100", None, "names several GPUs"),  # PCIe, SXM or NVL: not a guess
    ("newcloud", "NVIDIA H100 80GB HBM3", None, "names several GPUs"),
    ("newcloud", "A100 PCIe 48GB", None, "which no 'a100'"),  # the stated memory contradicts
    ("nebius", "gpu-l4-pcie_1gpu-8vcpu-32gb", 80, "reports 80 GB"),  # the VRAM contradicts
    ("newcloud", "RTX 9999", None, "no catalog GPU is called 'rtx 9999'"),
    ("scaleway", "H100-NVL-2-94G", None, None),  # not Scaleway's shape: read as a label
])
def test_ambiguity_and_contradiction_are_unknown(provider: str, label: str,
                                                 vram: float | None, why: str | None) -> None:
    res = CAT.resolve(provider, label, vram)
    if why is None:
        assert not isinstance(res, Resolved) or res.layer == "label"
        return
    assert isinstance(res, Unknown)
    assert why in res.reason


def test_vram_settles_what_the_words_leave_open() -> None:
    res = CAT.resolve("newcloud", "A100 SXM4", 80)
    assert isinstance(res, Resolved) and res.gpu_id == "a100-sxm-80gb"
    assert isinstance(CAT.resolve("newcloud", "A100 SXM4"), Unknown)

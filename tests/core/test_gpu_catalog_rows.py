"""The rows of the GPU catalog (core/data/gpus.csv) hold together: every row is sourced, ids are
unique and name the VRAM they carry, dense rates are ordered the way the hardware orders them,
and each product line the catalog is meant to cover has rows.
Provenance: core/data/GPUS_PROVENANCE.md.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable

import pytest

from gpuscout.core.catalog import GPUS_CSV, GpuSpec, load_catalog
from gpuscout.core.models import FormFactor, MemoryType

with GPUS_CSV.open(newline="", encoding="utf-8") as _f:
    RAW = list(csv.DictReader(_f))
CAT = load_catalog()
GPUS = list(CAT.gpus.values())

# Ids that other code, alias tables and tests refer to: they must never disappear or change.
ORIGINAL_IDS = {
    "p100-pcie-16gb", "v100-pcie-16gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "t4-16gb", "a10-24gb",
    "a10g-24gb", "a30-24gb", "a40-48gb", "a100-pcie-40gb", "a100-pcie-80gb", "a100-sxm-40gb",
    "a100-sxm-80gb", "l4-24gb", "l40-48gb", "l40s-48gb", "h100-pcie-80gb", "h100-sxm-80gb",
    "h100-nvl-94gb", "h200-sxm-141gb", "h200-nvl-141gb", "gh200-96gb", "gh200-144gb",
    "b200-sxm-180gb", "gb200-186gb", "b300-sxm-288gb", "quadro-rtx-6000-24gb", "rtx-a4000-16gb",
    "rtx-a5000-24gb", "rtx-a6000-48gb", "rtx-4000-ada-20gb", "rtx-5000-ada-32gb",
    "rtx-6000-ada-48gb", "rtx-pro-6000-96gb", "rtx-3090-24gb", "rtx-3090-ti-24gb", "rtx-4080-16gb",
    "rtx-4090-24gb", "rtx-5080-16gb", "rtx-5090-32gb", "mi100-32gb", "mi210-64gb", "mi250-128gb",
    "mi250x-128gb", "mi300x-192gb", "mi325x-256gb", "mi355x-288gb", "gaudi2-96gb", "gaudi3-128gb",
    "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e",
}


def _ids(rows: list[GpuSpec], pred: Callable[[GpuSpec], bool]) -> list[str]:
    return [g.canonical_id for g in rows if pred(g)]


def test_the_catalog_has_at_least_100_gpus() -> None:
    assert len(RAW) >= 100
    assert len(CAT.gpus) == len(RAW)


def test_original_ids_are_kept() -> None:
    assert ORIGINAL_IDS <= set(CAT.gpus), sorted(ORIGINAL_IDS - set(CAT.gpus))


def test_ids_are_unique_lowercase_slugs() -> None:
    ids = [r["canonical_id"] for r in RAW]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, dupes
    bad = [i for i in ids if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", i)]
    assert not bad, bad


def test_every_row_has_an_http_source() -> None:
    missing = [r["canonical_id"] for r in RAW if not re.search(r"https?://\S+", r["source"])]
    assert not missing, missing


def test_every_row_has_the_same_columns() -> None:
    assert all(None not in r and len(r) == len(RAW[0]) for r in RAW)


def test_vram_matches_the_gb_the_id_states() -> None:
    for g in GPUS:
        m = re.search(r"-(\d+)gb$", g.canonical_id)
        if g.form_factor == FormFactor.TPU and not m:
            continue  # Google TPU ids name the generation only
        assert m, f"{g.canonical_id} states no GB"
        assert g.vram_gb == pytest.approx(float(m.group(1)), abs=0.5), g.canonical_id


def test_bf16_support_and_bf16_rate_agree() -> None:
    assert not _ids(GPUS, lambda g: g.bf16_support and g.bf16_dense_tflops is None)
    assert not _ids(GPUS, lambda g: not g.bf16_support and g.bf16_dense_tflops is not None)


def test_fp8_support_and_fp8_rate_agree() -> None:
    assert not _ids(GPUS, lambda g: not g.fp8_support and g.fp8_dense_tflops is not None)


def test_fp8_is_at_least_bf16_where_fp8_is_supported() -> None:
    assert not _ids(GPUS, lambda g: g.fp8_support and g.fp8_dense_tflops is not None
                    and g.bf16_dense_tflops is not None
                    and g.fp8_dense_tflops < g.bf16_dense_tflops)


def test_int8_is_at_least_fp16_where_both_exist() -> None:
    assert not _ids(GPUS, lambda g: g.int8_dense_tops is not None
                    and g.fp16_dense_tflops is not None
                    and g.int8_dense_tops < g.fp16_dense_tflops)


def test_tf32_is_at_most_bf16_where_both_exist() -> None:
    assert not _ids(GPUS, lambda g: g.tf32_dense_tflops is not None
                    and g.bf16_dense_tflops is not None
                    and g.tf32_dense_tflops > g.bf16_dense_tflops)


def test_dense_rates_are_not_sparse_figures() -> None:
    # A sparse figure read as dense doubles the rate: no accelerator here has dense 16-bit tensor
    # throughput above 2.6 PFLOPS, nor a GeForce card above 250 TFLOPS (FP32 accumulate).
    assert not _ids(GPUS, lambda g: (g.bf16_dense_tflops or 0) > 2600)
    assert not _ids(GPUS, lambda g: g.family == "consumer" and (g.bf16_dense_tflops or 0) > 250)


def test_geforce_int8_is_four_times_the_fp32_accumulate_rate() -> None:
    # GeForce Ampere/Ada/Blackwell: INT8 = 2x FP16-accumulate = 4x FP16 with FP32 accumulate.
    rows = [g for g in GPUS if g.vendor == "NVIDIA" and g.family == "consumer"
            and g.architecture in ("Ampere", "Ada Lovelace", "Blackwell")]
    assert len(rows) >= 15
    for g in rows:
        assert g.bf16_dense_tflops and g.int8_dense_tops, g.canonical_id
        assert g.int8_dense_tops == pytest.approx(4 * g.bf16_dense_tflops, rel=0.02), \
            g.canonical_id


def test_data_center_sxm_oam_and_superchip_parts_use_hbm() -> None:
    hbm = {MemoryType.HBM, MemoryType.HBM2, MemoryType.HBM2E, MemoryType.HBM3, MemoryType.HBM3E}
    modules = (FormFactor.SXM, FormFactor.OAM, FormFactor.SUPERCHIP)
    wrong = _ids(GPUS, lambda g: g.form_factor in modules and g.memory_type not in hbm)
    assert not wrong, wrong
    # Google TPUs and the AWS chips are HBM parts too
    assert not _ids(GPUS, lambda g: g.form_factor == FormFactor.TPU and g.memory_type not in hbm)


def test_geforce_and_radeon_cards_are_pcie_with_gddr() -> None:
    gddr = {MemoryType.GDDR6, MemoryType.GDDR6X, MemoryType.GDDR7}
    for g in GPUS:
        if g.family == "consumer":
            assert g.form_factor == FormFactor.PCIE and g.memory_type in gddr, g.canonical_id


_NVIDIA_CC = {"Kepler": {"3.7"}, "Maxwell": {"5.2"}, "Pascal": {"6.0", "6.1"},
              "Volta": {"7.0"}, "Turing": {"7.5"},
              "Ampere": {"8.0", "8.6"}, "Ada Lovelace": {"8.9"}, "Hopper": {"9.0"},
              "Blackwell": {"10.0", "12.0"}, "Blackwell Ultra": {"10.3"}}
_AMD_GFX = {"CDNA": "gfx908", "CDNA2": "gfx90a", "CDNA3": "gfx942", "CDNA4": "gfx950",
            "RDNA3": "gfx110"}


def test_compute_capability_matches_the_architecture() -> None:
    for g in GPUS:
        if g.vendor == "NVIDIA":
            assert g.compute_capability in _NVIDIA_CC[g.architecture], g.canonical_id
            # the CUDA capability that first had each feature
            assert g.bf16_support == ((g.cuda_capability or 0) >= 8.0), g.canonical_id
            assert g.fp8_support == ((g.cuda_capability or 0) >= 8.9), g.canonical_id
        elif g.vendor == "AMD":
            gfx = g.compute_capability or ""
            assert gfx.startswith(_AMD_GFX[g.architecture]), g.canonical_id
        else:
            assert g.compute_capability is None, g.canonical_id


def test_numbers_are_plausible() -> None:
    for g in GPUS:
        assert 4 <= g.vram_gb <= 300, g.canonical_id
        assert g.mem_bandwidth_gbs is None or 100 <= g.mem_bandwidth_gbs <= 10000, g.canonical_id
        assert g.tdp_w is None or 40 <= g.tdp_w <= 1500, g.canonical_id
        assert g.release_year is None or 2014 <= g.release_year <= 2026, g.canonical_id
        assert g.nvlink.strip(), g.canonical_id


# Each product line the catalog is meant to cover, and how a row is recognised as one of it.
FAMILIES: dict[str, Callable[[GpuSpec], bool]] = {
    "GeForce RTX 20": lambda g: g.name.startswith("GeForce RTX 20"),
    "GeForce RTX 30": lambda g: g.name.startswith("GeForce RTX 30"),
    "GeForce RTX 40": lambda g: g.name.startswith("GeForce RTX 40"),
    "GeForce RTX 50": lambda g: g.name.startswith("GeForce RTX 50"),
    "Quadro RTX": lambda g: g.name.startswith("Quadro RTX"),
    "RTX A-series": lambda g: re.match(r"RTX A\d{4}", g.name) is not None,
    "RTX Ada": lambda g: g.family == "workstation" and g.architecture == "Ada Lovelace",
    "RTX PRO Blackwell": lambda g: g.name.startswith("RTX PRO"),
    "Tesla Pascal/Volta/Turing": lambda g: g.family == "datacenter"
    and g.architecture in ("Pascal", "Volta", "Turing"),
    "data-center Ampere": lambda g: g.family == "datacenter" and g.architecture == "Ampere",
    "data-center Ada": lambda g: g.family == "datacenter" and g.architecture == "Ada Lovelace",
    "Hopper": lambda g: g.architecture == "Hopper",
    "Blackwell data center": lambda g: g.family == "datacenter"
    and g.architecture.startswith("Blackwell"),
    "AMD Instinct": lambda g: g.name.startswith("Instinct"),
    "AMD Radeon PRO": lambda g: g.name.startswith("Radeon PRO"),
    "AMD Radeon RX": lambda g: g.name.startswith("Radeon RX"),
    "Intel Gaudi": lambda g: g.vendor == "Intel" and "Gaudi" in g.architecture,
    "Google TPU": lambda g: g.vendor == "Google" and g.form_factor == FormFactor.TPU,
    "AWS Trainium": lambda g: g.vendor == "AWS" and g.architecture.startswith("Trainium"),
    "AWS Inferentia": lambda g: g.vendor == "AWS" and g.architecture.startswith("Inferentia"),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_product_line_has_rows(family: str) -> None:
    assert _ids(GPUS, FAMILIES[family]), family


@pytest.mark.parametrize("gpu_id", [
    "rtx-2080-ti-11gb", "rtx-3060-12gb", "rtx-3070-8gb", "rtx-3080-10gb", "rtx-3080-ti-12gb",
    "rtx-4070-ti-12gb", "rtx-4080-super-16gb", "rtx-5090-32gb", "quadro-rtx-4000-8gb",
    "quadro-rtx-5000-16gb", "quadro-rtx-8000-48gb", "rtx-a2000-6gb", "rtx-a2000-12gb",
    "rtx-a4500-20gb", "rtx-a5500-24gb", "rtx-2000-ada-16gb", "rtx-4500-ada-24gb",
    "rtx-pro-4000-24gb", "rtx-pro-4500-32gb", "rtx-pro-5000-48gb", "v100-pcie-32gb",
    "v100s-pcie-32gb", "a2-16gb", "a16-16gb", "a800-pcie-80gb", "h800-sxm-80gb", "h20-96gb",
    "l20-48gb", "gb300-288gb", "mi300a-128gb", "mi350x-288gb", "radeon-pro-w7800-32gb",
    "radeon-pro-w7900-48gb", "radeon-rx-7900-xtx-24gb", "tpu-v2", "tpu-v3", "tpu-v7",
    "trainium1-32gb", "trainium2-96gb", "inferentia2-32gb",
])
def test_named_gpus_are_in_the_catalog(gpu_id: str) -> None:
    assert gpu_id in CAT.gpus


@pytest.mark.parametrize(("gpu_id", "field", "value"), [
    # spot checks: vendor-page figures (TPU, AWS, ROCm), the press-reported H20 table, and two
    # derived rates that equal the figures of the existing sourced rows' method
    ("tpu-v3", "bf16_dense_tflops", 123.0),
    ("tpu-v3", "mem_bandwidth_gbs", 900.0),
    ("tpu-v7", "fp8_dense_tflops", 4614.0),
    ("trainium1-32gb", "int8_dense_tops", 380.0),
    ("trainium2-96gb", "fp8_dense_tflops", 1299.0),
    ("trainium2-96gb", "bf16_dense_tflops", 667.0),
    ("inferentia2-32gb", "fp32_tflops", 47.5),
    ("mi300a-128gb", "compute_capability", "gfx942"),
    ("radeon-pro-w7900-48gb", "compute_capability", "gfx1100"),
    ("h20-96gb", "bf16_dense_tflops", 148.0),
    ("rtx-2080-ti-11gb", "fp16_dense_tflops", 53.8),  # 544 TCs x 1545 MHz x 64
    ("quadro-rtx-8000-48gb", "fp16_dense_tflops", 130.5),
])
def test_spot_values(gpu_id: str, field: str, value: object) -> None:
    assert getattr(CAT.gpu(gpu_id), field) == value

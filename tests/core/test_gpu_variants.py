"""Family-level identity: a label that fixes the GPU family but not its variant is sized at the
conservative variant and says so; resolution itself still never guesses."""

from __future__ import annotations

import pytest

from gpuscout.core.catalog import FamilyLevel, Resolved, Unknown, load_catalog

CAT = load_catalog()


@pytest.mark.parametrize(("provider", "label", "vram", "expected", "variants"), [
    # form factor not stated, memory stated: PCIe (no NVSwitch board) is the conservative one
    ("latitude", "NVIDIA H100 80GB", 80.0, "h100-pcie-80gb", ("h100-pcie-80gb", "h100-sxm-80gb")),
    ("civo", "NVIDIA A100 40GB", 40.0, "a100-pcie-40gb", ("a100-pcie-40gb", "a100-sxm-40gb")),
    # H200 NVL (bridged cards) before the SXM board
    ("fluidstack", "Nvidia H200", 141.0, "h200-nvl-141gb", ("h200-nvl-141gb", "h200-sxm-141gb")),
    # memory settled by the reported VRAM only
    ("coreweave", "NVIDIA A100", 80.0, "a100-pcie-80gb", ("a100-pcie-80gb", "a100-sxm-80gb")),
    # nothing settles the memory either: the least memory is the conservative one
    ("newcloud", "NVIDIA A100", None, "a100-pcie-40gb",
     ("a100-pcie-40gb", "a100-pcie-80gb", "a100-sxm-40gb", "a100-sxm-80gb")),
    # labels the generic layers cannot read: core/data/gpu_variants.csv (sourced rows)
    ("ovhcloud", "h200-1920", 141.0, "h200-nvl-141gb", ("h200-nvl-141gb", "h200-sxm-141gb")),
    ("datacrunch", "GB300 SXM6 288GB", 288.0, "b300-sxm-288gb",
     ("b300-sxm-288gb", "gb300-288gb")),
])
def test_a_family_label_is_sized_at_its_conservative_variant(
        provider: str, label: str, vram: float | None, expected: str,
        variants: tuple[str, ...]) -> None:
    assert isinstance(CAT.resolve(provider, label, vram), Unknown)  # resolution never guesses
    found = CAT.identify(provider, label, vram)
    assert isinstance(found, FamilyLevel)
    assert (found.gpu_id, found.variants) == (expected, variants)
    assert f"sized as {expected}" in found.note and "variant not stated" in found.note


def test_identify_is_resolve_when_resolution_settles_it() -> None:
    exact = CAT.identify("runpod", "NVIDIA H100 80GB HBM3", 80.0)
    assert isinstance(exact, Resolved) and exact.gpu_id == "h100-sxm-80gb"


def test_a_label_of_no_family_or_a_contradiction_stays_unknown() -> None:
    assert isinstance(CAT.identify("newcloud", "Mystery GPU"), Unknown)
    # the provider reports 24 GB: no H100 variant has it
    assert isinstance(CAT.identify("newcloud", "NVIDIA H100", 24.0), Unknown)


def test_spellings_run_together_resolve() -> None:
    for label in ("RTXPRO6000", "RTX PRO6000", "rtxpro 6000"):
        res = CAT.resolve("newcloud", label)
        assert isinstance(res, Resolved) and res.gpu_id == "rtx-pro-6000-96gb", label

from __future__ import annotations

import csv

import pytest

from gpuscout.core.catalog import (
    ALIASES_CSV,
    GPUS_CSV,
    Resolved,
    Unknown,
    alias_files,
    load_catalog,
)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_every_row_has_a_source_and_valid_confidence() -> None:
    for path in (GPUS_CSV, *alias_files()):
        with path.open() as f:
            rows = list(csv.DictReader(f))
        assert rows and all(r["source"].strip() for r in rows), path.name
    for path in alias_files():
        with path.open() as f:
            rows = list(csv.DictReader(f))
        assert {r["confidence"] for r in rows} <= {
            "verified", "inferred", "conflicting", "unmapped"}, path.name
        with ALIASES_CSV.open() as f:
            assert list(rows[0]) == next(csv.reader(f)), f"{path.name} has other columns"


def test_resolves_case_and_whitespace_insensitively(cat) -> None:
    res = cat.resolve("runpod", "  nvidia h100 80gb   HBM3 ")
    assert isinstance(res, Resolved) and res.gpu_id == "h100-sxm-80gb"


def test_instance_type_implies_gpu_count(cat) -> None:
    res = cat.resolve("aws", "p4d.24xlarge")
    assert isinstance(res, Resolved)
    assert (res.gpu_id, res.gpu_count) == ("a100-sxm-40gb", 8)


@pytest.mark.parametrize(("vram", "expected"), [(39.0, "a100-sxm-40gb"), (80.0, "a100-sxm-80gb")])
def test_ambiguous_label_is_settled_by_vram(cat, vram, expected) -> None:
    res = cat.resolve("vastai", "A100 SXM4", vram)
    assert isinstance(res, Resolved) and res.gpu_id == expected


def test_ambiguous_label_without_vram_is_unknown_not_a_guess(cat) -> None:
    res = cat.resolve("vastai", "A100 SXM4")
    assert isinstance(res, Unknown) and "ambiguous" in res.reason


def test_vram_contradicting_the_label_is_unknown(cat) -> None:
    res = cat.resolve("runpod", "NVIDIA A100-SXM4-80GB", 40.0)
    assert isinstance(res, Unknown) and "reports 40 GB" in res.reason


def test_unmapped_and_missing_labels_are_explicit(cat) -> None:
    assert "unmapped" in cat.resolve("fluidstack", "Nvidia H200").reason
    assert "no alias" in cat.resolve("runpod", "NVIDIA Imaginary 9000").reason


def test_canonical_id_is_accepted_for_any_provider(cat) -> None:
    res = cat.resolve("anyprovider", "H100-SXM-80GB")
    assert isinstance(res, Resolved) and res.gpu_id == "h100-sxm-80gb"


def test_gpu_spec_derived_fields(cat) -> None:
    h100 = cat.gpu("h100-sxm-80gb")
    assert h100.nvlink_gbps == 900.0 and h100.cuda_capability == 9.0
    assert cat.gpu("mi300x-192gb").cuda_capability is None

"""Every raw GPU label in every bundled snapshot resolves, or is reported as unknown; none
resolves to a GPU its own label contradicts (SXM vs PCIe, 40 vs 80 GB)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuscout.core.catalog import load_catalog
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.warehouse.connection import connect


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("labels") / "w.duckdb"
    report = refresh(None, db=db, source=Source.offline())
    assert report.status == "ok", [r.error for r in report.providers if r.error]
    return db


def test_unknown_labels_in_the_run_log_are_exactly_the_unresolved_offers(warehouse) -> None:
    with connect(warehouse, read_only=True) as con:
        logged = {(p, label) for p, labels in con.execute(
            "SELECT provider, unknown_labels FROM refresh_runs").fetchall() for label in labels}
        unresolved = set(con.execute("SELECT DISTINCT provider, gpu_label FROM current_offers "
                                     "WHERE gpu_id IS NULL").fetchall())
    assert logged == unresolved


def _sold_as_pcie(catalog, gpu_id: str) -> bool:
    """Does the catalog know a PCIe form of this GPU's family (the id's first word)?"""
    family = gpu_id.split("-", 1)[0]
    return any(g.split("-", 1)[0] == family and spec.form_factor.value == "PCIe"
               for g, spec in catalog.gpus.items())


def test_no_label_resolves_to_a_gpu_it_contradicts(warehouse) -> None:
    catalog = load_catalog()
    with connect(warehouse, read_only=True) as con:
        rows = con.execute("SELECT DISTINCT provider, gpu_label, gpu_id, vram_gb "
                           "FROM current_offers WHERE gpu_id IS NOT NULL").fetchall()
    assert rows
    for provider, label, gpu_id, vram in rows:
        spec = catalog.gpu(gpu_id)
        text = label.lower()
        if "pcie" in text and _sold_as_pcie(catalog, gpu_id):  # (a GH200 is a superchip only)
            assert spec.form_factor.value == "PCIe", (provider, label, gpu_id)
        if re.search(r"\bsxm", text):
            assert spec.form_factor.value == "SXM", (provider, label, gpu_id)
        for stated in re.findall(r"(?<!\d)(\d{2,3})\s*gb", text):
            assert abs(float(stated) - spec.vram_gb) <= 0.12 * spec.vram_gb, (label, gpu_id)
        if vram is not None:
            assert abs(vram - spec.vram_gb) <= 0.12 * spec.vram_gb, (provider, label, vram)

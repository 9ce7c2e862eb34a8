"""adapters/huggingface.py on Hugging Face's Inference Endpoints pricing document of 2026-08-20."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import huggingface
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import FamilyLevel, Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "huggingface"
PAGE = "pricing_md_6b7307a_2026-08-20.md"
A100_X4 = ("| aws      | nvidia-a100   | x4            | $10         | 4    | 320 GB "
           "| NVIDIA A100  |")


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


class TestHuggingFaceInvariants(OfferInvariants):
    NAME = "huggingface"
    # the page names no form factor: A100 and H100 80GB, H200 141GB stay family level
    EXPECTED_UNKNOWN = frozenset({"nvidia-a100", "nvidia-h100", "nvidia-h200"})

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return huggingface.parse([_capture()]).offers


def test_every_instance_of_the_gpu_and_inf2_tables_at_its_hourly_rate() -> None:
    result = huggingface.parse([_capture()])
    assert result.complete
    got = {o.offer_key: (o.gpu_count, o.price_per_hour) for o in result.offers}
    assert got == {
        "aws|nvidia-t4|x1": (1, 0.5), "aws|nvidia-t4|x4": (4, 3.0),
        "aws|nvidia-l4|x1": (1, 0.8), "aws|nvidia-l4|x4": (4, 3.8),
        "aws|nvidia-a10g|x1": (1, 1.0), "aws|nvidia-a10g|x4": (4, 5.0),
        "aws|nvidia-l40s|x1": (1, 1.8), "aws|nvidia-l40s|x4": (4, 8.3),
        "aws|nvidia-l40s|x8": (8, 23.5),
        "aws|nvidia-a100|x1": (1, 2.5), "aws|nvidia-a100|x2": (2, 5.0),
        "aws|nvidia-a100|x4": (4, 10.0), "aws|nvidia-a100|x8": (8, 20.0),
        "aws|nvidia-h200|x1": (1, 5.0), "aws|nvidia-h200|x2": (2, 10.0),
        "aws|nvidia-h200|x4": (4, 20.0), "aws|nvidia-h200|x8": (8, 40.0),
        "gcp|nvidia-t4|x1": (1, 0.5),
        "gcp|nvidia-l4|x1": (1, 0.7), "gcp|nvidia-l4|x4": (4, 3.8),
        "gcp|nvidia-a100|x1": (1, 3.6), "gcp|nvidia-a100|x2": (2, 7.2),
        "gcp|nvidia-a100|x4": (4, 14.4), "gcp|nvidia-a100|x8": (8, 28.8),
        "gcp|nvidia-h100|x1": (1, 10.0), "gcp|nvidia-h100|x2": (2, 20.0),
        "gcp|nvidia-h100|x4": (4, 40.0), "gcp|nvidia-h100|x8": (8, 80.0),
        "aws|inf2|x1": (1, 0.75), "aws|inf2|x12": (12, 12.0),
    }
    assert {o.pricing_model for o in result.offers} == {PricingModel.ON_DEMAND}


def test_the_aws_h100_and_b200_deprecated_from_december_2025_are_rejects() -> None:
    rejects = huggingface.parse([_capture()]).rejects
    assert [(r.offer_key, r.reason) for r in rejects] == [
        (None, f"nvidia-{gpu} {size} on aws: 'NVIDIA {gpu.upper()} - Deprecated from "
               "December 2025'")
        for gpu in ("h100", "b200") for size in ("x1", "x2", "x4", "x8")]


def test_an_offer_keeps_the_page_cells_and_is_billed_per_minute() -> None:
    offers = {o.offer_key: o for o in huggingface.parse([_capture()]).offers}
    a100, inf2 = offers["aws|nvidia-a100|x4"], offers["aws|inf2|x12"]
    assert (a100.gpu_label, a100.instance_type, a100.billing_increment_s, a100.region,
            a100.vram_gb_per_gpu, a100.ram_gb) == (
        "nvidia-a100", "nvidia-a100 x4", 60, None, None, None)
    assert a100.provider_data == {
        "product": "Inference Endpoints", "cloud": "aws", "instance_size": "x4",
        "price_basis": "per instance", "docs_page": huggingface.DOCS_PAGE,
        "listed_memory_gb": 320.0, "architecture": "NVIDIA A100"}
    assert (inf2.gpu_label, inf2.gpu_count, inf2.ram_gb, inf2.provider_data["listed_memory_gb"],
            inf2.provider_data["architecture"]) == ("inf2", 12, 760.0, 384.0, "AWS Inferentia2")
    assert a100.observed_at == datetime(2026, 8, 20, 12, 44, 43, tzinfo=UTC)
    assert a100.source_url == huggingface.PRICING_URL


def test_the_aws_t4_memory_the_page_lists_is_not_reported_as_vram() -> None:
    # 14 GB per T4 is the page's figure for AWS (16 GB on GCP); the GPU is a 16 GB T4 either way
    offers = {o.offer_key: o for o in huggingface.parse([_capture()]).offers}
    aws, gcp = offers["aws|nvidia-t4|x1"], offers["gcp|nvidia-t4|x1"]
    assert (aws.provider_data["listed_memory_gb"], gcp.provider_data["listed_memory_gb"]) == (
        14.0, 16.0)
    assert aws.vram_gb_per_gpu is None
    res = load_catalog().resolve("huggingface", aws.gpu_label, aws.vram_gb_per_gpu)
    assert isinstance(res, Resolved) and res.gpu_id == "t4-16gb"


def test_labels_resolve_or_keep_the_family_the_page_states() -> None:
    catalog = load_catalog()
    exact = {label: getattr(catalog.identify("huggingface", label), "gpu_id", None)
             for label in ("nvidia-t4", "nvidia-l4", "nvidia-a10g", "nvidia-l40s", "inf2")}
    assert exact == {"nvidia-t4": "t4-16gb", "nvidia-l4": "l4-24gb",
                     "nvidia-a10g": "a10g-24gb", "nvidia-l40s": "l40s-48gb",
                     "inf2": "inferentia2-32gb"}
    families = {label: catalog.identify("huggingface", label)
                for label in ("nvidia-a100", "nvidia-h100", "nvidia-h200")}
    assert all(isinstance(f, FamilyLevel) for f in families.values())
    assert {label: sorted(f.variants) for label, f in families.items()
            if isinstance(f, FamilyLevel)} == {
        "nvidia-a100": ["a100-pcie-80gb", "a100-sxm-80gb"],
        "nvidia-h100": ["h100-pcie-80gb", "h100-sxm-80gb"],
        "nvidia-h200": ["h200-nvl-141gb", "h200-sxm-141gb"]}


def test_a_deprecation_still_to_come_is_an_offer_with_the_page_words() -> None:
    later = with_replaced(_capture(), "Deprecated from December 2025", "To be deprecated "
                          "December 2026")
    result = huggingface.parse([later])
    assert result.rejects == []
    h100 = {o.offer_key: o for o in result.offers}["aws|nvidia-h100|x8"]
    assert (h100.price_per_hour, h100.provider_data["deprecation"]) == (
        36.0, "NVIDIA H100 - To be deprecated December 2026")


def test_a_deprecation_without_a_readable_month_is_a_reject() -> None:
    vague = with_replaced(_capture(), "Deprecated from December 2025", "Deprecated soon")
    assert len(huggingface.parse([vague]).rejects) == 8


def test_without_the_per_minute_sentence_the_increment_is_unknown() -> None:
    silent = with_replaced(_capture(), "the actual cost is billed per minute", "billing varies",
                           exactly_once=True)
    assert {o.billing_increment_s for o in huggingface.parse([silent]).offers} == {None}


@pytest.mark.parametrize(("new", "reason"), [
    (A100_X4.replace("$10 ", "Contact"), "Hourly rate is not a price: 'Contact'"),
    (A100_X4.replace("| 4    |", "| four |"), "GPUs is not a count: 'four'"),
    (A100_X4.replace("| x4 ", "| x8 "), "Instance Size 'x8' disagrees with GPUs '4'"),
    (A100_X4.replace("| 320 GB ", ""), "6 cells for 7 columns"),
])
def test_a_row_that_does_not_fit_is_a_reject_and_the_others_load(new: str, reason: str) -> None:
    result = huggingface.parse([with_replaced(_capture(), A100_X4, new, exactly_once=True)])
    assert reason in [r.reason for r in result.rejects]
    keys = {o.offer_key for o in result.offers}
    assert "aws|nvidia-a100|x2" in keys and len(keys) == 29


@pytest.mark.parametrize(("old", "new", "field"), [
    ("## GPU Instances", "## Accelerated Instances", "GPU Instances"),
    ("| Hourly rate | GPUs | Memory | Architecture |",
     "| Price/hr | GPUs | Memory | Architecture |", "Hourly rate"),
    ("| Hourly rate | GPUs | Memory | Architecture |", "| Hourly rate | Count | Memory | "
     "Architecture |", "GPUs"),
    ("| Provider | Instance Type | Instance Size | Hourly rate | GPUs",
     "| Cloud | Instance Type | Instance Size | Hourly rate | GPUs", "Provider"),
    ("| Hourly rate | Accelerators |", "| Hourly rate | Chips |", "Accelerators"),
])
def test_a_reshaped_page_is_a_parse_error(old: str, new: str, field: str) -> None:
    with pytest.raises(ParseError) as err:
        huggingface.parse([with_replaced(_capture(), old, new, exactly_once=True)])
    assert err.value.field == field


def test_a_page_without_the_inf2_section_still_reads_its_gpus() -> None:
    capture = _capture()
    cut = capture.body.split(b"## INF2 Instances")[0]
    result = huggingface.parse([capture.model_copy(update={"body": cut})])
    assert len(result.offers) == 28 and not any("inf2" in o.offer_key for o in result.offers)


def test_a_body_that_is_not_the_document_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        huggingface.parse([_capture().model_copy(update={"body": b"<html>404</html>"})])


def test_offline_fetch_serves_the_bundled_document() -> None:
    with HttpClient("huggingface", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = huggingface.fetch(client, {})
    assert [c.url for c in captures] == [huggingface.PRICING_URL]
    assert captures[0].body == (SNAP / PAGE).read_bytes()

"""Invariants every adapter's offers hold, whatever the provider.

Each `tests/adapters/test_<provider>.py` subclasses `OfferInvariants` as `Test…Invariants`, sets
`NAME` and `EXPECTED_UNKNOWN`, and supplies an `offers` fixture (usually parametrized over its
snapshot and fixture files). Also: `load_capture`, which builds the `Capture` a file stands for
from the archive manifest next to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from gpuscout.adapters.archive import Capture, read_manifest
from gpuscout.core.catalog import VRAM_TOLERANCE, Resolved, Unknown, load_catalog
from gpuscout.core.models import ParsedOffer

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def load_capture(folder: Path, file: str) -> Capture:
    """The capture of `file` as its folder's manifest.json records it (URL, method, date)."""
    entries = [e for e in read_manifest(folder) if e.file == file]
    assert len(entries) == 1, f"{file} is listed {len(entries)} times in {folder}/manifest.json"
    entry = entries[0]
    return Capture(provider=folder.name, url=entry.url, method=entry.method, status=entry.status,
                   headers=entry.headers, body=(folder / file).read_bytes(),
                   fetched_at=entry.fetched_at)


def with_json_edit(capture: Capture, edit: Callable[[Any], None] | None) -> Capture:
    """The capture with its JSON body changed in place by `edit` (None: as recorded)."""
    if edit is None:
        return capture
    doc = json.loads(capture.body)
    edit(doc)
    return capture.model_copy(update={"body": json.dumps(doc).encode()})


def with_replaced(capture: Capture, old: str, new: str, *, exactly_once: bool = False) -> Capture:
    """The capture with `old` replaced by `new` in its body: how a format change would look.

    `old` must occur in the body (exactly once when `exactly_once`), so a test never mutates
    nothing and passes for the wrong reason.
    """
    count = capture.body.count(old.encode())
    assert count == 1 if exactly_once else count >= 1, (old, count)
    return capture.model_copy(update={"body": capture.body.replace(old.encode(), new.encode())})


class OfferInvariants:
    NAME: ClassVar[str]
    # Labels that may come back Unknown from the catalog (no alias, or listed as unmapped).
    EXPECTED_UNKNOWN: ClassVar[frozenset[str]] = frozenset()

    def test_not_empty(self, offers: list[ParsedOffer]) -> None:
        # An empty result would let every other invariant pass without checking anything.
        assert offers

    def test_prices_positive(self, offers: list[ParsedOffer]) -> None:
        assert all(o.price_per_hour > 0 for o in offers)

    def test_gpu_count_positive(self, offers: list[ParsedOffer]) -> None:
        assert all(o.gpu_count > 0 for o in offers)

    def test_provider_is_name(self, offers: list[ParsedOffer]) -> None:
        assert {o.provider for o in offers} == {self.NAME}

    def test_offer_keys_unique(self, offers: list[ParsedOffer]) -> None:
        keys = [o.offer_key for o in offers]
        assert len(keys) == len(set(keys))

    def test_observed_at_aware(self, offers: list[ParsedOffer]) -> None:
        assert all(o.observed_at.utcoffset() is not None for o in offers)

    def test_labels_resolve_or_expected_unknown(self, offers: list[ParsedOffer]) -> None:
        catalog = load_catalog()
        for o in offers:
            res = catalog.resolve(self.NAME, o.gpu_label, o.vram_gb_per_gpu)
            if isinstance(res, Unknown):
                assert o.gpu_label in self.EXPECTED_UNKNOWN, res.reason
            else:
                assert o.gpu_label not in self.EXPECTED_UNKNOWN, (
                    f"{o.gpu_label!r} resolves to {res.gpu_id}: drop it from EXPECTED_UNKNOWN")

    def test_never_a_gpu_with_other_vram(self, offers: list[ParsedOffer]) -> None:
        catalog = load_catalog()
        for o in offers:
            if o.vram_gb_per_gpu is None:
                continue
            res = catalog.resolve(self.NAME, o.gpu_label, o.vram_gb_per_gpu)
            if isinstance(res, Resolved):
                nominal = catalog.gpu(res.gpu_id).vram_gb
                assert abs(o.vram_gb_per_gpu - nominal) <= VRAM_TOLERANCE * nominal, o.offer_key
            # Unknown with the reported VRAM must not hide an alias that names a GPU of
            # another size: then the label alone would resolve.
            blind = catalog.resolve(self.NAME, o.gpu_label)
            if isinstance(res, Unknown) and isinstance(blind, Resolved):
                raise AssertionError(f"{o.gpu_label!r} maps to {blind.gpu_id} but the provider "
                                     f"reports {o.vram_gb_per_gpu} GB: {res.reason}")

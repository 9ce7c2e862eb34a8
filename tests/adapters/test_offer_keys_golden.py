"""The offer keys and reject reasons each adapter reads from its recorded captures, pinned.

An offer key is what the warehouse's price history hangs on: a key that changes closes the
offer and opens a new one. So a refactoring (a helper folded into the toolkit, a module split
by source) must leave every key and every reject reason as it was, and a change that does
alter them shows here, file by file, for review.

For each provider below: its bundled snapshot parsed whole, and each of its test fixtures
parsed on its own (a fixture that is refused is pinned by its error). The lists are in
`tests/adapters/golden/<provider>.txt`; after a deliberate change, rewrite them with

    GPUSCOUT_WRITE_GOLDEN=1 .venv/bin/pytest tests/adapters/test_offer_keys_golden.py

and say in the commit why the keys changed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from invariants import FIXTURES, load_capture

from gpuscout.adapters.archive import load_captures, read_manifest
from gpuscout.adapters.registry import SNAPSHOTS_DIR, get_adapter
from gpuscout.core.errors import GpuscoutError

GOLDEN = Path(__file__).parent / "golden"
WRITE = os.environ.get("GPUSCOUT_WRITE_GOLDEN") == "1"
ERROR_CHARS = 120
# The providers whose modules were refactored or reworked alongside this test (the rest are
# pinned by their own tests); add a provider when its module is next refactored.
PROVIDERS = ("aws", "civo", "e2e", "hotaisle", "hyperbolic", "ibmcloud", "jarvislabs", "lium",
             "massedcompute", "ovhcloud", "primeintellect", "runpod", "seeweb", "shadeform",
             "tensordock", "vultr")


def _lines(name: str, captures: list) -> list[str]:
    try:
        result = get_adapter(name).parse(captures)
    except GpuscoutError as exc:
        return [f"error\t{type(exc).__name__}: {str(exc).splitlines()[0][:ERROR_CHARS]}"]
    offers = sorted(f"offer\t{o.offer_key}" for o in result.offers)
    rejects = sorted(f"reject\t{r.offer_key or '-'}\t{r.reason}" for r in result.rejects)
    return [f"complete\t{result.complete}", *offers, *rejects]


def golden_text(name: str) -> str:
    """The pinned text of `name`: a section per source, a line per offer key and reject."""
    sections = [("snapshot", _lines(name, load_captures(SNAPSHOTS_DIR, name)))]
    folder = FIXTURES / name
    if (folder / "manifest.json").is_file():
        sections += [(entry.file, _lines(name, [load_capture(folder, entry.file)]))
                     for entry in sorted(read_manifest(folder), key=lambda e: e.file)]
    return "".join(f"# {source}\n" + "".join(f"{line}\n" for line in lines)
                   for source, lines in sections)


@pytest.mark.parametrize("name", PROVIDERS)
def test_offer_keys_and_reject_reasons_are_as_pinned(name: str) -> None:
    path = GOLDEN / f"{name}.txt"
    text = golden_text(name)
    if WRITE:
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, (
        f"{name}: offer keys or reject reasons changed (see this module's docstring)")


def test_the_pinned_providers_each_have_a_golden_file() -> None:
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(PROVIDERS)

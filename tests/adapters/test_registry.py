"""Meta-tests: every provider module is registered, named consistently, bundled and tested."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from gpuscout.adapters import registry
from gpuscout.adapters.archive import read_manifest, sha256
from gpuscout.adapters.registry import PROVIDERS, SNAPSHOTS_DIR, get_adapter

# Not `gpuscout.adapters.__file__`: under pytest's default import mode tests/adapters/ can
# shadow the package as a namespace package, whose __file__ is None.
ADAPTERS_DIR = Path(registry.__file__).parent
TESTS_DIR = Path(__file__).parent


def _modules_with_parse() -> list[str]:
    names = []
    for path in sorted(ADAPTERS_DIR.glob("*.py")):
        module = importlib.import_module(f"gpuscout.adapters.{path.stem}")
        if callable(getattr(module, "parse", None)):
            names.append(path.stem)
    return names


def test_every_module_with_parse_is_registered() -> None:
    assert set(_modules_with_parse()) == set(PROVIDERS.values())


def test_names_are_unique_and_equal_to_the_registry_key() -> None:
    names = [get_adapter(key).NAME for key in PROVIDERS]
    assert names == list(PROVIDERS)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_module_contract(name: str) -> None:
    adapter = get_adapter(name)
    assert adapter.SOURCE_KIND in ("api", "html")
    assert isinstance(adapter.CREDENTIALS, tuple)
    assert all(isinstance(c, str) and c.isupper() for c in adapter.CREDENTIALS)
    assert callable(adapter.fetch) and callable(adapter.parse)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_bundled_snapshot_manifest_matches_its_files(name: str) -> None:
    folder = SNAPSHOTS_DIR / name
    entries = read_manifest(folder)
    assert entries, f"{folder}/manifest.json is missing or empty"
    assert (folder / "PROVENANCE.md").is_file()
    for entry in entries:
        body = (folder / entry.file).read_bytes()
        assert sha256(body) == entry.sha256, entry.file
        assert entry.fetched_at.utcoffset() is not None
        assert entry.note, f"{entry.file} needs a provenance note"


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_each_provider_has_a_test_module(name: str) -> None:
    assert (TESTS_DIR / f"test_{name}.py").is_file()

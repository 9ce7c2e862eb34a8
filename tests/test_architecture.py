"""The layer contract of README's *Architecture*: imports run one way, from a floor down.

Every module of the installed package is read (not imported) and each `import gpuscout.X`
or `from gpuscout.X import` is checked against the floors below. A back-reference fails here,
and so in CI.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import gpuscout

# Floor of each part of the package; a module may import its own part and lower floors only.
FLOORS: dict[str, int] = {
    "core": 1,
    "adapters": 2, "warehouse": 2, "sizing": 2, "runlogs": 2,
    "pipeline": 3,
    "api": 4, "runs": 4,
    "report": 5, "probe": 5,
    "cli": 6, "flows": 6,
}
# Parts on one floor that must not import each other.
SIBLINGS = [{"adapters", "warehouse", "sizing", "runlogs"}, {"cli", "flows"}]
# The package root: its __init__ re-exports the API, __main__ starts the CLI.
ROOT_PART = {"__init__": "api", "__main__": "cli"}


def _part_dirs() -> dict[str, Path]:
    dirs = {}
    for part in FLOORS:
        spec = importlib.util.find_spec(f"gpuscout.{part}")
        assert spec is not None and spec.origin, part
        dirs[part] = Path(spec.origin).parent if spec.submodule_search_locations \
            else Path(spec.origin)
    return dirs


def _modules() -> list[tuple[str, Path]]:
    """(part, file) for every module of the package."""
    root = Path(gpuscout.__file__).parent
    found = []
    for part, where in _part_dirs().items():
        files = sorted(where.rglob("*.py")) if where.is_dir() else [where]
        found += [(part, f) for f in files]
    found += [(ROOT_PART[f.stem], f) for f in root.glob("*.py") if f.stem in ROOT_PART]
    return found


def _imported_parts(path: Path) -> list[tuple[int, str]]:
    """(line, part) of every gpuscout import in a file, relative imports included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path}:{node.lineno}: relative import; write "
                                     f"`from gpuscout.<part>...` so the layer is visible")
            mod = node.module or ""
            names = [mod] if mod != "gpuscout" else [f"gpuscout.{a.name}" for a in node.names]
        for name in names:
            bits = name.split(".")
            if bits[0] in FLOORS or bits[0] in {"pipeline", "adapters", "warehouse", "sizing",
                                                "runlogs", "flows", "core", "faces"}:
                out.append((node.lineno, f"bare:{bits[0]}"))
            elif bits[0] == "gpuscout" and len(bits) > 1:
                out.append((node.lineno, bits[1] if bits[1] in FLOORS else "api"))
            elif bits[0] == "gpuscout":
                out.append((node.lineno, "api"))
    return out


def _violations() -> list[str]:
    bad = []
    for part, path in _modules():
        for line, target in _imported_parts(path):
            where = f"{path.name}:{line} ({part} imports {target})"
            if target.startswith("bare:"):
                bad.append(f"{where}: import the installed package as gpuscout.<part>")
            elif target == part:
                continue
            elif FLOORS[target] > FLOORS[part]:
                bad.append(f"{where}: floor {FLOORS[part]} must not import floor "
                           f"{FLOORS[target]}")
            elif any({part, target} <= group for group in SIBLINGS):
                bad.append(f"{where}: {part} and {target} are siblings on one floor")
    return bad


def test_every_import_runs_down_the_floors() -> None:
    assert _violations() == []


def test_the_contract_sees_every_part() -> None:
    parts = {part for part, _ in _modules()}
    assert parts == set(FLOORS)
    assert len(_modules()) > 70  # the whole package, not one folder


def test_a_back_reference_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The checker itself: an adapter that reaches up into the pipeline is reported.
    module = tmp_path / "x.py"
    module.write_text("from gpuscout.pipeline.refresh import refresh\nimport adapters.http\n")
    monkeypatch.setattr(f"{__name__}._modules", lambda: [("adapters", module)])
    found = _violations()
    assert len(found) == 2
    assert "floor 2 must not import floor 3" in found[0]
    assert "installed package" in found[1]


def test_no_bare_top_level_package_is_importable() -> None:
    # Tests run the installed package: the repository's folders are not on sys.path, so a
    # stray `import adapters` (or import_module("pipeline.x")) fails instead of loading a copy.
    repo = Path(__file__).resolve().parent.parent
    for name in ("core", "faces", "adapters", "warehouse", "sizing", "runlogs", "pipeline",
                 "flows"):
        spec = importlib.util.find_spec(name)
        assert spec is None or repo not in Path(spec.origin or "/").parents, name

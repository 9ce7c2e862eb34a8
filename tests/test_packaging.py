"""The distribution installs one top-level package, `gpuscout`, with its data, and nothing bare.

The wheel is built here, offline (no build isolation: setuptools comes from the dev extra).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel, and everything the build said (setuptools' warnings included)."""
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--verbose", "--no-deps",
                           "--no-build-isolation", "--wheel-dir", str(out), str(REPO)],
                          check=True, capture_output=True, text=True, timeout=300)
    (path,) = out.glob("gpuscout-*.whl")
    return path, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def wheel(built: tuple[Path, str]) -> zipfile.ZipFile:
    return zipfile.ZipFile(built[0])


def test_the_build_does_not_mistake_data_folders_for_packages(built: tuple[Path, str]) -> None:
    """Snapshots, CSVs and SQL are package data: setuptools has nothing to warn about (it
    used to warn once per data folder, ~50 times, on every `make demo`)."""
    log = built[1]
    assert "Building wheel for gpuscout" in log or "Created wheel" in log  # the log is there
    assert "absent from the `packages` configuration" not in log
    assert "would be ignored" not in log


def test_the_built_wheel_installs_offline_and_reads_its_data(built: tuple[Path, str],
                                                            tmp_path: Path) -> None:
    """`pip install` of the wheel alone, with no index, then the installed copy (not the
    repository) reads its bundled data: the catalog, a snapshot manifest, a migration."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                    "--no-deps", "--target", str(target), str(built[0])],
                   check=True, capture_output=True, text=True, timeout=300)
    code = ("import gpuscout, json\n"
            "from gpuscout.core.catalog import load_catalog\n"
            "from gpuscout.adapters.registry import SNAPSHOTS_DIR\n"
            "from gpuscout.warehouse.sqlfiles import QUERIES_DIR\n"
            "print(json.dumps([gpuscout.__file__, len(load_catalog().gpus),"
            " (SNAPSHOTS_DIR / 'aws' / 'manifest.json').is_file(),"
            " (QUERIES_DIR / 'filter_values.sql').is_file()]))")
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env=env, timeout=120)
    where, gpus, manifest, query = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(where).is_relative_to(target)  # the installed copy answered
    assert gpus > 100 and manifest and query


def test_only_gpuscout_is_installed(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"gpuscout"}
    info = next(t for t in tops if t.endswith(".dist-info"))
    assert wheel.read(f"{info}/top_level.txt").decode().split() == ["gpuscout"]


def test_every_layer_and_its_data_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for module in ("gpuscout/__init__.py", "gpuscout/api.py", "gpuscout/cli/app.py",
                   "gpuscout/report.py", "gpuscout/core/catalog.py",
                   "gpuscout/adapters/registry.py", "gpuscout/warehouse/connection.py",
                   "gpuscout/sizing/job.py", "gpuscout/pipeline/refresh.py",
                   "gpuscout/pipeline/recommend/rank.py", "gpuscout/flows/refresh.py"):
        assert module in names, module
    for data in ("gpuscout/core/data/gpus.csv", "gpuscout/core/data/aliases/runpod.csv",
                 "gpuscout/pipeline/data/provider_profiles.csv",
                 "gpuscout/pipeline/recommend/shown.sql",
                 "gpuscout/sizing/data/architectures.csv",
                 "gpuscout/warehouse/migrations/0001_initial.sql",
                 "gpuscout/adapters/snapshots/lambda/manifest.json"):
        assert data in names, data
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "gpuscout = gpuscout.cli.app:main" in wheel.read(entry).decode()


def test_the_api_is_there_on_import() -> None:
    code = "import gpuscout; print(gpuscout.offers.__module__, gpuscout.Job.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.split() == ["gpuscout.api", "Job"]

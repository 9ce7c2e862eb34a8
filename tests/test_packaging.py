"""The distribution installs one top-level package, `gpuscout`, with its data, and nothing bare.

The wheel is built here, offline (no build isolation: setuptools comes from the dev extra).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(out), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=300)
    (path,) = out.glob("gpuscout-*.whl")
    return zipfile.ZipFile(path)


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

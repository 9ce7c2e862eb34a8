"""The reliability suite's marker: `pytest -m fuzz` runs the parser fuzzing alone."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fuzz: hypothesis mutations of the bundled snapshots "
                                       "into every parser (deterministic, bounded)")

"""One Prefect test server for the whole session, in a throw-away PREFECT_HOME."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="gpuscout-prefect-"))
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

prefect_testing = pytest.importorskip("prefect.testing.utilities")


@pytest.fixture(autouse=True, scope="session")
def prefect_harness() -> Iterator[None]:
    with prefect_testing.prefect_test_harness(server_startup_timeout=300):
        yield

"""The README's *Python API* example runs as written, on the bundled snapshots."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _api_example() -> str:
    section = README.read_text().split("## Python API", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README's Python API section has no python block"
    return match.group(1)


def test_the_readme_api_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the example's relative warehouse path lands here
    os.makedirs("var")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_api_example(), "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(("ok ", "partial "))
    assert "('lambda', 'ok'" in lines[0] and "('runpod', 'ok'" in lines[0]
    assert any(line.startswith(("lambda h100", "runpod h100")) for line in lines)
    assert any("GB per GPU, fits: True" in line for line in lines)
    assert any(line.count("$") == 1 and "fits: needs" in line for line in lines)
    assert any(line.startswith("ok None [('LAMBDA_API_KEY', ") for line in lines)
    assert "'provider': 'lambda'" in lines[-1]

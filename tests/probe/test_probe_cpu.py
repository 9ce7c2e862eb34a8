"""The probe on the CPU: the tiny grid through the same code path a GPU run takes.

Needs the `probe` extra (PyTorch, transformers, peft). Without it the module skips, unless
GPUSCOUT_REQUIRE_PROBE=1 (set by .ci/run, which installs the extra) turns the skip into a
failure. QLoRA points run where bitsandbytes loads and are reported as skipped elsewhere.
Parameter counts are pinned by hand from the tiny config (2 layers, hidden 64, 4 heads of 16,
2 KV heads, MLP 128, vocabulary 512, tied embeddings) and against the catalog's published
counts; nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gpuscout.probe import rows
from gpuscout.probe.grid import GRIDS, LLAMA_3B, LLAMA_8B, QWEN_05B, Grid, Shape
from gpuscout.sizing.architectures import lookup

for _needed in ("torch", "transformers", "peft"):
    try:
        __import__(_needed)
    except ImportError:
        _reason = (f"{_needed} is not installed: `make install-probe` adds the probe extra; "
                   f".ci/run installs it")
        if os.environ.get("GPUSCOUT_REQUIRE_PROBE") == "1":
            pytest.fail(_reason, pytrace=False)
        pytest.skip(_reason, allow_module_level=True)

from gpuscout.probe.build import _count, _hf_config, _hf_model, qlora_unavailable  # noqa: E402
from gpuscout.probe.decoder import Decoder  # noqa: E402
from gpuscout.probe.run import Report, probe, probe_to_files  # noqa: E402

TINY = GRIDS["tiny"]


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    # The tiny model gains nothing from threads, and on a busy shared CPU its steps stall
    # waiting for them.
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
# embeddings 512 x 64 (tied) + 2 x (q 64x64, k 64x32, v 64x32, o 64x64, gate/up/down 3 x
# 64x128, 2 norms of 64) + the final norm
TINY_PARAMS = 512 * 64 + 2 * (4096 + 2048 + 2048 + 4096 + 3 * 8192 + 128) + 64
# rank 4 on the 7 linear layers of each block: r x (in + out)
TINY_LORA = 2 * 4 * ((64 + 64) + 2 * (64 + 32) + (64 + 64) + 3 * (64 + 128))


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, list[dict[str, str]],
                                                               Path, Path, list[str]]:
    where = tmp_path_factory.mktemp("probe")
    lines: list[str] = []
    csv_path, json_path = where / "tiny.csv", where / "tiny.json"
    report, made = probe_to_files(TINY, csv_path=csv_path, json_path=json_path, device="cpu",
                                  echo=lines.append)
    return report, made, csv_path, json_path, lines


def test_every_point_of_the_tiny_grid_runs(hf_run) -> None:
    report, made, _, _, lines = hf_run
    qlora = qlora_unavailable("auto")
    for r in report.results:
        if r.point.method == "qlora" and qlora is not None:
            assert r.status == f"skipped: {qlora}", r.line()
        else:
            assert r.status == "ok", r.line()
            assert len(r.step_s) == TINY.timed_steps and r.tokens_per_s and r.tokens_per_s > 0
    assert len(report.results) == 12
    assert len(made) == sum(r.status == "ok" for r in report.results) >= 8
    assert len(lines) == 13 and lines[-1].startswith("cpu; ")


def test_the_models_have_the_config_s_parameters(hf_run) -> None:
    report, *_ = hf_run
    for r in report.results:
        if r.status != "ok":
            continue
        assert r.params == TINY_PARAMS
        assert r.trainable == (TINY_PARAMS if r.point.method == "full" else TINY_LORA)
        assert "transformers" in r.builder
        if r.point.method != "full":
            assert "peft" in r.builder


def test_the_rows_are_in_the_file_and_every_point_in_the_json(hf_run) -> None:
    report, made, csv_path, json_path, _ = hf_run
    assert rows.read(csv_path) == made
    row = made[0]
    assert row["gpu"] == "cpu" and row["model"] == "tiny-llama" and row["method"] == "full"
    assert (row["batch_size"], row["seq_len"], row["grad_checkpointing"]) == ("1", "32", "no")
    assert "packed fixed-length batches" in row["notes"]
    assert "torch " in row["notes"] and "transformers " in row["notes"]
    assert row["memory_metric"] == rows.NO_MEMORY_METRIC
    data = json.loads(json_path.read_text())
    assert len(data["points"]) == 12 and data["env"]["device"] == "cpu"
    assert data["env"]["matmul_tflops"] > 0 and data["env"]["copy_gb_s"] > 0


def test_the_plain_decoder_runs_without_transformers_code() -> None:
    grid = replace(TINY, methods=("full", "lora", "qlora"), shapes=(Shape(2, 16),))
    report = probe(grid, device="cpu", backend="plain", card=False)
    by_method = {(r.point.method, r.point.checkpointing): r for r in report.results}
    for method in ("full", "lora"):
        for gc in (False, True):
            r = by_method[(method, gc)]
            assert r.status == "ok", r.line()
            assert "plain PyTorch decoder" in r.builder
            assert r.trainable == (TINY_PARAMS if method == "full" else TINY_LORA)
    assert by_method[("qlora", False)].status.startswith("skipped: QLoRA needs transformers")
    assert report.env.matmul_tflops is None


@pytest.mark.parametrize("arch", [QWEN_05B, LLAMA_3B, LLAMA_8B])
def test_both_builders_give_the_published_parameter_count(arch) -> None:
    import torch

    published = lookup(arch.model_id).published_params
    with torch.device("meta"):
        plain = _count(Decoder(arch.config_dict()))
    hf = _count(_hf_model(_hf_config(arch.config_dict()), "meta"))
    assert plain == hf == published


def test_a_point_over_its_time_limit_in_warm_up_is_reported() -> None:
    grid = replace(TINY, methods=("full",), shapes=(Shape(1, 16),), checkpointing=(False,),
                   point_limit_s=0.0)
    [result] = probe(grid, device="cpu", card=False).results
    assert result.status == "time limit: 0 s spent in warm-up" and result.step_s == []


def test_points_beyond_the_budget_are_skipped_not_started() -> None:
    grid: Grid = replace(TINY, budget_s=0.0)
    report = probe(grid, device="cpu", card=False)
    assert len(report.results) == 12
    assert all(r.status.startswith(("skipped: budget", "skipped: QLoRA", "skipped: bits"))
               for r in report.results)


def test_the_command_writes_the_rows(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gpuscout.cli.app import app

    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(app, ["probe", "--grid", "tiny", "--method", "full",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(rows.read(out)) == 4
    assert "model not in the architecture catalog" in result.output

"""The probe's rows and configs against the files they must agree with (no PyTorch needed).

A probe row is read by the calibration's own rules (`job_for_row`), so these tests pin what
those rules make of it: fixed-length batches, the optimizer, the method and quantization, the
LoRA settings. The comparison is pinned against `estimate()` called directly.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpuscout.probe import rows
from gpuscout.probe.compare import compare_rows, markdown, resolve_gpu
from gpuscout.probe.grid import GRIDS, LLAMA_3B, LLAMA_8B, QWEN_05B, TINY, Point, Shape
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.calibration import MEASUREMENTS_CSV, job_for_row
from gpuscout.sizing.estimate import estimate

ENV = rows.Env(device="NVIDIA H200", cuda=True, memory_gib=139.8, driver="580.1",
               cuda_version="13.0", versions={"torch": "2.11.0"}, matmul_tflops=780.0,
               copy_gb_s=4300.0)
GRID = GRIDS["standard"]


def _result(method: str, *, checkpointing: bool = True, batch: int = 4, seq: int = 2048,
            arch=QWEN_05B) -> rows.Result:
    point = Point(arch, method, Shape(batch, seq), checkpointing)  # type: ignore[arg-type]
    return rows.Result(point, "ok", builder="built by a test", params=494_032_768,
                       trainable=1_000, step_s=[0.5, 0.25, 0.25], allocated_gb=20.5,
                       reserved_gb=24.25, resident_gb=1.0)


def test_the_columns_are_those_of_the_measurements_file() -> None:
    with MEASUREMENTS_CSV.open(newline="", encoding="utf-8") as f:
        assert tuple(next(csv.reader(f))) == rows.COLUMNS


@pytest.mark.parametrize("arch", [QWEN_05B, LLAMA_3B, LLAMA_8B])
def test_each_config_has_the_shapes_of_its_architecture_row(arch) -> None:
    cfg, a = arch.config_dict(), lookup(arch.model_id)
    assert cfg["model_type"] == a.model_type
    assert (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]) == (
        a.hidden_size, a.intermediate_size, a.num_layers)
    assert (cfg["num_attention_heads"], cfg["num_key_value_heads"]) == (a.num_heads,
                                                                       a.num_kv_heads)
    head_dim = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    assert (head_dim, cfg["vocab_size"], cfg["tie_word_embeddings"]) == (
        a.head_dim, a.vocab_size, a.tie_word_embeddings)


def test_the_tiny_config_is_not_a_catalog_model() -> None:
    assert TINY.config_dict()["num_hidden_layers"] == 2
    with pytest.raises(Exception, match="unknown model"):
        lookup(TINY.model_id)


def test_a_row_says_what_ran_in_the_calibration_s_terms() -> None:
    result = _result("qlora")
    row = rows.to_row(result, ENV, GRID, "gpuscout probe, test")
    assert row["tokens_per_s"] == "24576"  # 3 steps of 4 x 2048 tokens in 1.0 s
    assert row["measured_peak_gb"] == "24.250" and row["params_b"] == "0.494"
    assert row["naive_pred_gb"] == "0.25"  # 0.5 B/P for a 4-bit base
    assert rows.allocated_gb(row) == 20.5
    job = job_for_row(row, lookup(row["model"]))
    assert (job.method, job.quant, job.double_quant) == ("qlora", "nf4", True)
    assert (job.batch_size, job.seq_len, job.grad_accum) == (4, 2048, 1)
    assert (job.lora_rank, job.lora_targets, job.lora_dropout) == (16, "all-linear", 0.0)
    assert job.optimizer == "adamw-foreach" and not job.mixed_precision
    assert job.grad_checkpointing and job.flash_attention and job.fp32_loss
    assert not job.variable_lengths  # "packed" in the notes
    assert job.dtype == "bf16"


def test_a_full_row_without_checkpointing() -> None:
    row = rows.to_row(_result("full", checkpointing=False), ENV, GRID, "s")
    job = job_for_row(row, lookup(row["model"]))
    assert (job.method, job.quant, job.grad_checkpointing) == ("full", "none", False)
    assert row["lora_rank"] == "" and row["naive_pred_gb"] == "7.90"  # 16 B/P


def test_a_cpu_row_reports_no_memory() -> None:
    result = _result("lora")
    result.allocated_gb = result.reserved_gb = result.resident_gb = None
    cpu = rows.Env(device="cpu", cuda=False, memory_gib=None, driver=None, cuda_version=None,
                   versions={})
    row = rows.to_row(result, cpu, GRID, "s")
    assert row["measured_peak_gb"] == "" and row["memory_metric"].startswith("not reported")
    assert rows.allocated_gb(row) is None


def test_rows_round_trip_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    made = [rows.to_row(_result(m), ENV, GRID, "s") for m in ("full", "lora")]
    rows.write(path, made[:1])
    rows.write(path, made[1:], append=True)
    assert rows.read(path) == made
    assert path.read_bytes().count(b"\r\n") == 3  # header + 2 rows, the file's line ends


def test_the_device_name_resolves_to_the_catalog_gpu() -> None:
    got = {n: (g.canonical_id if (g := resolve_gpu(n)) else None)
           for n in ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "cpu")}
    assert got == {"NVIDIA H200": "h200-sxm-141gb", "NVIDIA H100 80GB HBM3": "h100-sxm-80gb",
                   "NVIDIA H100 PCIe": "h100-pcie-80gb", "cpu": None}


def test_the_comparison_is_the_estimate_of_the_row() -> None:
    row = rows.to_row(_result("lora", arch=LLAMA_3B), ENV, GRID, "s")
    [found] = compare_rows([row])
    arch = lookup("meta-llama/Llama-3.2-3B")
    resolved = resolve_gpu("NVIDIA H200")
    assert resolved is not None
    est = estimate(arch, job_for_row(row, arch), resolved)
    assert est.time is not None
    assert found.gpu_id == "h200-sxm-141gb" and found.skipped is None
    assert found.ours_reserved == est.memory.reserved_gb
    assert found.ours_allocated == est.memory.allocated_gb
    assert found.ours_tokens_s == est.time.tokens_per_s
    assert found.measured_reserved == 24.25 and found.measured_allocated == 20.5
    assert found.reserved_error == pytest.approx(100 * (est.memory.reserved_gb - 24.25) / 24.25)
    text = markdown([found])
    assert "| 0 | meta-llama/Llama-3.2-3B | lora | 4×2048 | yes | 24,576 |" in text
    assert "| reserved | 1 |" in text


def test_a_model_outside_the_catalog_is_reported_not_estimated() -> None:
    row = rows.to_row(_result("full", arch=TINY), ENV, GRID, "s")
    [found] = compare_rows([row])
    assert found.skipped == "model not in the architecture catalog"
    assert found.ours_reserved is None


def test_the_standard_grid_is_three_models_three_methods_three_shapes_two_settings() -> None:
    points = list(GRID.all_points())
    assert len(points) == 54 and len(set(points)) == 54
    assert [p.label for p in points[:2]] == ["Qwen/Qwen2.5-0.5B full 1x2048 noGC",
                                            "Qwen/Qwen2.5-0.5B full 4x2048 noGC"]
    assert GRID.only(["Llama-3.1-8B"], ["lora"]).archs == (LLAMA_8B,)


def test_the_command_without_pytorch_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from typer.testing import CliRunner

    from gpuscout.cli import probe as command
    from gpuscout.cli.app import app

    real = importlib.util.find_spec
    monkeypatch.setattr(command.importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    result = CliRunner().invoke(app, ["probe"])
    assert result.exit_code != 0
    assert str(result.exception) == ("gpuscout probe needs PyTorch, transformers and peft: "
                                     "pip install 'gpuscout[probe]'")

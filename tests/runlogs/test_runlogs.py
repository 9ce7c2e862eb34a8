"""The log readers on real published logs (tests/fixtures/runs/PROVENANCE.md): each figure
pinned against the file's own numbers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuscout.runlogs import read_log
from gpuscout.runlogs.detect import parse_bytes
from gpuscout.runlogs.reading import GIB_IN_GB, LogFormatError

RUNS = Path(__file__).parent.parent / "fixtures" / "runs"


def one(path: Path):
    readings = read_log(path)
    assert len(readings) == 1
    return readings[0]


def test_trainer_state_reads_the_train_summary_of_its_log_history() -> None:
    r = one(RUNS / "hf_trainer/lmy-matrix/trainer_state.json")
    assert (r.format, r.framework) == ("hf-trainer", None)
    assert r.runtime_s == 953.7893 and r.samples_per_s == 2.831
    assert r.samples == pytest.approx(2.831 * 953.7893)
    assert r.steps == 336 and r.batch_size == 1  # global_step, train_batch_size
    assert r.total_flos == 4.839211458625536e16
    # num_input_tokens_seen is 0 (the option was off): no token count of its own
    assert r.tokens is None and r.token_count is None


@pytest.mark.parametrize("name", ["train_results.json", "all_results.json"])
def test_the_results_files_say_what_the_summary_says(name: str) -> None:
    state = one(RUNS / "hf_trainer/lmy-matrix/trainer_state.json")
    r = one(RUNS / "hf_trainer/lmy-matrix" / name)
    for field in ("runtime_s", "samples_per_s", "samples", "steps", "total_flos"):
        assert getattr(r, field) == getattr(state, field), field


def test_a_run_folder_is_read_through_its_trainer_state() -> None:
    assert one(RUNS / "hf_trainer/law_llm").source == "trainer_state.json"
    r = one(RUNS / "hf_trainer/law_llm")
    assert r.steps == 750 and r.samples == pytest.approx(4.19 * 5728.3085)


def test_trainer_token_figures_are_read_as_padded_slots() -> None:
    state = json.loads((RUNS / "hf_trainer/lmy-matrix/trainer_state.json").read_text())
    state["num_input_tokens_seen"] = 1_071_683
    r = parse_bytes(json.dumps(state).encode(), "trainer_state.json")[0]
    assert r.tokens == 1_071_683 and r.token_count == "padded"
    assert r.tokens_per_s == pytest.approx(1_071_683 / 953.7893)
    results = {"train_runtime": 100.0, "train_tokens_per_second": 812.5}
    r = parse_bytes(json.dumps(results).encode(), "train_results.json")[0]
    assert (r.tokens_per_s_per_gpu, r.tokens_per_s, r.token_count) == (812.5, None, "padded")


def test_wandb_summary_with_top_level_trainer_keys_and_its_metadata() -> None:
    r = one(RUNS / "wandb/bllossom-8b/wandb-summary.json")
    assert r.format == "wandb" and r.gpu_name == "NVIDIA A100-SXM4-80GB"
    assert (r.runtime_s, r.samples_per_s, r.steps) == (1727.749, 0.465, 804)
    assert r.total_flos == 3.708559610295091e16
    assert r.finished_at == datetime.fromtimestamp(1722782778.1475317, UTC)
    assert (r.finished_at - r.started_at).total_seconds() == pytest.approx(1970.7941818)
    assert any("8 GPU(s)" in n for n in r.notes)


def test_wandb_summary_with_train_prefixed_keys() -> None:
    r = one(RUNS / "wandb/linchance/wandb-summary.json")
    assert (r.runtime_s, r.samples_per_s, r.steps) == (1333.6992, 3.211, 1070)
    assert r.total_flos == 1.2598419938947891e17 and r.gpu_name is None


def test_torchtune_rate_is_the_median_of_the_steps_after_the_first() -> None:
    r = one(RUNS / "torchtune/codellama-7b_log_1723844072.txt")
    assert (r.format, r.framework, r.token_count) == ("torchtune", "torchtune", "labels")
    # steps 2..12 sorted: 345.4, 402.3, 405.0, 408.7, 414.7, [417.5], 477.9, 543.0, ...
    assert r.tokens_per_s_per_gpu == pytest.approx(417.49818620797487)
    assert r.steps == 12 and r.peak_gb is None
    assert r.started_at == datetime(2024, 8, 16, 21, 34, 32, tzinfo=UTC)


def test_torchtune_jsonl_and_peak_memory_in_gib() -> None:
    lines = [json.dumps({"step": 1, "tokens_per_second_per_gpu": 57.8,
                         "peak_memory_alloc": 20.0, "peak_memory_reserved": 22.5}),
             json.dumps({"step": 2, "tokens_per_second_per_gpu": 405.0,
                         "peak_memory_alloc": 21.0, "peak_memory_reserved": 23.0})]
    r = parse_bytes("\n".join(lines).encode(), "log_1723844072.jsonl")[0]
    assert r.tokens_per_s_per_gpu == 405.0
    assert r.memory_metric == "reserved" and r.peak_gb == pytest.approx(23.0 * GIB_IN_GB)


def test_litgpt_before_token_counts_gives_samples() -> None:
    r = one(RUNS / "litgpt/phi-2-lora-tutorial.log")
    assert (r.format, r.framework, r.token_count) == ("litgpt", "litgpt", "samples")
    assert r.samples == 10 * 4 and r.runtime_s == 11.2  # iterations × micro_batch_size
    assert (r.batch_size, r.grad_accum, r.gpus, r.seq_len, r.steps) == (4, 2, 1, 512, 5)
    assert (r.peak_gb, r.memory_metric) == (13.9, "allocated")


def test_litgpt_report_counts_padded_slots() -> None:
    r = one(RUNS / "litgpt/pr1801-batch1-report.log")
    assert (r.tokens_per_s_per_gpu, r.token_count, r.runtime_s) == (60.85, "padded", 43.95)
    assert (r.peak_gb, r.memory_metric) == (10.45, "allocated")


@pytest.mark.parametrize(("name", "gpu", "runtime", "reserved_gib"), [
    ("llama3.1-8b-alpaca-t4.log", "Tesla T4", 462.7198, 7.922),
    ("llama3.3-70b-a100.log", "NVIDIA A100-SXM4-80GB", 1001.6837, 42.789),
    ("qwen3-14b-alpaca-t4.log", "Tesla T4", 822.5598, 12.949),
])
def test_unsloth_summary(name: str, gpu: str, runtime: float, reserved_gib: float) -> None:
    r = one(RUNS / "unsloth" / name)
    assert (r.format, r.framework, r.gpu_name) == ("unsloth", "unsloth", gpu)
    assert (r.gpus, r.batch_size, r.grad_accum, r.steps) == (1, 2, 4, 60)
    assert r.samples == 60 * 8 and r.runtime_s == runtime
    assert r.samples_per_s == pytest.approx(480 / runtime)
    assert r.memory_metric == "reserved"
    assert r.peak_gb == pytest.approx(reserved_gib * 2**30 / 1e9)


def test_runs_csv_rows() -> None:
    rows = read_log(RUNS / "csv/qwen-profile-a100.csv")
    assert [r.tokens_per_s for r in rows] == [4096, 1707, 3151, 3077]
    assert [r.peak_gb for r in rows] == [7.4, 20.1, 23.8, 36.6]
    assert {r.gpu_name for r in rows} == {"A100-SXM4-80GB"}
    assert rows[1].settings == {"framework": "hf", "gpus": "1", "batch_size": "1",
                                "seq_len": "256", "grad_accum": "8", "lora_rank": "64",
                                "lora_targets": "all-linear", "lora_dropout": "0.05",
                                "packed": "true"}
    assert rows[1].memory_metric == "device" and rows[1].source.endswith("line 3")


@pytest.mark.parametrize(("data", "name", "message"), [
    (b'{"log_history": [{"loss": 1.0, "step": 10}]}', "trainer_state.json",
     "the run did not finish"),
    (b"hello", "notes.txt", "not a training log gpuscout reads"),
    (b"model,gpu\nx,h100\n", "runs.csv", "needs the columns"),
    (b"model,method,gpu,tokens_per_s\nx,lora,h100,fast\n", "runs.csv", "is a number"),
    (b'{"_runtime": 3, "loss": 1}', "wandb-summary.json", "without the HF Trainer"),
])
def test_bad_logs_are_one_line_errors(data: bytes, name: str, message: str) -> None:
    with pytest.raises(LogFormatError, match=message) as err:
        parse_bytes(data, name)
    assert "\n" not in str(err.value)


def test_a_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(LogFormatError, match="no such file"):
        read_log(tmp_path / "nope.json")

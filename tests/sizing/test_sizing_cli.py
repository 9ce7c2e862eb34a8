"""`gpuscout estimate` end to end through a test Typer app."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpuscout.cli.estimate import estimate_command
from gpuscout.core.errors import UserInputError

app = typer.Typer()
app.command("estimate")(estimate_command)


@app.command("version")
def _version() -> None:  # a second command keeps "estimate" a subcommand
    pass


runner = CliRunner()


def run(*args: str) -> tuple[int, str, BaseException | None]:
    r = runner.invoke(app, ["estimate", *args])
    return r.exit_code, r.output, r.exception


def test_must_show_qlora_json_has_a_breakdown() -> None:
    code, out, _ = run("--model", "meta-llama/Llama-3.1-8B", "--method", "qlora",
                       "--batch-size", "1", "--seq-len", "2048", "--format", "json")
    assert code == 0
    data = json.loads(out)
    for key in ("peak_gb_per_gpu", "breakdown", "trainable_params", "total_params",
                "tokens_per_s", "flops_per_token", "hours", "notes"):
        assert key in data
    # PEFT's default adapter: r = 8 on q_proj and v_proj, 32 layers of 4096 -> 4096 and 1024
    assert data["trainable_params"] == 32 * 8 * ((4096 + 4096) + (4096 + 1024))
    assert abs(sum(data["breakdown"].values()) - data["peak_gb_per_gpu"]) < 0.01
    assert 10 < data["peak_gb_per_gpu"] < 30


def test_gpu_and_tokens_give_hours() -> None:
    code, out, _ = run("--model", "llama-3.1-8b", "--gpu", "h100-sxm-80gb", "--tokens", "1e9",
                       "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["tokens_per_s"] > 0 and data["hours"] > 0 and data["fits"]


def test_table_output() -> None:
    code, out, _ = run("--model", "Qwen2.5-7B", "--method", "full", "--gpu", "a100-sxm-80gb")
    assert code == 0 and "needs" in out and "tokens/s" in out


def test_config_and_params_paths(tmp_path: Path) -> None:
    cfg = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
           "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 128256, "tie_word_embeddings": True}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    code, out, _ = run("--config", str(p), "--format", "json")
    assert code == 0 and json.loads(out)["total_params"] > 1_235_000_000
    code, out, _ = run("--params", "7e9", "--format", "json")
    assert code == 0 and any("unknown model" in n for n in json.loads(out)["notes"])


def test_nonsense_input_is_a_user_error() -> None:
    for args in (["--model", "llama-3.1-8b", "--batch-size", "-1"],
                 ["--model", "llama-3.1-8b", "--lora-rank", "0"],
                 ["--model", "llama-3.1-8b", "--method", "full", "--quant", "nf4"],
                 ["--model", "llama-3.1-8b", "--gpus", "4"],
                 ["--model", "llama-3.1-8b", "--method", "sft"],
                 ["--model", "llama-3.1-8b", "--gpu", "h100"],
                 ["--model", "lama-3.1-8b-typo"],
                 []):
        code, _, exc = run(*args)
        assert code != 0 and isinstance(exc, UserInputError), args


def test_mean_seq_len_sets_the_clock_and_the_longest_sets_the_memory() -> None:
    base = ("--model", "meta-llama/Llama-3.1-8B", "--method", "lora", "--gpu", "l40s-48gb",
            "--batch-size", "4", "--format", "json")
    _, varied, _ = run(*base, "--seq-len", "768", "--mean-seq-len", "210")
    _, longest, _ = run(*base, "--seq-len", "768")
    _, short, _ = run(*base, "--seq-len", "210")
    varied_d, longest_d, short_d = (json.loads(x) for x in (varied, longest, short))
    assert varied_d["peak_gb_per_gpu"] == longest_d["peak_gb_per_gpu"]
    assert varied_d["tokens_per_s"] == short_d["tokens_per_s"]
    assert varied_d["tokens_per_s"] < longest_d["tokens_per_s"]  # short batches, same fixed costs
    assert any("mean sequence of 210 tokens" in n for n in varied_d["notes"])
    code, out, exc = run(*base, "--seq-len", "768", "--mean-seq-len", "900")
    assert code != 0 and isinstance(exc, UserInputError) and "--mean-seq-len" in str(exc)


def test_a_job_that_does_not_fit_names_the_card_in_the_units_of_the_estimate() -> None:
    # cards are sold in GiB and estimates printed in GB: a "24GB" L4 holds 25.8 GB, of which a
    # job may use 95 % (24.5 GB)
    code, out, _ = run("--model", "meta-llama/Llama-3.1-8B", "--method", "lora",
                       "--gpu", "l4-24gb", "--batch-size", "4", "--seq-len", "4096",
                       "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert not data["fits"]
    assert any(n.startswith("does not fit: needs") and "of 24.5 GB usable per GPU" in n
               and n.endswith("l4-24gb (24 GiB = 25.8 GB)") for n in data["notes"])


def test_must_show_qwen3_5_27b_offline() -> None:
    # no network (blocked in every test) and empty caches: the bundled catalog answers
    code, out, _ = run("--model", "Qwen/Qwen3.5-27B", "--gpu", "h100-sxm-80gb", "--format",
                       "json")
    data = json.loads(out)
    assert code == 0 and data["model"] == "Qwen/Qwen3.5-27B" and data["tokens_per_s"] > 0
    assert data["total_params"] - data["trainable_params"] == 26_895_998_464  # + LoRA
    assert any("Gated" in n or "linear-attention" in n for n in data["notes"])


@pytest.mark.parametrize(("args", "message"), [
    (("--params", "1e308"), "over the limit of 5e\\+12"),
    (("--config", "/dev/zero"), "not a regular file"),
    (("--model", "meta-lama/Llama-3.1-8B"), "did you mean: meta-llama/Llama-3.1-8B"),
])
def test_unbounded_or_misspelled_models_are_one_line_errors(args: tuple[str, ...],
                                                            message: str) -> None:
    code, _, err = run(*args)
    assert code != 0 and isinstance(err, UserInputError)
    assert re.search(message, str(err)) and "\n" not in str(err)


def test_must_show_fp8_with_tensor_parallelism_prints_tokens_per_s_and_memory_per_gpu() -> None:
    args = ("--model", "meta-llama/Llama-3.1-70B", "--method", "full", "--dtype", "fp8",
            "--tensor-parallel", "4", "--gpu", "h100-sxm-80gb", "--gpus", "8",
            "--no-correction")
    code, out, _ = run(*args)
    assert code == 0, out
    assert "GB per GPU" in out and "fp8 copies" in out
    assert re.search(r"[\d,]+ tokens/s", out)
    assert "tensor parallel 4" in out
    code, out, _ = run(*args, "--format", "json")
    data = json.loads(out)
    assert data["dtype"] == "fp8" and data["tokens_per_s"] > 0
    assert data["job"]["tensor_parallel"] == 4 and data["micro_batch_s"]["tensor_parallel"] > 0
    # an A100 has no FP8 tensor cores: refused with the reason, no traceback
    code, out, exc = run(*args[:-5], "--gpu", "a100-sxm-80gb", "--gpus", "8")
    assert isinstance(exc, UserInputError) and "FP8 tensor cores" in str(exc)

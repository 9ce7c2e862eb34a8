"""Architecture catalog: exact parameter counts, lookup, config.json and --params paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import (
    from_hf_config,
    from_param_count,
    load_architectures,
    load_hf_config,
    lookup,
)


def test_catalog_covers_at_least_80_models_each_with_a_config_source() -> None:
    archs = load_architectures()
    assert len(archs) >= 80
    for a in archs:
        assert a.source.startswith("https://huggingface.co/") and a.source.endswith(
            "config.json"), a.model_id
    families = {a.family for a in archs}
    for fam in ("llama-2", "llama-3.1", "llama-3.2", "codellama", "mistral", "mixtral",
                "qwen-1.5", "qwen-2", "qwen-2.5", "qwen-3", "gemma", "gemma-2", "gemma-3",
                "phi-2", "phi-3", "phi-3.5", "phi-4", "falcon", "tinyllama", "stablelm",
                "pythia", "gpt-2", "gpt-neox", "opt", "bloom", "t5", "mt0", "t0", "deepseek",
                "olmo", "yi", "starcoder2", "bert", "roberta"):
        assert fam in families, fam


@pytest.mark.parametrize("arch", [a for a in load_architectures() if a.published_params],
                         ids=lambda a: a.model_id)
def test_total_params_match_the_published_count(arch) -> None:  # type: ignore[no-untyped-def]
    assert arch.total_params == arch.published_params


def test_llama_2_7b_by_hand() -> None:
    a = lookup("meta-llama/Llama-2-7b-hf")
    h, f, v, layers = 4096, 11008, 32000, 32
    per_layer = 4 * h * h + 3 * h * f + 2 * h
    assert a.total_params == 2 * v * h + layers * per_layer + h == 6_738_415_616


def test_moe_active_params_count_only_routed_experts() -> None:
    a = lookup("mistralai/Mixtral-8x7B-v0.1")
    expert = 3 * 4096 * 14336
    assert a.total_params - a.active_params == 32 * 6 * expert


def test_lookup_is_case_insensitive_with_or_without_org_and_through_aliases() -> None:
    a = lookup("meta-llama/Llama-3.1-8B")
    assert lookup("LLAMA-3.1-8B") is a
    assert lookup("meta-llama/llama-3.1-8b-instruct") is a
    assert lookup("Qwen-7B-Chat").model_id == "Qwen/Qwen-7B"


def test_unknown_model_suggests_close_ids() -> None:
    with pytest.raises(UserInputError, match="did you mean.*llama-3.1-8b"):
        lookup("meta-llama/Llama-3.1-8")


def _llama_config() -> dict[str, object]:
    return {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "vocab_size": 128256, "tie_word_embeddings": False}


def test_hf_config_reproduces_the_catalog_row() -> None:
    assert from_hf_config(_llama_config()).total_params == 8_030_261_248


def test_config_file_is_read_offline(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(_llama_config()))
    assert load_hf_config(p).total_params == 8_030_261_248
    with pytest.raises(UserInputError, match="not found"):
        load_hf_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(UserInputError):
        load_hf_config(tmp_path / "bad.json")


def test_param_count_gives_a_generic_shape_of_about_that_size() -> None:
    for n in (1e9, 7e9, 70e9):
        a = from_param_count(n)
        assert abs(a.total_params - n) / n < 0.1
        assert "guessed" in a.notes
    with pytest.raises(UserInputError):
        from_param_count(-5)

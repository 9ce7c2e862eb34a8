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


# ---- rows added from 2024-2025 configs -------------------------------------------------

def test_catalog_has_at_least_150_rows_and_no_name_twice() -> None:
    archs = load_architectures()
    assert len(archs) >= 150
    names = [n.lower() for a in archs for n in (a.model_id, *a.aliases)]
    assert len(names) == len(set(names))
    families = {a.family for a in archs}
    for fam in ("falcon3", "smollm", "smollm2", "deepseek-r1-distill", "olmo-2", "internlm-2.5",
                "granite-3.1", "phi-1.5", "codestral"):
        assert fam in families, fam


def test_falcon3_7b_by_hand_matches_the_size_hugging_face_lists() -> None:
    a = lookup("tiiuae/Falcon3-7B-Instruct")
    h, f, v, layers, q, kv = 3072, 23040, 131072, 28, 12 * 256, 4 * 256
    per_layer = 2 * h * q + 2 * h * kv + 3 * h * f + 2 * h
    assert a.total_params == 2 * v * h + layers * per_layer + h == 7_455_550_464
    assert round(a.total_params / 1e9, 3) == 7.456  # "params": 7.456 in the OALL request file


def test_r1_distill_qwen_1_5b_is_qwen2_5_1_5b_with_an_untied_head() -> None:
    distill = lookup("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B")
    base = lookup("Qwen/Qwen2.5-1.5B")
    assert base.tie_word_embeddings and not distill.tie_word_embeddings
    assert distill.total_params - base.total_params == 151936 * 1536
    assert lookup("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B") is lookup("Qwen/Qwen2.5-7B")


def test_mistral_small_3_1_text_decoder_rounds_to_the_listed_23_6b() -> None:
    a = lookup("mistralai/Mistral-Small-3.1-24B-Instruct-2503")
    assert round(a.total_params / 1e8) == 236
    assert a.total_params == lookup("mistralai/Mistral-Small-24B-Base-2501").total_params


def test_olmo2_32b_counts_qk_norms_over_the_full_projections() -> None:
    a = lookup("allenai/OLMo-2-0325-32B")
    qk = 64 * (40 * 128 + 8 * 128)
    assert a.norm_params == (64 * 2 + 1) * 5120 + qk


def test_new_aliases_resolve_to_the_row_they_share_a_config_with() -> None:
    assert lookup("Qwen/Qwen2.5-Coder-14B").model_id == "Qwen/Qwen2.5-14B"
    assert lookup("01-ai/Yi-1.5-34B").model_id == "01-ai/Yi-1.5-34B-Chat"
    assert lookup("SmolLM2-135M-Instruct").model_id == "HuggingFaceTB/SmolLM2-135M"

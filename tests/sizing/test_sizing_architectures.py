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
    assert from_hf_config(_llama_config()).final_logit_softcapping == 0.0
    capped = {**_llama_config(), "model_type": "gemma2", "final_logit_softcapping": 30.0}
    assert from_hf_config(capped).final_logit_softcapping == 30.0


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

def test_catalog_has_at_least_200_rows_and_no_name_twice() -> None:
    archs = load_architectures()
    assert len(archs) >= 200
    names = [n.lower() for a in archs for n in (a.model_id, *a.aliases)]
    assert len(names) == len(set(names))
    families = {a.family for a in archs}
    for fam in ("falcon3", "smollm", "smollm2", "deepseek-r1-distill", "olmo-2", "internlm-2.5",
                "granite-3.1", "phi-1.5", "codestral", "olmoe", "command-r", "aya", "exaone",
                "exaone-3.5", "baichuan-2", "granite-3.0", "minitron", "mistral-large", "mt5",
                "xlm-roberta", "distilbert", "mpnet", "minilm", "qwen-3-coder"):
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


# ---- rows added from saved copies of 2023-2025 configs -------------------------------

def test_aya_expanse_8b_rounds_to_the_leaderboard_size() -> None:
    a = lookup("CohereForAI/aya-expanse-8b")
    assert a.norms_per_layer == 1 and a.tie_word_embeddings
    assert round(a.total_params / 1e9, 3) == 8.028  # "params": 8.028 in the request file


def test_vocab_32002_mistral_finetunes_round_to_the_leaderboard_size() -> None:
    a = lookup("NousResearch/Nous-Hermes-2-Mistral-7B-DPO")
    assert a is lookup("openchat/openchat_3.5")
    base = lookup("mistralai/Mistral-7B-v0.1")
    assert a.total_params - base.total_params == 2 * 2 * 4096  # two tokens, untied head
    assert round(a.total_params / 1e9, 3) == 7.242  # "params": 7.242 in the request file


def test_command_r_plus_counts_weight_only_qk_norms_over_heads() -> None:
    plus = lookup("CohereForAI/c4ai-command-r-plus")
    h, layers = 12288, 64
    qk = layers * (96 * 128 + 8 * 128)
    assert plus.norm_params == (layers * 1 + 1) * h + qk
    assert round(plus.total_params / 1e9) == 104


def test_olmoe_routes_8_of_64_experts_to_about_1_3b_active() -> None:
    a = lookup("allenai/OLMoE-1B-7B-0924")
    expert = 3 * 2048 * 1024
    assert a.total_params - a.active_params == 16 * (64 - 8) * expert
    assert round(a.total_params / 1e9, 2) == 6.92
    assert round(a.active_params / 1e8) == 13


def test_qwen3_coder_30b_equals_qwen3_30b_because_every_layer_is_moe() -> None:
    coder = lookup("Qwen/Qwen3-Coder-30B-A3B-Instruct")
    base = lookup("Qwen/Qwen3-30B-A3B")
    assert coder.intermediate_size != base.intermediate_size
    assert coder.total_params == base.total_params
    assert coder.active_params == base.active_params


def test_minitron_4b_width_keeps_a_q_projection_wider_than_hidden() -> None:
    a = lookup("nvidia/Llama-3.1-Minitron-4B-Width-Base")
    assert a.q_dim == 4096 > a.hidden_size == 3072
    h, q, kv, f, v = 3072, 4096, 1024, 9216, 128256
    per_layer = 2 * h * q + 2 * h * kv + 3 * h * f + 2 * h
    assert a.total_params == 2 * v * h + 32 * per_layer + h


def test_mpnet_counts_one_shared_relative_bias_table() -> None:
    a = lookup("sentence-transformers/all-mpnet-base-v2")
    assert a.other_params == 32 * 12 + 768 * 768 + 768  # relative bias + pooler


def test_new_aliases_share_their_row() -> None:
    assert lookup("Qwen/Qwen2.5-Math-7B").model_id == "Qwen/Qwen2.5-7B"
    assert lookup("Qwen/Qwen2.5-Math-1.5B-Instruct").model_id == "Qwen/Qwen2.5-1.5B"
    assert lookup("internlm/internlm2-7b").model_id == "internlm/internlm2_5-7b"
    assert lookup("google/mt5-base").model_id == "bigscience/mt0-base"
    assert lookup("ibm-granite/granite-3.0-2b-instruct").model_id == (
        "ibm-granite/granite-3.1-2b-instruct")

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


# ---- 2025-26 rows: MLA, MoE routing, Gated DeltaNet, gpt-oss, Llama 4 -------------------

def test_catalog_adds_the_2025_26_families_each_row_with_a_config_source() -> None:
    archs = load_architectures()
    assert len(archs) >= 231
    families = {a.family for a in archs}
    for fam in ("qwen-3.5", "qwen-3.5-moe", "qwen-3.6", "qwen-3-next", "olmo-3", "ministral-3",
                "gpt-oss", "deepseek-v3", "deepseek-v2", "kimi-k2", "glm-4.5", "glm-4-0414",
                "llama-4", "mimo", "minimax-m2", "moonlight", "qwen-3-vl", "qwen-3-2507"):
        assert fam in families, fam
    for a in archs[200:]:
        assert a.source.startswith("https://huggingface.co/") and "values read from" in a.notes


def test_deepseek_v2_lite_mla_and_moe_by_hand() -> None:
    a = lookup("deepseek-ai/DeepSeek-V2-Lite")
    h, heads, kv_lora, nope, rope, v = 2048, 16, 512, 128, 64, 128
    attn = (h * heads * (nope + rope)  # q (no q bottleneck)
            + h * (kv_lora + rope)  # kv_a: the latent and the shared rotary key
            + kv_lora * heads * (nope + v)  # kv_b: every head's key and value
            + heads * v * h)  # o
    expert, experts, shared = 3 * h * 1408, 64, 2 * 3 * h * 1408
    dense_mlp, router = 3 * h * 10944, h * experts
    norms = 2 * h + kv_lora  # input, post-attention, the latent's norm
    layers = 27
    moe_layer = attn + router + experts * expert + shared + norms
    total = (2 * 102400 * h + (attn + dense_mlp + norms) + (layers - 1) * moe_layer + h)
    assert a.total_params == total
    # time multiplies by the 6 routed experts a token takes; memory holds all 64
    assert a.active_params == total - (layers - 1) * (experts - 6) * expert


def test_moe_memory_holds_every_expert_and_time_only_the_routed_ones() -> None:
    from gpuscout.sizing.throughput import matmul_params

    a = lookup("deepseek-ai/DeepSeek-V2-Lite")
    expert_weights = 3 * 2048 * 1408
    # weights in memory: every expert of the 26 MoE layers
    assert a.linear_weight_params == sum(m.count * m.d_in * m.d_out
                                         for b in a.blocks() for m in b)
    routed = sum(m.count * m.d_in * m.d_out for b in a.blocks() for m in b
                 if m.group == "expert")
    assert routed == 26 * 64 * expert_weights
    # FLOPs per token: 6 routed experts (plus the 2 shared, which are not routed) and the head
    assert matmul_params(a) == (a.linear_weight_params - 26 * 58 * expert_weights
                                + 102400 * 2048)


def test_deepseek_v3_and_kimi_k2_totals_match_their_published_sizes() -> None:
    v3 = lookup("deepseek-ai/DeepSeek-V3")
    assert round(v3.total_params / 1e9) == 671  # without the 14 B MTP module
    assert round(v3.active_params / 1e9, 1) == 37.6  # "37B activated", embeddings counted
    k2 = lookup("moonshotai/Kimi-K2-Instruct")
    assert round(k2.total_params / 1e12, 2) == 1.03 and round(k2.active_params / 1e9) == 33


def test_qwen3_5_27b_gated_deltanet_layers_by_hand() -> None:
    a = lookup("Qwen/Qwen3.5-27B")
    h, kd, vd, nv, dv = 5120, 16 * 128, 48 * 128, 48, 128
    linear = (h * (2 * kd + 2 * vd) + h * 2 * nv + vd * h  # qkvz, ba, out
              + (2 * kd + vd) * 4 + 2 * nv + dv)  # conv, A_log and dt_bias, gated norm
    full = h * 24 * 256 * 2 + 2 * h * 4 * 256 + 24 * 256 * h + 2 * 256  # q+gate, k, v, o, qk
    mlp, norms = 3 * h * 17408, 2 * h
    total = 2 * 248320 * h + 48 * (linear + mlp + norms) + 16 * (full + mlp + norms) + h
    assert a.linear_attention_layers == 48
    assert a.total_params == total == 26_895_998_464
    assert [a.is_linear_attention(i) for i in range(4)] == [True, True, True, False]


def test_gpt_oss_20b_counts_biases_sinks_and_the_biased_router() -> None:
    a = lookup("openai/gpt-oss-20b")
    h, q, kv, f, e = 2880, 64 * 64, 8 * 64, 2880, 32
    attn = h * q + q + 2 * (h * kv + kv) + q * h + h
    moe = e * (2 * (h * f + f) + f * h + h) + h * e + e
    per_layer = attn + moe + 2 * h + 64  # norms and one sink per head
    assert a.total_params == 2 * 201088 * h + 24 * per_layer + h
    assert round(a.total_params / 1e9, 1) == 20.9  # "21B parameters"


def test_llama_4_maverick_interleaves_moe_and_dense_layers() -> None:
    a = lookup("meta-llama/Llama-4-Maverick-17B-128E-Instruct")
    assert [a.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert sum(a.is_moe_layer(i) for i in range(48)) == 24
    assert round(a.total_params / 1e9) == 401 and round(a.active_params / 1e9) == 17

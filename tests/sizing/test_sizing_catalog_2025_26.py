"""Catalog rows of 2025-26 models: the config fields they rest on (Llama 4's defaults,
GLM-4.x MoE blocks, EXAONE 4's norms)."""

from __future__ import annotations

from gpuscout.sizing.architectures import from_hf_config, lookup


def test_llama4_config_without_tie_is_untied_and_its_qk_norm_has_no_weight() -> None:
    maverick = {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "intermediate_size": 8192, "intermediate_size_mlp": 16384, "vocab_size": 202048,
        "num_local_experts": 128, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
        "use_qk_norm": True}}
    a = from_hf_config(maverick)
    assert not a.tie_word_embeddings and a.qk_norm == "none"
    assert a.total_params == lookup("meta-llama/Llama-4-Maverick-17B-128E-Instruct").total_params


def test_glm4_moe_blocks_have_two_norms_and_dense_glm4_four() -> None:
    base = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "vocab_size": 100, "intermediate_size": 128}
    for mt in ("glm4_moe", "glm4_moe_lite", "glm_moe_dsa"):
        assert from_hf_config({**base, "model_type": mt}).norms_per_layer == 2, mt
    assert from_hf_config({**base, "model_type": "glm4"}).norms_per_layer == 4
    assert lookup("zai-org/GLM-4.5").norms_per_layer == 2
    assert lookup("zai-org/GLM-4-9B-0414").norms_per_layer == 4


def test_exaone4_counts_one_head_wide_q_and_k_norms() -> None:
    cfg = {"model_type": "exaone4", "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "vocab_size": 100, "intermediate_size": 128, "tie_word_embeddings": True}
    a = from_hf_config(cfg)
    assert a.qk_norm == "head" and a.norm_params == (2 * 2 + 1) * 64 + 2 * 2 * 16

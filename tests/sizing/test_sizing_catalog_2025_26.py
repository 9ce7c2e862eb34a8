"""Catalog rows of 2025-26 models: totals against published sizes, the config fields they rest
on (latent attention for GLM-5, EXAONE 4's norms, Llama 4's defaults, GLM-4.x MoE blocks), and
`estimate --model <id>` answered offline from the bundled catalog."""

from __future__ import annotations

import json
import re

import pytest
import typer
from typer.testing import CliRunner

from gpuscout.cli.estimate import estimate_command
from gpuscout.sizing.architectures import from_hf_config, load_architectures, lookup

FIRST_NEW_ROW = 231  # rows before this one came with earlier rounds

# (model id, total B, active B or None, where the figure is published). Text-decoder rows of
# vision-language models leave the vision tower out, so a total that counts it sits a little
# above ours; 3 % covers that and the rounding of sizes written into model names.
PUBLISHED = [
    ("deepseek-ai/DeepSeek-R1", 671, 37, "model card: 671B total, 37B activated (without MTP)"),
    ("deepseek-ai/DeepSeek-V3.1", 671, 37, "model card table: 671B total, 37B activated"),
    ("deepseek-ai/DeepSeek-V2", 236, 21, "model card: 236B total, 21B activated"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109, 17,
     "model card: 17B activated, 109B total (vision tower included there)"),
    ("Qwen/Qwen3.5-122B-A10B", 122, 10, "model id: 122B total, A10B activated"),
    ("Qwen/Qwen3.6-35B-A3B", 35, None, "model id: 35B total"),
    ("Qwen/Qwen3-VL-235B-A22B-Instruct", 235, 22, "model id: 235B total, A22B activated"),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", 80, None, "model id: 80B total"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", 235, 22, "model card: 235B total, 22B activated"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", 30.5, 3.3, "model card: 30.5B total, 3.3B activated"),
    ("Qwen/Qwen3-4B-Instruct-2507", 4.0, None, "model card: 4.0B parameters"),
    ("Qwen/QwQ-32B", 32.5, None, "model card: 32.5B parameters"),
    ("zai-org/GLM-5", 744, 40, "THUDM/slime scripts/models/glm5-744B-A40B.sh (744B, A40B)"),
    ("zai-org/GLM-4.7-Flash", 30, None, "THUDM/slime scripts/models/glm4.7-30B-A3B.sh (30B)"),
    ("LGAI-EXAONE/EXAONE-4.0-32B", 32, None, "model id: 32B"),
    ("ByteDance-Seed/Seed-OSS-36B-Instruct", 36, None, "model card table: 36B parameters"),
    ("swiss-ai/Apertus-8B-Instruct-2509", 8, None, "model id: 8B"),
    ("HuggingFaceTB/SmolLM3-3B", 3, None, "model id: 3B"),
    ("baidu/ERNIE-4.5-0.3B-PT", 0.36, None, "model card: 0.36B parameters"),
    ("EleutherAI/gpt-j-6b", 6.053381344, None, "model card: 6,053,381,344 parameters"),
]


@pytest.mark.parametrize(("model_id", "total_b", "active_b", "source"), PUBLISHED,
                         ids=[p[0] for p in PUBLISHED])
def test_totals_are_within_3_percent_of_the_published_size(
        model_id: str, total_b: float, active_b: float | None, source: str) -> None:
    a = lookup(model_id)
    assert abs(a.total_params / 1e9 - total_b) <= 0.03 * total_b, source
    if active_b is not None:
        assert abs(a.active_params / 1e9 - active_b) <= 0.03 * active_b, source


def test_catalog_reaches_300_rows_each_new_row_naming_its_copy() -> None:
    archs = load_architectures()
    assert len(archs) >= 300
    for a in archs[FIRST_NEW_ROW:]:
        assert a.source.startswith("https://huggingface.co/") and a.source.endswith(
            "config.json"), a.model_id
        # a repository at a commit, or a page with its address
        assert "values read from" in a.notes and re.search(
            r"@[0-9a-f]{7,40}|https://", a.notes), a.model_id


def test_deepseek_r1_v3_1_and_v3_2_have_v3_s_shape() -> None:
    v3 = lookup("deepseek-ai/DeepSeek-V3")
    for mid in ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3.1",
                "deepseek-ai/DeepSeek-V3.2"):
        a = lookup(mid)
        assert a.model_id == mid  # rows of their own, not aliases of V3
        assert (a.total_params, a.active_params) == (v3.total_params, v3.active_params)


GLM5 = {"model_type": "glm_moe_dsa", "hidden_size": 6144, "num_hidden_layers": 78,
        "num_attention_heads": 64, "num_key_value_heads": 64, "head_dim": 64,
        "intermediate_size": 12288, "vocab_size": 154880, "q_lora_rank": 2048,
        "kv_lora_rank": 512, "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048, "first_k_dense_replace": 3, "tie_word_embeddings": False,
        "index_n_heads": 32, "index_head_dim": 128}


def test_glm5_reads_as_latent_attention_and_reproduces_its_row() -> None:
    a = from_hf_config(GLM5)
    row = lookup("zai-org/GLM-5")
    assert a.total_params == row.total_params and a.active_params == row.active_params
    h, heads, q_lora, kv_lora, nope, rope, v = 6144, 64, 2048, 512, 192, 64, 256
    attn = (h * q_lora + q_lora * heads * (nope + rope)  # q_a, q_b
            + h * (kv_lora + rope)  # kv_a: the latent and the shared rotary key
            + kv_lora * heads * (nope + v)  # kv_b
            + heads * v * h)  # o
    assert sum(m.params for m in a.blocks()[0] if m.group == "attn") == attn
    assert (a.dense_layers, a.num_experts, a.experts_per_token) == (3, 256, 8)


def test_exaone4_32b_by_hand_counts_per_head_qk_norms() -> None:
    a = lookup("LGAI-EXAONE/EXAONE-4.0-32B")
    h, q, kv, f, vocab, layers = 5120, 40 * 128, 8 * 128, 27392, 102400, 64
    per_layer = (h * q + 2 * h * kv + q * h  # q, k, v, o
                 + 3 * h * f  # SwiGLU
                 + 2 * h  # after attention and after the MLP
                 + 2 * 128)  # q and k norms over one head
    assert a.qk_norm == "head"
    assert a.total_params == 2 * vocab * h + layers * per_layer + h == 32_003_216_384


def test_llama4_config_without_tie_is_untied_and_its_qk_norm_has_no_weight() -> None:
    scout = {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "intermediate_size": 8192, "intermediate_size_mlp": 16384, "vocab_size": 202048,
        "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
        "use_qk_norm": True}}
    a = from_hf_config(scout)
    assert not a.tie_word_embeddings and a.qk_norm == "none"
    assert all(a.is_moe_layer(i) for i in range(48))
    assert a.total_params == lookup("meta-llama/Llama-4-Scout-17B-16E-Instruct").total_params


def test_llama4_maverick_config_reproduces_its_row() -> None:
    maverick = {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "intermediate_size": 8192, "intermediate_size_mlp": 16384, "vocab_size": 202048,
        "num_local_experts": 128, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
        "use_qk_norm": True}}
    a = from_hf_config(maverick)
    assert not a.tie_word_embeddings and a.qk_norm == "none"
    assert a.total_params == lookup("meta-llama/Llama-4-Maverick-17B-128E-Instruct").total_params


def test_exaone4_counts_one_head_wide_q_and_k_norms() -> None:
    cfg = {"model_type": "exaone4", "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "vocab_size": 100, "intermediate_size": 128, "tie_word_embeddings": True}
    a = from_hf_config(cfg)
    assert a.qk_norm == "head" and a.norm_params == (2 * 2 + 1) * 64 + 2 * 2 * 16


def test_glm4_moe_blocks_have_two_norms_and_dense_glm4_four() -> None:
    base = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "vocab_size": 100, "intermediate_size": 128}
    for mt in ("glm4_moe", "glm4_moe_lite", "glm_moe_dsa"):
        assert from_hf_config({**base, "model_type": mt}).norms_per_layer == 2, mt
    assert from_hf_config({**base, "model_type": "glm4"}).norms_per_layer == 4
    assert lookup("zai-org/GLM-4.5").norms_per_layer == 2
    assert lookup("zai-org/GLM-4-9B-0414").norms_per_layer == 4


app = typer.Typer()
app.command("estimate")(estimate_command)


@app.command("version")
def _version() -> None:  # a second command keeps "estimate" a subcommand
    pass


@pytest.mark.parametrize("model_id", [
    "deepseek-ai/DeepSeek-R1", "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "HuggingFaceTB/SmolLM3-3B", "Qwen/Qwen3.5-0.8B", "LGAI-EXAONE/EXAONE-4.0-1.2B",
    "ByteDance-Seed/Seed-OSS-36B-Instruct", "microsoft/Phi-4-reasoning"])
def test_estimate_answers_offline_from_the_catalog(model_id: str) -> None:
    # no network (blocked in every test) and empty caches: the bundled catalog answers
    r = CliRunner().invoke(app, ["estimate", "--model", model_id, "--gpu", "h100-sxm-80gb",
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["model"] == model_id and data["tokens_per_s"] > 0
    assert data["total_params"] - data["trainable_params"] == lookup(model_id).total_params

"""--model resolution: the Hub (injected fetcher), the local caches, the catalog; bounds."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import (
    MAX_CONFIG_BYTES,
    from_param_count,
    load_hf_config,
    lookup,
)
from gpuscout.sizing.hub import HubResponse, online_requested
from gpuscout.sizing.job import Job
from gpuscout.sizing.model_source import quantization_of, resolve_model

# Qwen/Qwen3-8B's config.json architecture fields (the catalog row's)
QWEN3_8B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
            "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
            "tie_word_embeddings": False, "attention_bias": False}


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    return {"GPUSCOUT_CACHE_DIR": str(tmp_path / "ours"), "HF_HUB_CACHE": str(tmp_path / "hf"),
            **more}


class _Hub:
    """A fetcher that records what it was asked and answers one canned response."""

    def __init__(self, response: HubResponse) -> None:
        self.response = response
        self.calls: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, headers: Mapping[str, str]) -> HubResponse:
        self.calls.append((url, dict(headers)))
        return self.response


def test_online_reads_the_hub_with_the_token_and_caches_revision_and_date(tmp_path: Path
                                                                           ) -> None:
    hub = _Hub(HubResponse(200, json.dumps(QWEN3_8B).encode(), revision="b968826d"))
    env = _env(tmp_path, HF_TOKEN="hf_x")
    found = resolve_model("someorg/qwen3-8b-finetune", online=True, env=env, fetcher=hub)
    assert hub.calls == [("https://huggingface.co/someorg/qwen3-8b-finetune/resolve/main/"
                          "config.json", {"User-Agent": "gpuscout",
                                          "Authorization": "Bearer hf_x"})]
    assert found.arch.total_params == lookup("Qwen/Qwen3-8B").total_params
    assert "commit b968826d" in found.arch.source and "read 20" in found.arch.source
    kept = json.loads((tmp_path / "ours" / "hub" / "models--someorg--qwen3-8b-finetune"
                       / "config.json").read_text())
    assert kept["revision"] == "b968826d" and kept["config"] == QWEN3_8B
    # offline afterwards: the kept copy, no fetch
    again = resolve_model("someorg/qwen3-8b-finetune", online=False, env=env,
                          fetcher=_Hub(HubResponse(500, b"")))
    assert again.arch.total_params == found.arch.total_params
    assert "(cached)" in again.notes[0]


@pytest.mark.parametrize(("status", "token", "message"), [
    (401, "", "gated or private: set HF_TOKEN"),
    (403, "hf_x", "HF_TOKEN was refused"),
    (404, "", "no such model on the Hugging Face Hub"),
    (502, "", "answered HTTP 502"),
])
def test_hub_errors_are_one_line(tmp_path: Path, status: int, token: str, message: str) -> None:
    env = _env(tmp_path, **({"HF_TOKEN": token} if token else {}))
    with pytest.raises(UserInputError, match=message) as err:
        resolve_model("org/model", online=True, env=env, fetcher=_Hub(HubResponse(status, b"")))
    assert "\n" not in str(err.value)


def test_unreachable_hub_and_bad_bodies_are_one_line(tmp_path: Path) -> None:
    def down(url: str, headers: Mapping[str, str]) -> HubResponse:
        raise OSError("no route")

    with pytest.raises(UserInputError, match="cannot reach the Hugging Face Hub"):
        resolve_model("org/model", online=True, env=_env(tmp_path), fetcher=down)
    with pytest.raises(UserInputError, match="not JSON"):
        resolve_model("org/model", online=True, env=_env(tmp_path),
                      fetcher=_Hub(HubResponse(200, b"<html>")))
    with pytest.raises(UserInputError, match="over"):
        resolve_model("org/model", online=True, env=_env(tmp_path),
                      fetcher=_Hub(HubResponse(200, b" " * (MAX_CONFIG_BYTES + 1))))


def test_online_is_opt_in_and_hf_hub_offline_wins() -> None:
    assert not online_requested(None, {})
    assert online_requested(None, {"GPUSCOUT_ONLINE": "1"})
    assert online_requested(True, {})
    assert not online_requested(True, {"HF_HUB_OFFLINE": "1"})
    assert not online_requested(False, {"GPUSCOUT_ONLINE": "1"})


def test_offline_reads_the_hf_cache_snapshot_refs_main_names(tmp_path: Path) -> None:
    repo = tmp_path / "hf" / "models--acme--tiny-qwen"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    for rev, layers in (("abc123", 36), ("old999", 2)):
        (repo / "snapshots" / rev).mkdir(parents=True)
        (repo / "snapshots" / rev / "config.json").write_text(
            json.dumps({**QWEN3_8B, "num_hidden_layers": layers}))
    os.utime(repo / "snapshots" / "old999" / "config.json", (2e9, 2e9))  # newer, not main
    found = resolve_model("acme/tiny-qwen", env=_env(tmp_path))
    assert found.arch.num_layers == 36 and "commit abc123" in found.notes[0]
    assert found.arch.model_id == "acme/tiny-qwen"


def test_offline_falls_back_to_the_catalog_and_a_copy_resolves_to_its_base(tmp_path: Path
                                                                          ) -> None:
    found = resolve_model("TheBloke/Llama-2-70B-GPTQ", env=_env(tmp_path))
    assert found.arch.model_id == "meta-llama/Llama-2-70b-hf" and found.quant == "gptq"
    assert resolve_model("unsloth/Llama-3.2-1B-bnb-4bit", env=_env(tmp_path)).quant == "nf4"
    assert resolve_model("meta-llama/Llama-3.1-8B", env=_env(tmp_path)).notes == []


def test_a_misspelled_org_is_an_error_with_the_ids_that_publish_the_name() -> None:
    with pytest.raises(UserInputError, match="'meta-lama' publishes no.*meta-llama/Llama-3.1-8B"):
        lookup("meta-lama/Llama-3.1-8B")
    with pytest.raises(UserInputError, match="did you mean.*qwen/qwen3-8b"):
        lookup("Qwen/Qwen3-8")
    assert lookup("Llama-3.1-8B").model_id == "meta-llama/Llama-3.1-8B"  # no org: the name


def test_quantization_config_sets_the_base_quantization() -> None:
    assert quantization_of({"quantization_config": {"quant_method": "gptq", "bits": 4}})[0] \
        == "gptq"
    assert quantization_of({"quantization_config": {"quant_method": "awq", "bits": 4}})[0] \
        == "gptq"
    assert quantization_of({"quantization_config": {"quant_method": "bitsandbytes",
                                                    "load_in_4bit": True}})[0] == "nf4"
    assert quantization_of({"quantization_config": {"quant_method": "bitsandbytes",
                                                    "load_in_8bit": True}})[0] == "int8"
    quant, note = quantization_of({"quantization_config": {"quant_method": "fp8"}})
    assert quant is None and note is not None and "dequantized" in note
    assert quantization_of(QWEN3_8B) == (None, None)


def test_a_quantized_config_sets_the_jobs_quant_unless_given(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**QWEN3_8B, "quantization_config": {"quant_method": "awq",
                                                                 "bits": 4}}))
    _, spec, notes = Job(config=p).resolve()
    assert spec.quant == "gptq" and any("AWQ 4-bit" in n for n in notes)
    assert Job(config=p, quant="none").resolve()[1].quant == "none"
    with pytest.raises(UserInputError, match="frozen"):
        Job(config=p, method="full").resolve()


def test_params_are_bounded_and_return_at_once() -> None:
    for n in (1e308, float("inf"), 6e12):
        with pytest.raises(UserInputError, match="limit|at least"):
            from_param_count(n)
    assert from_param_count(5e12).total_params < 1e13


def test_config_files_are_regular_and_capped(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="not a regular file"):
        load_hf_config(Path("/dev/zero"))
    with pytest.raises(UserInputError, match="not a regular file"):
        load_hf_config(tmp_path)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(UserInputError, match="bytes"):
        load_hf_config(big)
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({**QWEN3_8B, "num_hidden_layers": 10**9}))
    with pytest.raises(UserInputError, match="num_layers"):
        load_hf_config(huge)
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps({**QWEN3_8B, "hidden_size": 200_000, "intermediate_size": 10**6,
                                "num_hidden_layers": 4000}))
    with pytest.raises(UserInputError, match="over the limit"):
        load_hf_config(wide)


@pytest.mark.parametrize("bad", ["", "a/b/c", "./config.json", "x" * 300, "/etc/passwd"])
def test_what_is_not_a_model_id_is_refused(bad: str) -> None:
    with pytest.raises(UserInputError):
        resolve_model(bad, env={})

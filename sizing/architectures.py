"""Transformer architectures from published configs, and exact parameter counts derived from them.

The catalog is `sizing/data/architectures.csv`: one row per model, each with the URL of the
`config.json` it was read from. `lookup()` finds a row by id (case-insensitive, with or without
the org prefix, or through an alias); `from_hf_config()` reads a local Hugging Face config; and
`from_param_count()` builds a generic Llama-shaped stand-in when only the size is known.

Parameter counts are computed module by module (embeddings, attention with GQA/MQA, gated or
plain MLP, MoE experts and router, norms, untied LM head), so they match the published totals
exactly; `tests/sizing/test_sizing_architectures.py` pins them.
"""

from __future__ import annotations

import csv
import difflib
import json
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from gpuscout.core.errors import UserInputError

ARCHITECTURES_CSV = Path(__file__).parent / "data" / "architectures.csv"

ArchKind = Literal["decoder", "encoder", "encoder-decoder"]
LinearGroup = Literal["attn", "cross_attn", "mlp", "expert", "shared_expert", "router"]


class Linear(BaseModel):
    """One kind of linear layer in one transformer block; `count` copies of it per block."""

    model_config = ConfigDict(frozen=True)

    name: str  # q, k, v, qkv, o, gate, up, gate_up, down, router, shared_gate
    d_in: int
    d_out: int
    bias: bool
    group: LinearGroup
    count: int = 1  # experts per block for MoE expert matrices

    @property
    def params(self) -> int:
        return self.count * (self.d_in * self.d_out + (self.d_out if self.bias else 0))


class Architecture(BaseModel):
    """The shape of a transformer, as its config describes it. Sizes are element counts."""

    model_config = ConfigDict(frozen=True)
    _blocks: list[list[Linear]] | None = PrivateAttr(default=None)
    # sums over the blocks, kept with them: sizing reads them for every machine shape
    _sums: dict[str, int] = PrivateAttr(default_factory=dict)
    _block_kinds: list[int] | None = PrivateAttr(default=None)

    model_id: str
    aliases: tuple[str, ...] = ()
    family: str
    model_type: str
    arch: ArchKind = "decoder"
    num_layers: int  # encoder layers for encoder-decoder models
    num_decoder_layers: int = 0
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool
    gated_mlp: bool  # SwiGLU/GeGLU: gate, up and down matrices instead of two
    fused_qkv: bool = False  # one qkv matrix (GPT-2 c_attn, BLOOM/NeoX query_key_value, ...)
    fused_gate_up: bool = False  # one gate_up matrix (Phi-3, ChatGLM, OLMo-1)
    linear_bias: Literal["none", "qkv", "all"] = "none"
    lm_head_bias: bool = False
    norm: Literal["rms", "layer", "none"] = "rms"
    norms_per_layer: int = 2
    qk_norm: Literal["none", "head", "full"] = "none"
    learned_positions: int = 0
    token_type_vocab: int = 0
    embedding_norm: bool = False
    pooler: bool = False
    relative_attention_buckets: int = 0
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    shared_expert_gate: bool = False
    dense_layers: int = 0  # leading layers with a dense MLP in an MoE model (DeepSeek-MoE)
    # Gemma-2: logits / cap, tanh, × cap before the loss (config final_logit_softcapping)
    final_logit_softcapping: float = 0.0
    published_params: int | None = None
    source: str = ""
    notes: str = ""

    # ---- shapes -------------------------------------------------------------------------

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def total_layers(self) -> int:
        return self.num_layers + self.num_decoder_layers

    def _attention(self, group: LinearGroup) -> list[Linear]:
        h, qb = self.hidden_size, self.linear_bias in ("qkv", "all")
        out = [Linear(name="o", d_in=self.q_dim, d_out=h, bias=self.linear_bias == "all",
                      group=group)]
        if self.fused_qkv:
            return [Linear(name="qkv", d_in=h, d_out=self.q_dim + 2 * self.kv_dim, bias=qb,
                           group=group), *out]
        return [Linear(name="q", d_in=h, d_out=self.q_dim, bias=qb, group=group),
                Linear(name="k", d_in=h, d_out=self.kv_dim, bias=qb, group=group),
                Linear(name="v", d_in=h, d_out=self.kv_dim, bias=qb, group=group), *out]

    def _mlp(self, f: int, group: LinearGroup, count: int = 1) -> list[Linear]:
        h, b = self.hidden_size, self.linear_bias == "all"
        down = Linear(name="down", d_in=f, d_out=h, bias=b, group=group, count=count)
        if not self.gated_mlp:
            return [Linear(name="up", d_in=h, d_out=f, bias=b, group=group, count=count), down]
        if self.fused_gate_up:
            return [Linear(name="gate_up", d_in=h, d_out=2 * f, bias=b, group=group,
                           count=count), down]
        return [Linear(name="gate", d_in=h, d_out=f, bias=b, group=group, count=count),
                Linear(name="up", d_in=h, d_out=f, bias=b, group=group, count=count), down]

    def _moe(self) -> list[Linear]:
        h = self.hidden_size
        mods = [Linear(name="router", d_in=h, d_out=self.num_experts, bias=False,
                       group="router"),
                *self._mlp(self.moe_intermediate_size, "expert", self.num_experts)]
        if self.shared_expert_intermediate_size:
            mods += self._mlp(self.shared_expert_intermediate_size, "shared_expert")
        if self.shared_expert_gate:
            mods.append(Linear(name="shared_gate", d_in=h, d_out=1, bias=False,
                               group="router"))
        return mods

    def block_linears(self, layer: int, decoder: bool = False) -> list[Linear]:
        """The linear layers of block `layer` (0-based within its stack)."""
        mods = self._attention("attn")
        if decoder and self.arch == "encoder-decoder":
            mods += self._attention("cross_attn")
        if self.is_moe and layer >= self.dense_layers:
            return mods + self._moe()
        return mods + self._mlp(self.intermediate_size, "mlp")

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Architecture:
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy._blocks = None  # the shape may have changed: rebuild the blocks
            copy._sums = {}
            copy._block_kinds = None
        return copy

    def blocks(self) -> list[list[Linear]]:
        """Every block's linears: encoder (or decoder-only) blocks, then decoder blocks.

        Built once per architecture (callers only read it): the sizing of one job walks it
        many times, and a recommendation sizes one job per machine shape.
        """
        if self._blocks is None:
            out = [self.block_linears(i) for i in range(self.num_layers)]
            out += [self.block_linears(i, decoder=True) for i in range(self.num_decoder_layers)]
            self._blocks = out
        return self._blocks

    def block_kinds(self) -> list[int]:
        """For each block, the index of the first block equal to it: most models repeat one
        block, so what is computed per block is computed once per kind."""
        if self._block_kinds is None:
            first: dict[tuple[Linear, ...], int] = {}
            self._block_kinds = [first.setdefault(tuple(block), i)
                                 for i, block in enumerate(self.blocks())]
        return self._block_kinds

    # ---- parameter counts ---------------------------------------------------------------

    @property
    def _norm_size(self) -> int:
        return {"rms": 1, "layer": 2, "none": 0}[self.norm] * self.hidden_size

    @property
    def linear_params(self) -> int:
        """Weights and biases of every linear layer inside the blocks (what 4-bit quantizes)."""
        if "linear" not in self._sums:
            self._sums["linear"] = sum(m.params for block in self.blocks() for m in block)
        return self._sums["linear"]

    @property
    def linear_weight_params(self) -> int:
        if "weights" not in self._sums:
            self._sums["weights"] = sum(m.count * m.d_in * m.d_out
                                        for block in self.blocks() for m in block)
        return self._sums["weights"]

    @property
    def embedding_params(self) -> int:
        h = self.hidden_size
        return (self.vocab_size + self.learned_positions + self.token_type_vocab) * h

    @property
    def lm_head_params(self) -> int:
        """Untied output projection (0 when tied, or for encoder-only models)."""
        if self.arch == "encoder" or self.tie_word_embeddings:
            return self.vocab_size if self.lm_head_bias else 0
        return self.vocab_size * self.hidden_size + (self.vocab_size if self.lm_head_bias else 0)

    @property
    def norm_params(self) -> int:
        per_layer = self.norms_per_layer * self.num_layers
        per_layer += (self.norms_per_layer + 1) * self.num_decoder_layers  # + cross-attn norm
        finals = {"decoder": 1, "encoder": 0, "encoder-decoder": 2}[self.arch]
        n = (per_layer + finals + (1 if self.embedding_norm else 0)) * self._norm_size
        qk = {"none": 0, "head": 2 * self.head_dim, "full": self.q_dim + self.kv_dim}
        return n + qk[self.qk_norm] * self.total_layers

    @property
    def other_params(self) -> int:
        """T5 relative-position biases and the BERT pooler."""
        rel = self.relative_attention_buckets * self.num_heads * (
            2 if self.arch == "encoder-decoder" else 1)
        pool = self.hidden_size * self.hidden_size + self.hidden_size if self.pooler else 0
        return rel + pool

    @property
    def total_params(self) -> int:
        return (self.embedding_params + self.linear_params + self.norm_params
                + self.lm_head_params + self.other_params)

    @property
    def non_linear_params(self) -> int:
        """Everything 4-bit/8-bit quantization leaves in 16-bit: embeddings, head, norms."""
        return self.total_params - self.linear_weight_params

    @property
    def output_projection_params(self) -> int:
        """The vocabulary projection's weight, tied or not (it costs compute either way)."""
        return 0 if self.arch == "encoder" else self.vocab_size * self.hidden_size

    @property
    def active_params(self) -> int:
        """Parameters one token passes through: MoE counts `experts_per_token` experts."""
        if not self.is_moe:
            return self.total_params
        inactive = 0
        for block in self.blocks():
            for m in block:
                if m.group == "expert":
                    inactive += m.params // m.count * (m.count - self.experts_per_token)
        return self.total_params - inactive

    @property
    def largest_block_params(self) -> int:
        """The biggest single block (the unit FSDP/ZeRO-3 gathers), or embedding if larger."""
        biggest = max(sum(m.params for m in block) for block in self.blocks())
        return max(biggest, self.vocab_size * self.hidden_size)


# ---- loading -----------------------------------------------------------------------------

_BOOL = {"true": True, "false": False, "yes": True, "no": False, "1": True, "0": False}


def _row_to_arch(r: dict[str, str]) -> Architecture:
    ints = ("num_layers", "num_decoder_layers", "hidden_size", "intermediate_size", "num_heads",
            "num_kv_heads", "head_dim", "vocab_size", "norms_per_layer", "learned_positions",
            "token_type_vocab", "relative_attention_buckets", "num_experts",
            "experts_per_token", "moe_intermediate_size", "shared_expert_intermediate_size",
            "dense_layers")
    bools = ("tie_word_embeddings", "gated_mlp", "fused_qkv", "fused_gate_up", "lm_head_bias",
             "embedding_norm", "pooler", "shared_expert_gate")
    data: dict[str, Any] = {k: v for k, v in r.items() if k not in ints + bools}
    for k in ints:
        data[k] = int(r[k]) if r[k].strip() else 0
    for k in bools:
        data[k] = _BOOL[r[k].strip().lower() or "false"]
    data["aliases"] = tuple(a.strip() for a in r["aliases"].split(";") if a.strip())
    data["published_params"] = int(r["published_params"]) if r["published_params"] else None
    data["final_logit_softcapping"] = float(r.get("final_logit_softcapping") or 0.0)
    return Architecture(**data)


@cache
def load_architectures(path: Path = ARCHITECTURES_CSV) -> tuple[Architecture, ...]:
    with path.open(newline="", encoding="utf-8") as f:
        return tuple(_row_to_arch(r) for r in csv.DictReader(f))


def _keys(model_id: str) -> list[str]:
    low = model_id.strip().lower()
    return [low, low.split("/", 1)[1]] if "/" in low else [low]


@cache
def _index(path: Path = ARCHITECTURES_CSV) -> dict[str, Architecture]:
    idx: dict[str, Architecture] = {}
    for a in load_architectures(path):
        for name in (a.model_id, *a.aliases):
            for k in _keys(name):
                idx.setdefault(k, a)
    return idx


def lookup(model_id: str, path: Path = ARCHITECTURES_CSV) -> Architecture:
    """The catalog row for `model_id`, matched case-insensitively with or without the org."""
    idx = _index(path)
    for k in _keys(model_id):
        if k in idx:
            return idx[k]
    close = difflib.get_close_matches(_keys(model_id)[-1], list(idx), n=5, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    raise UserInputError(f"unknown model {model_id!r}{hint} (or pass --config PATH to a "
                         f"config.json, or --params N)")


# ---- other sources -----------------------------------------------------------------------

def _first(cfg: dict[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


_FUSED_QKV = {"gpt2", "gpt_neox", "bloom", "falcon", "gpt_bigcode", "phi3", "qwen", "chatglm",
              "olmo", "gptj"}
_FUSED_GATE_UP = {"phi3", "chatglm", "olmo"}
_LAYERNORM = {"gpt2", "gpt_neox", "bloom", "falcon", "gpt_bigcode", "opt", "phi", "stablelm",
              "starcoder2", "bert", "roberta", "gptj", "phimoe"}
_PLAIN_MLP = {"gpt2", "gpt_neox", "bloom", "falcon", "gpt_bigcode", "opt", "phi", "starcoder2",
              "bert", "roberta", "gptj"}
_ALL_BIAS = {"gpt2", "gpt_neox", "bloom", "gpt_bigcode", "opt", "phi", "bert", "roberta",
             "starcoder2"}
_QKV_BIAS = {"qwen2", "qwen2_moe", "qwen", "chatglm"}


def from_hf_config(cfg: dict[str, Any], name: str = "config.json") -> Architecture:
    """Build an architecture from a Hugging Face `config.json` dict (read offline)."""
    if "text_config" in cfg and "hidden_size" not in cfg:
        cfg = {**cfg["text_config"], "model_type": cfg.get("model_type", "")}
    mt = str(cfg.get("model_type", "")).lower()
    try:
        h = int(_first(cfg, "hidden_size", "n_embd", "d_model"))
        layers = int(_first(cfg, "num_hidden_layers", "n_layer", "num_layers"))
        heads = int(_first(cfg, "num_attention_heads", "n_head", "num_heads"))
        vocab = int(_first(cfg, "vocab_size", "padded_vocab_size"))
    except (TypeError, ValueError) as e:
        raise UserInputError(f"{name}: needs hidden_size, num_hidden_layers, "
                             f"num_attention_heads and vocab_size") from e
    kv = int(_first(cfg, "num_key_value_heads", "multi_query_group_num", "num_kv_heads",
                    default=1 if cfg.get("multi_query") else heads))
    head_dim = int(_first(cfg, "head_dim", "d_kv", "kv_channels", default=h // heads))
    inter = _first(cfg, "intermediate_size", "ffn_hidden_size", "n_inner", "d_ff", "ffn_dim")
    inter = int(inter) if inter else 4 * h
    if mt == "qwen":  # Qwen-1 stores the two gated halves together
        inter //= 2
    act = str(_first(cfg, "hidden_act", "activation_function", "feed_forward_proj",
                     default="silu"))
    gated = mt not in _PLAIN_MLP and ("gated" in act or mt != "t5")
    enc_dec = bool(cfg.get("is_encoder_decoder"))
    encoder_only = mt in ("bert", "roberta", "deberta", "deberta-v2", "distilbert")
    tie = bool(cfg.get("tie_word_embeddings", mt not in ("llama", "mistral", "qwen")))
    experts = int(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts",
                         default=0))
    return Architecture(
        model_id=str(cfg.get("_name_or_path") or name), family=mt or "unknown",
        model_type=mt or "unknown",
        arch="encoder-decoder" if enc_dec else ("encoder" if encoder_only else "decoder"),
        num_layers=layers,
        num_decoder_layers=int(_first(cfg, "num_decoder_layers", default=layers))
        if enc_dec else 0,
        hidden_size=h, intermediate_size=inter, num_heads=heads, num_kv_heads=kv,
        head_dim=head_dim, vocab_size=vocab, tie_word_embeddings=tie, gated_mlp=gated,
        fused_qkv=mt in _FUSED_QKV, fused_gate_up=mt in _FUSED_GATE_UP,
        linear_bias="all" if mt in _ALL_BIAS or cfg.get("attention_bias") and mt == "phimoe"
        else ("qkv" if mt in _QKV_BIAS or cfg.get("attention_bias")
              or cfg.get("use_qkv_bias") or cfg.get("add_qkv_bias") else "none"),
        norm="layer" if mt in _LAYERNORM else "rms",
        norms_per_layer=4 if mt.startswith(("gemma2", "gemma3")) else 2,
        qk_norm="head" if mt.startswith(("qwen3", "gemma3")) else "none",
        learned_positions=int(cfg.get("max_position_embeddings", 0))
        if mt in ("gpt2", "gpt_bigcode", "bert", "roberta") else 0,
        num_experts=experts,
        experts_per_token=int(_first(cfg, "num_experts_per_tok", default=0)) if experts else 0,
        moe_intermediate_size=int(_first(cfg, "moe_intermediate_size", default=inter))
        if experts else 0,
        shared_expert_intermediate_size=int(_first(cfg, "shared_expert_intermediate_size",
                                                   default=0)),
        shared_expert_gate=mt == "qwen2_moe",
        final_logit_softcapping=float(cfg.get("final_logit_softcapping") or 0.0),
        source=f"local file {name}",
        notes="read from a local config.json; biases and norms inferred from model_type",
    )


def load_hf_config(path: Path) -> Architecture:
    """Read a local `config.json` (no network)."""
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise UserInputError(f"config file not found: {path}") from e
    except (OSError, json.JSONDecodeError) as e:
        raise UserInputError(f"cannot read {path} as JSON: {e}") from e
    if not isinstance(cfg, dict):
        raise UserInputError(f"{path}: expected a JSON object")
    return from_hf_config(cfg, name=str(path))


def from_param_count(n_params: float) -> Architecture:
    """A Llama-shaped stand-in of about `n_params` parameters, for models we have no config of.

    Shape rules follow the Llama/Mistral family: head_dim 128, SwiGLU width 3.5·h, GQA with 8
    KV heads, 32k vocabulary, depth ≈ h/128 (Llama-2-7B: h 4096, 32 layers). Solving
    N ≈ L·(12.5·h²) + 2·V·h for h gives the width.
    """
    if not math.isfinite(n_params) or n_params < 1e6:
        raise UserInputError(f"--params must be at least 1e6, got {n_params:g}")
    vocab = 32000
    # params per layer ≈ h²·(2 + 2·(8·128)/h + 3·3.5) ≈ 12.5·h² and L = h/128
    h = 512
    while True:
        nxt = h + 128
        layers = max(2, nxt // 128)
        if layers * 12.5 * nxt * nxt + 2 * vocab * nxt > n_params:
            break
        h = nxt
    layers = max(2, round((n_params - 2 * vocab * h) / (12.5 * h * h)))
    heads = max(1, h // 128)
    return Architecture(
        model_id=f"generic-{n_params / 1e9:.3g}B", family="generic", model_type="llama",
        num_layers=layers, hidden_size=h, intermediate_size=int(3.5 * h) // 128 * 128,
        num_heads=heads, num_kv_heads=min(8, heads), head_dim=h // heads, vocab_size=vocab,
        tie_word_embeddings=False, gated_mlp=True,
        source="generic Llama-shaped stand-in (no config)",
        notes="shape guessed from the parameter count; activations and logits are rough",
    )

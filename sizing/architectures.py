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
import re
import stat
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator

from gpuscout.core.errors import UserInputError

ARCHITECTURES_CSV = Path(__file__).parent / "data" / "architectures.csv"

ArchKind = Literal["decoder", "encoder", "encoder-decoder"]

# The largest model sized: 10 trillion parameters (the largest published checkpoints hold
# about 1-2 trillion). A count past it is a typo, and sizing it would take unbounded time.
MAX_PARAMS = 1e13
# --params: the stand-in's rounded shape lands within about 10 % of the count asked for
MAX_STAND_IN_PARAMS = MAX_PARAMS / 2
# Per-field ceilings checked before any block is built (largest published values are far
# below: 126 layers, hidden 18,432, vocabulary 262,144, 384 experts).
SHAPE_LIMITS = {
    "num_layers": 4096, "num_decoder_layers": 4096, "hidden_size": 1 << 18,
    "intermediate_size": 1 << 20, "num_heads": 8192, "num_kv_heads": 8192, "head_dim": 8192,
    "vocab_size": 1 << 24, "num_experts": 1 << 16, "experts_per_token": 1 << 16,
    "moe_intermediate_size": 1 << 20, "shared_expert_intermediate_size": 1 << 20,
    "learned_positions": 1 << 24, "dense_layers": 4096, "moe_layer_step": 4096,
    "q_lora_rank": 1 << 18, "kv_lora_rank": 1 << 18, "v_head_dim": 8192,
    "linear_num_key_heads": 8192, "linear_num_value_heads": 8192, "linear_key_head_dim": 8192,
    "linear_value_head_dim": 8192, "linear_conv_kernel": 1024, "full_attention_interval": 4096,
}
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
    # after the dense layers, every moe_layer_step-th layer is MoE and the others dense
    # (Llama 4 Maverick: 2; transformers' moe_layers = range(step - 1, layers, step))
    moe_layer_step: int = 1
    router_bias: bool = False  # gpt-oss: the router has a bias
    attention_sinks: bool = False  # gpt-oss: one learned sink logit per head per layer
    # Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): queries through a q_lora_rank
    # bottleneck (0: one full q projection), keys and values decompressed from a kv_lora_rank
    # latent plus a shared rotary key of qk_rope_head_dim; head_dim is the query/key head
    # (nope + rope) and v_head_dim the value head.
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # Qwen3-Next / Qwen3.5: q_proj also yields a sigmoid gate on the attention output
    attn_output_gate: bool = False
    # Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): every full_attention_interval-th layer is
    # softmax attention, the others linear attention with these heads and a causal conv
    full_attention_interval: int = 0
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel: int = 0
    # Gemma-2: logits / cap, tanh, × cap before the loss (config final_logit_softcapping)
    final_logit_softcapping: float = 0.0
    published_params: int | None = None
    source: str = ""
    notes: str = ""

    @model_validator(mode="after")
    def _bounded(self) -> Architecture:
        for name, cap in SHAPE_LIMITS.items():
            value = getattr(self, name)
            if not 0 <= value <= cap:
                raise UserInputError(f"{self.model_id}: {name} {value} is outside 0..{cap:,}")
        if self.total_params > MAX_PARAMS:
            raise UserInputError(f"{self.model_id}: {self.total_params:.3g} parameters is over "
                                 f"the limit of {MAX_PARAMS:.0e}")
        return self

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
        if self.kv_lora_rank:
            return self._latent_attention(group)
        out = [Linear(name="o", d_in=self.q_dim, d_out=h, bias=self.linear_bias == "all",
                      group=group)]
        q_out = self.q_dim * (2 if self.attn_output_gate else 1)
        if self.fused_qkv:
            return [Linear(name="qkv", d_in=h, d_out=q_out + 2 * self.kv_dim, bias=qb,
                           group=group), *out]
        return [Linear(name="q", d_in=h, d_out=q_out, bias=qb, group=group),
                Linear(name="k", d_in=h, d_out=self.kv_dim, bias=qb, group=group),
                Linear(name="v", d_in=h, d_out=self.kv_dim, bias=qb, group=group), *out]

    def _latent_attention(self, group: LinearGroup) -> list[Linear]:
        """MLA: q (or q_a → q_b), kv_a to the latent and the rotary key, kv_b back to every
        head's key and value, o from the value heads."""
        h, heads, v = self.hidden_size, self.num_heads, self.v_head_dim
        nope = self.head_dim - self.qk_rope_head_dim
        if self.q_lora_rank:
            q = [Linear(name="q_a", d_in=h, d_out=self.q_lora_rank, bias=False, group=group),
                 Linear(name="q_b", d_in=self.q_lora_rank, d_out=self.q_dim, bias=False,
                        group=group)]
        else:
            q = [Linear(name="q", d_in=h, d_out=self.q_dim, bias=False, group=group)]
        return [*q,
                Linear(name="kv_a", d_in=h, d_out=self.kv_lora_rank + self.qk_rope_head_dim,
                       bias=False, group=group),
                Linear(name="kv_b", d_in=self.kv_lora_rank, d_out=heads * (nope + v),
                       bias=False, group=group),
                Linear(name="o", d_in=heads * v, d_out=h, bias=False, group=group)]

    def _linear_attention(self) -> list[Linear]:
        """Gated DeltaNet: one projection to q, k, v and the output gate z, one to the
        per-head beta and decay, and the output projection (conv and norms: other_params)."""
        h = self.hidden_size
        kd = self.linear_num_key_heads * self.linear_key_head_dim
        vd = self.linear_num_value_heads * self.linear_value_head_dim
        return [Linear(name="qkvz", d_in=h, d_out=2 * kd + 2 * vd, bias=False, group="attn"),
                Linear(name="ba", d_in=h, d_out=2 * self.linear_num_value_heads, bias=False,
                       group="attn"),
                Linear(name="o", d_in=vd, d_out=h, bias=False, group="attn")]

    def is_linear_attention(self, layer: int) -> bool:
        """Whether decoder layer `layer` mixes tokens with linear attention."""
        k = self.full_attention_interval
        return k > 0 and (layer + 1) % k != 0

    def is_moe_layer(self, layer: int) -> bool:
        step = self.moe_layer_step
        return (self.is_moe and layer >= self.dense_layers
                and (layer - self.dense_layers) % step == step - 1)

    @property
    def linear_attention_layers(self) -> int:
        return sum(self.is_linear_attention(i) for i in range(self.num_layers))

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
        mods = [Linear(name="router", d_in=h, d_out=self.num_experts, bias=self.router_bias,
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
        if not decoder and self.is_linear_attention(layer):
            mods = self._linear_attention()
        else:
            mods = self._attention("attn")
        if decoder and self.arch == "encoder-decoder":
            mods += self._attention("cross_attn")
        if self.is_moe_layer(layer):
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
        softmax_layers = self.total_layers - self.linear_attention_layers
        latent = (self.q_lora_rank + self.kv_lora_rank) * self.total_layers
        return n + qk[self.qk_norm] * softmax_layers + latent

    @property
    def other_params(self) -> int:
        """T5 relative-position biases and the BERT pooler."""
        rel = self.relative_attention_buckets * self.num_heads * (
            2 if self.arch == "encoder-decoder" else 1)
        pool = self.hidden_size * self.hidden_size + self.hidden_size if self.pooler else 0
        sinks = self.num_heads * self.total_layers if self.attention_sinks else 0
        return rel + pool + sinks + self.linear_attention_layers * self._delta_net_extras

    @property
    def _delta_net_extras(self) -> int:
        """Per linear-attention layer: the depthwise causal conv over q, k and v (no bias),
        the per-head decay A_log and dt bias, and the gated norm over a value head."""
        kd = self.linear_num_key_heads * self.linear_key_head_dim
        vd = self.linear_num_value_heads * self.linear_value_head_dim
        return ((2 * kd + vd) * self.linear_conv_kernel + 2 * self.linear_num_value_heads
                + self.linear_value_head_dim)

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


def _row_to_arch(r: dict[str, str | None]) -> Architecture:
    """One catalog row; an empty cell (or a column the row predates) takes the default."""
    data: dict[str, Any] = {}
    for name, field in Architecture.model_fields.items():
        raw = (r.get(name) or "").strip()
        if not raw:
            continue
        if name == "aliases":
            data[name] = tuple(a.strip() for a in raw.split(";") if a.strip())
        elif field.annotation is bool:
            data[name] = _BOOL[raw.lower()]
        elif field.annotation is int or name == "published_params":
            data[name] = int(raw)
        elif field.annotation is float:
            data[name] = float(raw)
        else:
            data[name] = raw
    return Architecture(**data)


@cache
def load_architectures(path: Path = ARCHITECTURES_CSV) -> tuple[Architecture, ...]:
    with path.open(newline="", encoding="utf-8") as f:
        return tuple(_row_to_arch(r) for r in csv.DictReader(f))


def _keys(model_id: str) -> list[str]:
    low = model_id.strip().lower()
    return [low, low.split("/", 1)[1]] if "/" in low else [low]


# Suffixes a re-published checkpoint adds to the base model's name (quantized or converted
# copies), and the "-hf" of converted Meta releases: stripped to find the base.
_COPY_SUFFIX = re.compile(
    r"[-_.](gptq|awq|gguf|exl2|mlx|fp8|fp8-dynamic|dynamic|int4|int8|nf4|bnb|4bit|8bit|"
    r"w4a16|w8a8|w8a16|hf|unsloth|bf16|fp16)$")
# Orgs that re-publish other orgs' models unchanged but for quantization or format: their
# copies resolve to the base row (the name's suffix or the config says how it is quantized).
REPUBLISHERS = frozenset(o.lower() for o in (
    "TheBloke", "unsloth", "mlx-community", "bartowski", "lmstudio-community", "RedHatAI",
    "neuralmagic", "nm-testing", "hugging-quants", "casperhansen", "ModelCloud",
    "QuantFactory", "MaziyarPanahi", "TechxGenus", "second-state", "huggyllama",
    "NousResearch"))


def base_name(name: str) -> str:
    """A model name without org and without copy suffixes (Llama-2-70B-GPTQ -> llama-2-70b)."""
    low = name.strip().lower().rsplit("/", 1)[-1]
    while (m := _COPY_SUFFIX.search(low)) and m.start() > 0:
        low = low[:m.start()]
    return low


@cache
def _index(path: Path = ARCHITECTURES_CSV) -> dict[str, Architecture]:
    """Every id and alias, with its org and, where unambiguous, without it."""
    idx: dict[str, Architecture] = {}
    for a in load_architectures(path):
        for name in (a.model_id, *a.aliases):
            for k in _keys(name):
                idx.setdefault(k, a)
    return idx


@cache
def _by_base_name(path: Path = ARCHITECTURES_CSV) -> dict[str, dict[str, Architecture]]:
    """base name -> {full id (lower case) -> row}, over every id and alias with an org."""
    out: dict[str, dict[str, Architecture]] = {}
    for a in load_architectures(path):
        for name in (a.model_id, *a.aliases):
            if "/" in name:
                out.setdefault(base_name(name), {})[name.lower()] = a
    return out


def _suggest(model_id: str, idx: Mapping[str, Architecture]) -> str:
    close = difflib.get_close_matches(model_id.strip().lower(), list(idx), n=5, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(_keys(model_id)[-1], list(idx), n=5, cutoff=0.6)
    return f"; did you mean: {', '.join(close)}" if close else ""


def lookup(model_id: str, path: Path = ARCHITECTURES_CSV) -> Architecture:
    """The catalog row for `model_id`, matched case-insensitively.

    Without an org the name alone matches. With one, the org must be the row's (or an
    alias's), or a re-publisher of it (`REPUBLISHERS`: TheBloke/Llama-2-70B-GPTQ is
    meta-llama/Llama-2-70b-hf); an org that does not publish that name is an error with the
    ids that do, never a silent match on the name.
    """
    idx = _index(path)
    key = model_id.strip().lower()
    if key in idx:  # a full id or alias, or a bare name
        return idx[key]
    org, _, name = model_id.strip().rpartition("/")
    org = org.lower()
    same_name = _by_base_name(path).get(base_name(name), {})
    if not org:
        rows = {id(a): a for a in same_name.values()}
        if len(rows) == 1:
            return next(iter(rows.values()))
    elif same_name:
        if org in REPUBLISHERS or org in {i.split("/", 1)[0] for i in same_name}:
            return same_name[min(same_name)]
        ids = ", ".join(sorted({a.model_id for a in same_name.values()}))
        raise UserInputError(f"unknown model {model_id!r}: {org!r} publishes no "
                             f"{name!r} in the catalog; did you mean: {ids} (or pass "
                             f"--config PATH to a config.json, or --online to read the Hub)")
    raise UserInputError(f"unknown model {model_id!r}{_suggest(model_id, idx)} (or pass "
                         f"--config PATH to a config.json, --online to read the Hub, or "
                         f"--params N)")


# ---- other sources -----------------------------------------------------------------------

# A config.json is a few kilobytes (the longest, with per-layer lists, under 100 KB): anything
# larger is not a config, and reading it whole could exhaust memory.
MAX_CONFIG_BYTES = 1 << 20


def _first(cfg: dict[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


def _uniform(value: Any, what: str, name: str) -> Any:
    """A per-layer list in which every layer agrees, as one value (Hunyuan writes lists)."""
    if isinstance(value, list):
        if not value or any(v != value[0] for v in value):
            raise UserInputError(f"{name}: {what} differs between layers, which this sizing "
                                 f"does not model")
        return value[0]
    return value


_FUSED_QKV = {"gpt2", "gpt_neox", "bloom", "falcon", "gpt_bigcode", "phi3", "qwen", "chatglm",
              "olmo", "gptj"}
_FUSED_GATE_UP = {"phi3", "chatglm", "olmo", "glm4"}
_LAYERNORM = {"gpt2", "gpt_neox", "bloom", "falcon", "gpt_bigcode", "opt", "phi", "stablelm",
              "starcoder2", "bert", "roberta", "gptj", "phimoe"}
# apertus: xIELU and arcee (AFM): ReLU², both an up and a down projection without a gate
_PLAIN_MLP = {"gpt2", "gpt_neox", "bloom", "falcon", "gpt_bigcode", "opt", "phi", "starcoder2",
              "bert", "roberta", "gptj", "apertus", "arcee"}
_ALL_BIAS = {"gpt2", "gpt_neox", "bloom", "gpt_bigcode", "opt", "phi", "bert", "roberta",
             "starcoder2"}
_QKV_BIAS = {"qwen2", "qwen2_moe", "qwen", "chatglm", "mimo"}
# q and k normed per head (one head_dim weight each, shared by the heads)
_QK_HEAD_NORM = ("qwen3", "gemma3", "apertus", "exaone4")
# q and k normed over the whole projection (OLMo-2/3, MiniMax-M2: q_dim and kv_dim weights)
_QK_FULL_NORM = ("olmo2", "olmo3", "minimax_m2")
# four norms per block: around attention and around the MLP (GLM-4 dense only: the
# glm4_moe / glm4_moe_lite blocks keep the usual two)
_FOUR_NORMS = ("gemma2", "gemma3")
_GATED_SHARED_EXPERT = ("qwen2_moe", "qwen3_next", "qwen3_5_moe")
# DeepSeek-V3.2 (deepseek_v32) and GLM-5 (glm_moe_dsa) add a sparse-attention indexer of
# about 0.1 % of their weights, which is not counted; GLM-4.7-Flash is glm4_moe_lite
_LATENT_ATTENTION = ("deepseek_v2", "deepseek_v3", "kimi_k2", "glm_moe_dsa", "glm4_moe_lite")


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a multimodal config (text_config), with the top-level
    model_type (the family) and tie_word_embeddings where the text part names none."""
    if "text_config" not in cfg or "hidden_size" in cfg:
        return cfg
    text = dict(cfg["text_config"])
    text["model_type"] = cfg.get("model_type") or text.get("model_type", "")
    if "tie_word_embeddings" not in text and "tie_word_embeddings" in cfg:
        text["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    return text


def _moe_fields(cfg: dict[str, Any], mt: str, inter: int, name: str) -> dict[str, Any]:
    experts = int(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts",
                         default=0) or 0)
    if not experts:
        return {}
    per_token = int(_uniform(_first(cfg, "num_experts_per_tok", "experts_per_token",
                                    "top_k_experts", "moe_topk", default=0), "moe_topk", name))
    expert_size = int(_uniform(_first(cfg, "moe_intermediate_size", default=inter),
                               "moe_intermediate_size", name))
    shared = int(_first(cfg, "shared_expert_intermediate_size", default=0))
    n_shared = int(_uniform(_first(cfg, "n_shared_experts", "num_shared_expert", default=0),
                            "num_shared_expert", name) or 0)
    if n_shared and not shared:  # DeepSeek/GLM: n_shared_experts experts of expert size
        shared = n_shared * expert_size
    if mt.startswith("llama4"):  # every MoE layer also runs one shared expert of that size
        shared = expert_size
    return {
        "num_experts": experts, "experts_per_token": per_token,
        "moe_intermediate_size": expert_size, "shared_expert_intermediate_size": shared,
        "shared_expert_gate": mt.startswith(_GATED_SHARED_EXPERT),
        "dense_layers": int(_first(cfg, "first_k_dense_replace", default=0)),
        "moe_layer_step": int(_first(cfg, "interleave_moe_layer_step", "decoder_sparse_step",
                                     default=1) or 1),
        "router_bias": mt == "gpt_oss",
    }


def _attention_fields(cfg: dict[str, Any], mt: str, heads: int, h: int) -> dict[str, Any]:
    if mt.startswith(_LATENT_ATTENTION) and cfg.get("kv_lora_rank"):
        rope = int(cfg["qk_rope_head_dim"])
        return {"head_dim": int(cfg["qk_nope_head_dim"]) + rope, "num_kv_heads": heads,
                "q_lora_rank": int(cfg.get("q_lora_rank") or 0),
                "kv_lora_rank": int(cfg["kv_lora_rank"]), "qk_rope_head_dim": rope,
                "v_head_dim": int(cfg["v_head_dim"])}
    out = {
        "num_kv_heads": int(_first(cfg, "num_key_value_heads", "multi_query_group_num",
                                   "num_kv_heads", default=1 if cfg.get("multi_query")
                                   else heads)),
        "head_dim": int(_first(cfg, "head_dim", "d_kv", "kv_channels", default=h // heads)),
        "attn_output_gate": bool(cfg.get("attn_output_gate")),
        "attention_sinks": mt == "gpt_oss",
    }
    interval = cfg.get("full_attention_interval")
    if cfg.get("linear_num_value_heads") and interval:
        out |= {"full_attention_interval": int(interval),
                "linear_num_key_heads": int(cfg["linear_num_key_heads"]),
                "linear_num_value_heads": int(cfg["linear_num_value_heads"]),
                "linear_key_head_dim": int(cfg["linear_key_head_dim"]),
                "linear_value_head_dim": int(cfg["linear_value_head_dim"]),
                "linear_conv_kernel": int(cfg["linear_conv_kernel_dim"])}
    return out


def _qk_norm(cfg: dict[str, Any], mt: str) -> Literal["none", "head", "full"]:
    if mt.startswith("llama4"):  # use_qk_norm is Llama 4's L2 norm, which has no weight
        return "none"
    if mt.startswith(_QK_FULL_NORM):
        return "full"
    if mt.startswith(_QK_HEAD_NORM) or cfg.get("use_qk_norm") or cfg.get("qk_layernorm"):
        return "head"
    return "none"


def from_hf_config(cfg: dict[str, Any], name: str = "config.json", *,
                   model_id: str | None = None, source: str | None = None) -> Architecture:
    """Build an architecture from a Hugging Face `config.json` dict (read offline)."""
    cfg = _text_config(cfg)
    mt = str(cfg.get("model_type", "")).lower()
    try:
        h = int(_first(cfg, "hidden_size", "n_embd", "d_model"))
        layers = int(_first(cfg, "num_hidden_layers", "n_layer", "num_layers"))
        heads = int(_first(cfg, "num_attention_heads", "n_head", "num_heads"))
        vocab = int(_first(cfg, "vocab_size", "padded_vocab_size"))
        if heads < 1:
            raise ValueError("no heads")
        inter = _first(cfg, "intermediate_size_mlp", "intermediate_size", "ffn_hidden_size",
                       "n_inner", "d_ff", "ffn_dim")
        inter = int(inter) if inter else 4 * h
        if mt == "qwen":  # Qwen-1 stores the two gated halves together
            inter //= 2
        act = str(_first(cfg, "hidden_act", "hidden_activation", "activation_function",
                         "feed_forward_proj", default="silu"))
        moe = _moe_fields(cfg, mt, int(cfg.get("intermediate_size") or inter), name)
        attention = _attention_fields(cfg, mt, heads, h)
    except (TypeError, ValueError, KeyError, OverflowError) as e:
        raise UserInputError(f"{name}: needs hidden_size, num_hidden_layers, "
                             f"num_attention_heads and vocab_size as numbers ({e})") from e
    gated = mt not in _PLAIN_MLP and ("gated" in act or mt != "t5")
    enc_dec = bool(cfg.get("is_encoder_decoder"))
    encoder_only = mt in ("bert", "roberta", "deberta", "deberta-v2", "distilbert")
    # a config that omits tie_word_embeddings takes its config class's default
    tie = bool(cfg.get("tie_word_embeddings", mt not in ("llama", "mistral", "qwen", "llama4")))
    try:
        return Architecture(
            model_id=model_id or str(cfg.get("_name_or_path") or name), family=mt or "unknown",
            model_type=mt or "unknown",
            arch="encoder-decoder" if enc_dec else ("encoder" if encoder_only else "decoder"),
            num_layers=layers,
            num_decoder_layers=int(_first(cfg, "num_decoder_layers", default=layers))
            if enc_dec else 0,
            hidden_size=h, intermediate_size=inter, num_heads=heads, vocab_size=vocab,
            tie_word_embeddings=tie, gated_mlp=gated,
            fused_qkv=mt in _FUSED_QKV, fused_gate_up=mt in _FUSED_GATE_UP,
            linear_bias="all" if mt in _ALL_BIAS or mt == "gpt_oss"
            or cfg.get("attention_bias") and mt == "phimoe"
            else ("qkv" if mt in _QKV_BIAS or cfg.get("attention_bias")
                  or cfg.get("use_qkv_bias") or cfg.get("add_qkv_bias") else "none"),
            norm="layer" if mt in _LAYERNORM else "rms",
            norms_per_layer=4 if mt.startswith(_FOUR_NORMS) or mt == "glm4" else 2,
            qk_norm=_qk_norm(cfg, mt),
            learned_positions=int(cfg.get("max_position_embeddings", 0))
            if mt in ("gpt2", "gpt_bigcode", "bert", "roberta") else 0,
            final_logit_softcapping=float(cfg.get("final_logit_softcapping") or 0.0),
            source=source or f"local file {name}",
            notes="read from a config.json; biases and norms inferred from model_type",
            **attention, **moe,
        )
    except ValidationError as e:
        first = e.errors()[0]
        raise UserInputError(f"{name}: {'.'.join(map(str, first['loc']))}: "
                             f"{first['msg']}") from None


def read_config_file(path: Path) -> dict[str, Any]:
    """A local config.json as a dict: a regular file of at most MAX_CONFIG_BYTES, parsed
    as a JSON object (UserInputError otherwise; a device or a FIFO is never opened)."""
    try:
        st = path.stat()
    except FileNotFoundError as e:
        raise UserInputError(f"config file not found: {path}") from e
    except OSError as e:
        raise UserInputError(f"cannot read {path}: {e.strerror or e}") from e
    if not stat.S_ISREG(st.st_mode):
        raise UserInputError(f"{path} is not a regular file: give a config.json")
    if st.st_size > MAX_CONFIG_BYTES:
        raise UserInputError(f"{path} is {st.st_size:,} bytes; a config.json is at most "
                             f"{MAX_CONFIG_BYTES:,}")
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)  # the file may grow after stat
        if len(raw) > MAX_CONFIG_BYTES:
            raise UserInputError(f"{path} is over {MAX_CONFIG_BYTES:,} bytes; a config.json "
                                 f"is smaller")
        cfg = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise UserInputError(f"cannot read {path} as JSON: {e}") from e
    if not isinstance(cfg, dict):
        raise UserInputError(f"{path}: expected a JSON object")
    return cfg


def load_hf_config(path: Path) -> Architecture:
    """Read a local `config.json` (no network)."""
    return from_hf_config(read_config_file(path), name=str(path))


def from_param_count(n_params: float) -> Architecture:
    """A Llama-shaped stand-in of about `n_params` parameters, for models we have no config of.

    Shape rules follow the Llama/Mistral family: head_dim 128, SwiGLU width 3.5·h, GQA with 8
    KV heads, 32k vocabulary, depth ≈ h/128 (Llama-2-7B: h 4096, 32 layers). Solving
    N ≈ L·(12.5·h²) + 2·V·h for h gives the width.
    """
    if not math.isfinite(n_params) or n_params < 1e6:
        raise UserInputError(f"--params must be at least 1e6, got {n_params:g}")
    if n_params > MAX_STAND_IN_PARAMS:
        raise UserInputError(f"--params {n_params:g} is over the limit of "
                             f"{MAX_STAND_IN_PARAMS:.0e} parameters")
    vocab = 32000
    # params per layer ≈ h²·(2 + 2·(8·128)/h + 3·3.5) ≈ 12.5·h² and L = h/128; bounded by
    # MAX_STAND_IN_PARAMS (h stays under 40,000: a few hundred steps)
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

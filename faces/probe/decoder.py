"""A plain PyTorch decoder for when transformers is not installed, and LoRA for when peft is not.

The decoder follows the Llama / Qwen2 layout of a `config.json` (pre-norm RMSNorm, rotary
positions, grouped-query attention through `scaled_dot_product_attention`, a gated SiLU MLP,
optionally tied embeddings, Qwen2's q/k/v biases) with the module names transformers uses, so
LoRA targets the same layers either way; the loss, like transformers', runs over fp32 logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch  # pyright: ignore[reportMissingImports]
import torch.nn.functional as F  # pyright: ignore[reportMissingImports]
from torch import nn  # pyright: ignore[reportMissingImports]
from torch.utils.checkpoint import checkpoint  # pyright: ignore[reportMissingImports]

LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class Shape:
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    qkv_bias: bool
    eps: float
    rope_theta: float

    @classmethod
    def of(cls, cfg: dict[str, Any]) -> Shape:
        hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
        return cls(hidden=hidden, intermediate=cfg["intermediate_size"],
                   layers=cfg["num_hidden_layers"], heads=heads,
                   kv_heads=cfg.get("num_key_value_heads") or heads,
                   head_dim=cfg.get("head_dim") or hidden // heads, vocab=cfg["vocab_size"],
                   tied=bool(cfg.get("tie_word_embeddings", False)),
                   qkv_bias=cfg.get("model_type") == "qwen2" or bool(cfg.get("attention_bias")),
                   eps=float(cfg.get("rms_norm_eps", 1e-6)),
                   rope_theta=float(cfg.get("rope_theta", 10000.0)))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-b, a), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.s = s
        self.q_proj = nn.Linear(s.hidden, s.heads * s.head_dim, bias=s.qkv_bias)
        self.k_proj = nn.Linear(s.hidden, s.kv_heads * s.head_dim, bias=s.qkv_bias)
        self.v_proj = nn.Linear(s.hidden, s.kv_heads * s.head_dim, bias=s.qkv_bias)
        self.o_proj = nn.Linear(s.heads * s.head_dim, s.hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        s = self.s
        q = self.q_proj(x).view(b, t, s.heads, s.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                             enable_gqa=s.kv_heads != s.heads)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, s.heads * s.head_dim))


class MLP(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.up_proj = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.down_proj = nn.Linear(s.intermediate, s.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(s.hidden, s.eps)
        self.self_attn = Attention(s)
        self.post_attention_layernorm = RMSNorm(s.hidden, s.eps)
        self.mlp = MLP(s)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


@dataclass
class Output:
    loss: torch.Tensor


class Decoder(nn.Module):
    """A causal LM with transformers' call: `model(input_ids=..., labels=...).loss`."""

    checkpointing: bool  # recompute each block in the backward pass (when training)

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        s = self.shape = Shape.of(cfg)
        self.embed_tokens = nn.Embedding(s.vocab, s.hidden)
        self.layers = nn.ModuleList(Block(s) for _ in range(s.layers))
        self.norm = RMSNorm(s.hidden, s.eps)
        self.lm_head = nn.Linear(s.hidden, s.vocab, bias=False)
        if s.tied:
            self.lm_head.weight = self.embed_tokens.weight
        self.checkpointing = False
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def _rope(self, t: int, device: torch.device,
              dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.shape
        inv = 1.0 / s.rope_theta ** (torch.arange(0, s.head_dim, 2, device=device).float()
                                     / s.head_dim)
        ang = torch.outer(torch.arange(t, device=device).float(), inv)
        ang = torch.cat((ang, ang), dim=-1)
        return ang.cos().to(dtype), ang.sin().to(dtype)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> Output:
        x = self.embed_tokens(input_ids)
        cos, sin = self._rope(input_ids.shape[1], x.device, x.dtype)
        for layer in self.layers:
            if self.checkpointing and self.training:
                x = checkpoint(layer, x, cos, sin, use_reentrant=False)
            else:
                x = layer(x, cos, sin)
        logits = self.lm_head(self.norm(x)).float()
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               labels[:, 1:].reshape(-1))
        return Output(loss)


class LoraLinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update in fp32 (as peft keeps it)."""

    def __init__(self, base: nn.Linear, rank: int, alpha: int) -> None:
        super().__init__()
        self.base = base
        base.weight.requires_grad_(False)
        if base.bias is not None:
            base.bias.requires_grad_(False)
        dev = base.weight.device
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, device=dev))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, device=dev))
        nn.init.kaiming_uniform_(self.lora_A, a=5**0.5)
        self.scaling = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        update = (x.to(self.lora_A.dtype) @ self.lora_A.T @ self.lora_B.T) * self.scaling
        return self.base(x) + update.to(x.dtype)


def add_lora(model: nn.Module, rank: int, alpha: int) -> nn.Module:
    """Freeze `model` and wrap every block linear layer (LINEAR_NAMES) in LoraLinear."""
    for p in model.parameters():
        p.requires_grad_(False)
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if name in LINEAR_NAMES and isinstance(child, nn.Linear):
                setattr(module, name, LoraLinear(child, rank, alpha))
    return model

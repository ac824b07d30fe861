"""A frozen target LM and a block-diffusion drafter conditioned on its hidden states.

Attention is injected (``Attend``): the caller decides whether a call goes through the
device's compiled ``flex_attention`` or through SDPA with a dense mask. That keeps the
models free of threading, locking and compilation concerns.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig

Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""(q, k, v) shaped [B, H, L, D] -> [B, H, Lq, D]."""


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        return x.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, attend: Attend) -> torch.Tensor:
        k, v = self.kv(memory).chunk(2, dim=-1)
        out = attend(self._split(self.q(x)), self._split(k), self._split(v))
        projected: torch.Tensor = self.out(out.transpose(1, 2).flatten(2))
        return projected


class Layer(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(
        self, x: torch.Tensor, attend: Attend, context: torch.Tensor | None = None
    ) -> torch.Tensor:
        h = self.norm1(x)
        memory = h if context is None else torch.cat([context, h], dim=1)
        x = x + self.attn(h, memory, attend)
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out


class TargetModel(nn.Module):
    """Causal LM whose per-layer hidden states condition the drafter (kept frozen)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.position = nn.Embedding(cfg.max_len, cfg.dim)
        self.layers = nn.ModuleList(Layer(cfg.dim, cfg.heads) for _ in range(cfg.target_layers))
        self.requires_grad_(False)

    def forward(self, tokens: torch.Tensor, attend: Attend) -> torch.Tensor:
        x = self.embed(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
        hidden = []
        for layer in self.layers:
            x = layer(x, attend)
            hidden.append(x)
        # DFlash feeds the drafter several target layers at once: concatenate them.
        return torch.cat(hidden, dim=-1)


class Drafter(nn.Module):
    """Predicts the 15 masked tokens of each 16-token block from its anchor and context."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.block_size = cfg.block_size
        self.mask_token = cfg.vocab
        self.embed = nn.Embedding(cfg.vocab + 1, cfg.dim)
        # Which slot of its block a masked token fills: without it all 15 look alike.
        self.slot = nn.Embedding(cfg.block_size, cfg.dim)
        self.context = nn.Linear(cfg.dim * cfg.target_layers, cfg.dim)
        self.layers = nn.ModuleList(Layer(cfg.dim, cfg.heads) for _ in range(cfg.drafter_layers))
        self.norm = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.vocab)

    def anchors(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return positions % self.block_size == 0

    def forward(self, tokens: torch.Tensor, hidden: torch.Tensor, attend: Attend) -> torch.Tensor:
        noised = torch.where(self.anchors(tokens), tokens, torch.full_like(tokens, self.mask_token))
        slots = torch.arange(tokens.shape[1], device=tokens.device) % self.block_size
        x = self.embed(noised) + self.slot(slots)
        context = self.context(hidden)
        for layer in self.layers:
            x = layer(x, attend, context)
        logits: torch.Tensor = self.head(self.norm(x))
        return logits

    def loss(self, logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        predicted = ~self.anchors(tokens)
        return F.cross_entropy(logits[:, predicted].flatten(0, 1), tokens[:, predicted].flatten())

    def accuracy(self, logits: torch.Tensor, tokens: torch.Tensor) -> float:
        predicted = ~self.anchors(tokens)
        hits = logits[:, predicted].argmax(-1) == tokens[:, predicted]
        return float(hits.float().mean())

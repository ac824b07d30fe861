"""Attention masks of the target (causal) and of the block-diffusion drafter.

The drafter's queries are the noised tokens of a sequence cut into blocks of
``BLOCK_SIZE``; its keys are ``[target context (L) | noised tokens (L)]``. A query sees
the target's hidden states up to and including its block's anchor (causal over the
context) and every token of its own block (bidirectional inside the block).

The same ``mask_mod`` builds both the flex ``BlockMask`` and the dense boolean mask that
the CPU training path feeds to SDPA, so the two attention paths cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, create_mask

from .dataset import BLOCK_SIZE

MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def causal(b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
    return q >= kv


def drafter_mask_mod(seq_len: int) -> MaskMod:
    def block_diffusion(
        b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, kv: torch.Tensor
    ) -> torch.Tensor:
        anchor = (q // BLOCK_SIZE) * BLOCK_SIZE
        in_context = kv < seq_len
        context_ok = kv <= anchor
        same_block = (kv - seq_len) // BLOCK_SIZE == q // BLOCK_SIZE
        return (in_context & context_ok) | (~in_context & same_block)

    return block_diffusion


class MaskCache:
    """Block masks and dense masks per sequence length, built once per device.

    ``create_block_mask`` costs milliseconds per call on CPU; each (device, length) keeps
    its own objects, as per-device workers do on GPUs.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._block: dict[tuple[str, int], BlockMask] = {}
        self._dense: dict[int, torch.Tensor] = {}

    def prebuild(self, lengths: Sequence[int], drafter: bool) -> None:
        """Build every mask a run will use, before its worker threads start.

        ``create_block_mask`` is not thread-safe on torch 2.13: it enters
        ``torch.fx.traceback.annotate``, which edits the process-global
        ``current_meta`` dict, and two threads doing that at once fail with
        ``KeyError: 'custom'``. A run only meets the dataset's lengths, so all its masks
        can be made up front, in one thread.
        """
        for n in lengths:
            if drafter:
                self.drafter(n)
                self.drafter_dense(n)
            else:
                self.target(n)

    def target(self, seq_len: int) -> BlockMask:
        key = ("target", seq_len)
        if key not in self._block:
            self._block[key] = create_block_mask(
                causal, None, None, seq_len, seq_len, device=self.device
            )
        return self._block[key]

    def drafter(self, seq_len: int) -> BlockMask:
        key = ("drafter", seq_len)
        if key not in self._block:
            self._block[key] = create_block_mask(
                drafter_mask_mod(seq_len), None, None, seq_len, 2 * seq_len, device=self.device
            )
        return self._block[key]

    def drafter_dense(self, seq_len: int) -> torch.Tensor:
        if seq_len not in self._dense:
            self._dense[seq_len] = create_mask(
                drafter_mask_mod(seq_len), 1, 1, seq_len, 2 * seq_len, device=self.device
            )
        return self._dense[seq_len]

"""A BERT-style text encoder with seeded weights, in ops every exporter takes.

Attention is written out (Linear, reshape, matmul, softmax) rather than calling
``scaled_dot_product_attention`` or ``nn.MultiheadAttention``, whose fused kernels and
decompositions some converters (TFLite, ExecuTorch, OpenVINO) handle differently or not at all.
"""

from __future__ import annotations

import torch
from torch import nn

from benchlab.zoo.archs._common import seeded

__all__ = ["BertEncoder", "transformer_encoder"]

_VOCAB = 8192
_SEQ = 128
# Special token ids of the example inputs, as in BERT's vocabulary: [CLS] starts a sequence,
# [SEP] ends it, and ids below _FIRST_WORD are reserved.
_CLS, _SEP, _FIRST_WORD = 1, 2, 5


class _Layer(nn.Module):
    """A post-norm BERT layer: self-attention, add & norm, GELU feed-forward, add & norm."""

    def __init__(self, dim: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = (nn.Linear(dim, dim) for _ in range(3))
        self.attn_out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn), nn.GELU(), nn.Linear(ffn, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        head_dim = d // self.heads

        def split(z: torch.Tensor) -> torch.Tensor:
            return z.reshape(b, t, self.heads, head_dim).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        attn = torch.softmax(q @ k.transpose(-2, -1) * head_dim**-0.5, dim=-1)
        context = (attn @ v).transpose(1, 2).reshape(b, t, d)
        x = self.norm1(x + self.attn_out(context))
        return self.norm2(x + self.ffn(x))


class BertEncoder(nn.Module):
    """Token and learned position embeddings, LayerNorm, then ``layers`` post-norm layers.

    Takes ``N x T`` int64 token ids (T at most ``max_len``; no padding mask, every token
    attends to every other) and returns the ``N x T x dim`` final hidden states.
    """

    def __init__(
        self, vocab: int = _VOCAB, dim: int = 256, layers: int = 4, heads: int = 4,
        max_len: int = _SEQ,
    ) -> None:
        super().__init__()
        self.vocab = vocab
        self.tokens = nn.Embedding(vocab, dim)
        # BERT's small random init (init_weights leaves bare Parameters alone).
        self.positions = nn.Parameter(torch.randn(max_len, dim) * 0.02)
        self.norm = nn.LayerNorm(dim)
        self.layers = nn.Sequential(*(_Layer(dim, heads, 4 * dim) for _ in range(layers)))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states for ``input_ids``."""
        x = self.tokens(input_ids) + self.positions[: input_ids.shape[1]]
        return self.layers(self.norm(x))

    def make_example_inputs(self, seed: int) -> tuple[torch.Tensor]:
        """Token ids as a tokenizer would produce: [CLS], random word ids, [SEP]."""
        generator = torch.Generator().manual_seed(seed)
        ids = torch.randint(_FIRST_WORD, self.vocab, (1, _SEQ), generator=generator)
        ids[:, 0], ids[:, -1] = _CLS, _SEP
        return (ids,)


def transformer_encoder() -> nn.Module:
    """A BERT-style encoder (4 layers, width 256, 4 heads), 1x128 int64 ids → 1x128x256."""
    return seeded(BertEncoder, seed=401, shapes=[[1, _SEQ]], dtypes=["int64"])

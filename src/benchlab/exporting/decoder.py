"""A Llama decoder as the export pipeline takes it: its sizes (:class:`LlamaShape`), the graph
with an explicit key/value cache (:class:`KVDecoder`), and the tokenizer trained in code for a
decoder that brings none (:func:`train_tokenizer` on ``benchlab/data/corpus.txt``, which the
package ships). Imports torch.

:class:`KVDecoder` is the ``transformers`` model as one plain function of (new tokens, past
keys, past values) → (logits, keys, values), written with torch operations only, so that it
exports to a single graph with the KV cache as inputs and outputs (ONNX, OpenVINO). Its
agreement with the ``transformers`` model is what the accuracy check of every exported decoder
measures. The zoo's decoders and a user's Hugging Face Llama both take this path.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import torch
from torch import nn

__all__ = ["KVDecoder", "LlamaShape", "corpus_text", "train_tokenizer"]


@dataclass(frozen=True, slots=True)
class LlamaShape:
    """The sizes of one decoder (Llama: RMSNorm, rotary positions, SwiGLU, grouped KV heads)."""

    dim: int
    layers: int
    heads: int
    kv_heads: int
    hidden: int
    vocab: int = 8192
    max_positions: int = 2048
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.dim // self.heads


def corpus_text() -> str:
    """The text the tokenizer is trained on and perplexity is measured on (package data)."""
    return resources.files("benchlab").joinpath("data/corpus.txt").read_text(encoding="utf-8")


def train_tokenizer(vocab: int = 8192) -> Any:
    """A byte-level BPE tokenizer trained on :func:`corpus_text` (deterministic)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<s>", "</s>"])
    tokenizer.train_from_iterator(corpus_text().splitlines(), trainer=trainer)
    return tokenizer


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class KVDecoder(nn.Module):
    """``(input_ids [1, T], past_keys [L, 1, Hkv, S, d], past_values) → (logits [1, T, V],
    keys [L, 1, Hkv, S+T, d], values)``: the ``transformers`` model's weights, computed with
    plain torch operations and an explicit cache, for export as one graph.

    Positions are ``S, …, S+T-1``; new token ``i`` attends to every cached position and to the
    new tokens up to itself.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        shape: LlamaShape = model.llama_shape
        self.shape = shape
        self.inner = model.model
        self.lm_head = model.lm_head
        inv_freq = 1.0 / (shape.rope_theta ** (
            torch.arange(0, shape.head_dim, 2, dtype=torch.float32) / shape.head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(variance + self.shape.norm_eps))

    def forward(self, input_ids: torch.Tensor, past_keys: torch.Tensor,
                past_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        new = input_ids.shape[1]
        past = past_keys.shape[3]
        positions = torch.arange(new, dtype=torch.float32) + past
        allowed = torch.arange(new + past)[None, :] <= (torch.arange(new) + past)[:, None]
        logits, keys, values = self.decode(input_ids, positions, allowed,
                                           list(zip(past_keys, past_values)))
        return logits, torch.stack(keys), torch.stack(values)

    def decode(self, input_ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor,
               past: list[tuple[torch.Tensor, torch.Tensor]]
               ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """The model on ``input_ids`` [1, T] at ``positions`` [T] (float), new token ``i``
        attending to the cached and new positions ``allowed[i]`` (bool [T, S+T]), after each
        layer's past ``(keys, values)`` [1, Hkv, S, d]: the logits and every layer's keys
        and values [1, Hkv, S+T, d]. The two graph signatures (:meth:`forward`,
        :mod:`benchlab.exporting.ovgenai_export`'s) share it."""
        shape = self.shape
        new = input_ids.shape[1]
        angles = positions[:, None] * self.inv_freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos()[None, None], angles.sin()[None, None]
        mask = torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
        groups = shape.heads // shape.kv_heads
        hidden = self.inner.embed_tokens(input_ids)
        keys_out, values_out = [], []
        for layer, (past_keys, past_values) in zip(self.inner.layers, past):
            attn = layer.self_attn
            x = self._norm(hidden, layer.input_layernorm.weight)
            q = attn.q_proj(x).view(1, new, shape.heads, shape.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(1, new, shape.kv_heads, shape.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(1, new, shape.kv_heads, shape.head_dim).transpose(1, 2)
            q = q * cos + _rotate_half(q) * sin
            k = k * cos + _rotate_half(k) * sin
            k = torch.cat((past_keys, k), dim=2)
            v = torch.cat((past_values, v), dim=2)
            keys_out.append(k)
            values_out.append(v)
            if groups > 1:
                k = k.repeat_interleave(groups, dim=1)
                v = v.repeat_interleave(groups, dim=1)
            scores = q @ k.transpose(-1, -2) / shape.head_dim**0.5 + mask
            context = torch.softmax(scores, dim=-1) @ v
            context = context.transpose(1, 2).reshape(1, new, shape.dim)
            hidden = hidden + attn.o_proj(context)
            x = self._norm(hidden, layer.post_attention_layernorm.weight)
            mlp = layer.mlp
            hidden = hidden + mlp.down_proj(nn.functional.silu(mlp.gate_proj(x)) * mlp.up_proj(x))
        hidden = self._norm(hidden, self.inner.norm.weight)
        return self.lm_head(hidden), keys_out, values_out

    def empty_cache(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Past keys and values holding no position."""
        shape = self.shape
        empty = torch.zeros(shape.layers, 1, shape.kv_heads, 0, shape.head_dim)
        return empty, empty.clone()

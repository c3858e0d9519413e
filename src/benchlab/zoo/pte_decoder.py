"""The zoo's decoders as ExecuTorch programs that keep their key/value cache inside
(``decoder_pte``, ``NAME.decoder.pte``): ExecuTorch's LLM path, as its own Llama export does it.

:class:`StaticCacheDecoder` is :class:`benchlab.zoo.archs.llama.KVDecoder`'s math over the same
``transformers`` weights, with the cache held as **mutable buffers** of a fixed size (one key
and one value buffer per layer, ``[1, kv_heads, max_len, head_dim]``; together the
``[layers, 1, kv_heads, max_len, head_dim]`` cache) and written in place at the positions
given. The program's one method::

    forward(tokens [1, T] int64, input_pos [1] int64, logits_count [1] int64)
        -> logits [1, logits_count, V] float32

runs ``T`` new tokens at positions ``input_pos .. input_pos + T - 1`` (T dynamic, 1 to
``max_len``), writes their keys and values into the buffers there, and returns the logits of
the last ``logits_count`` positions: ``1`` in generation (as ExecuTorch's own LLM export,
whose ``generate_full_logits`` is off by default: the output layer over every prompt
position would be a fifth of a 128-token prefill here), ``T`` for the runner's accuracy
check, which needs every position's logits. One method rather than a second one for every
position: two methods of a program have separate planned memory in the Python runtime, so
they could not share the cache.

Attention reads the cache up to ``input_pos + T`` only (a slice whose length is known at run
time), so positions beyond it, stale ones from an earlier generation included, are never
read: resetting is starting again at position 0, and nothing needs clearing. New token ``i``
attends to every cached position and to the new tokens up to itself.

The cache update is ``index_put`` on the buffer, which ExecuTorch's re-inplace pass turns into
an in-place ``index_put_`` (``run_reinplace_pass``): each call writes the new positions only,
with no copy of the cache. Everything else is lowered to XNNPACK where it takes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from benchlab.zoo.exporters import ExportContext

__all__ = ["MAX_LEN", "StaticCacheDecoder", "export_decoder_pte", "lower_decoder"]

#: Positions the cache holds (prompt, depth and generated tokens together): every default
#: workload (P + D + G up to 512 + 512 + 64) and the 512-token perplexity text fit, at half
#: the zoo's ``max_positions`` (2048), so the cache is a quarter of its full size.
MAX_LEN = 1024


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class StaticCacheDecoder(nn.Module):
    """``(tokens [1, T], input_pos [1], logits_count [1]) → logits [1, logits_count, V]``,
    the key/value cache in mutable buffers ``k_cache_<layer>``/``v_cache_<layer>``.

    Built from a :class:`~benchlab.zoo.archs.llama.KVDecoder` (whose ``inner`` is the
    ``transformers`` ``LlamaModel``); computes what it computes, token for token.
    """

    def __init__(self, decoder: nn.Module, max_len: int = MAX_LEN, sliced: bool = True) -> None:
        super().__init__()
        self.sliced = sliced
        shape = decoder.shape
        self.shape = shape
        self.max_len = int(max_len)
        self.inner = decoder.inner
        self.lm_head = decoder.lm_head
        self.register_buffer("inv_freq", decoder.inv_freq.clone(), persistent=False)
        cache = (1, shape.kv_heads, self.max_len, shape.head_dim)
        for index in range(shape.layers):
            self.register_buffer(f"k_cache_{index}", torch.zeros(cache), persistent=False)
            self.register_buffer(f"v_cache_{index}", torch.zeros(cache), persistent=False)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(variance + self.shape.norm_eps))

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor,
                logit_positions: torch.Tensor) -> torch.Tensor:
        shape = self.shape
        new = tokens.shape[1]
        positions = torch.arange(new, dtype=torch.int64) + input_pos
        angles = positions.to(torch.float32)[:, None] * self.inv_freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos()[None, None], angles.sin()[None, None]
        if self.sliced:
            start = input_pos[0].item()
            torch._check(start >= 0)
            torch._check(start + new <= self.max_len)
            end = start + new
            allowed = torch.arange(end)[None, :] <= positions[:, None]
        else:
            end = self.max_len
            allowed = torch.arange(self.max_len)[None, :] <= positions[:, None]
        mask = torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
        groups = shape.heads // shape.kv_heads
        hidden = self.inner.embed_tokens(tokens)
        for index, layer in enumerate(self.inner.layers):
            attn = layer.self_attn
            x = self._norm(hidden, layer.input_layernorm.weight)
            q = attn.q_proj(x).view(1, new, shape.heads, shape.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(1, new, shape.kv_heads, shape.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(1, new, shape.kv_heads, shape.head_dim).transpose(1, 2)
            q = q * cos + _rotate_half(q) * sin
            k = k * cos + _rotate_half(k) * sin
            key_cache: torch.Tensor = getattr(self, f"k_cache_{index}")
            value_cache: torch.Tensor = getattr(self, f"v_cache_{index}")
            # index_put_ called as such: ``cache[:, :, positions] = k`` would strip k's leading
            # 1 (torch's setitem does), and ExecuTorch's in-place index_put_ kernel needs the
            # values' shape to match the indexed slice exactly.
            torch.ops.aten.index_put_.default(key_cache, [None, None, positions], k)
            torch.ops.aten.index_put_.default(value_cache, [None, None, positions], v)
            k = key_cache[:, :, :end] if self.sliced else key_cache
            v = value_cache[:, :, :end] if self.sliced else value_cache
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
        hidden = hidden.index_select(1, logit_positions)
        hidden = self._norm(hidden, self.inner.norm.weight)
        return self.lm_head(hidden)


def _example(max_len: int) -> tuple[torch.Tensor, ...]:
    """Example inputs: 5 tokens after 3 cached ones, every position's logits (no size 0 or 1,
    which ``torch.export`` would specialise on)."""
    del max_len
    return (torch.tensor([[5, 6, 7, 8, 9]], dtype=torch.int64), torch.tensor([3]),
            torch.tensor([2, 4]))


def lower_decoder(module: StaticCacheDecoder) -> Any:
    """``torch.export`` (T dynamic), XNNPACK lowering, ExecuTorch program (its ``buffer``)."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from executorch.exir.passes import MemoryPlanningPass

    tokens = torch.export.Dim("tokens", min=1, max=module.max_len)
    with torch.no_grad():
        program = torch.export.export(
            module, _example(module.max_len),
            dynamic_shapes={"tokens": {1: tokens}, "input_pos": None,
                            "logit_positions": {0: torch.export.Dim("logits", min=1, max=module.max_len)}})
    lowered = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
    return lowered.to_executorch(ExecutorchBackendConfig(
        run_reinplace_pass=True,
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False)))


def export_decoder_pte(ctx: ExportContext) -> dict[str, Path]:
    """The decoder as an ExecuTorch program with its cache inside (``NAME.decoder.pte``)."""
    decoder = ctx.torch_module()
    module = StaticCacheDecoder(decoder, min(MAX_LEN, decoder.shape.max_positions)).eval()
    target = ctx.path(".decoder.pte")
    target.write_bytes(lower_decoder(module).buffer)
    return {"decoder_pte": target}

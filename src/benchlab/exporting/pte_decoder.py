"""The zoo's decoders as ExecuTorch programs that hold their key/value cache
(``decoder_pte``, ``NAME.decoder.pte``): ExecuTorch's own LLM path.

:class:`StaticCacheDecoder` computes what :class:`benchlab.zoo.archs.llama.KVDecoder` computes,
over the same ``transformers`` weights, with the cache as **mutable buffers** of a fixed size:
``k_cache_<layer>`` and ``v_cache_<layer>``, each ``[1, max_context_len, kv_heads, head_dim]``
(together the ``[layers, 1, max_context_len, kv_heads, head_dim]`` cache), written in place.
The program's method is::

    forward(tokens [1, T] int64, input_pos [1] int64, logit_positions [K] int64)
        -> logits [1, K, V] float32

It runs ``T`` new tokens (``T`` dynamic, 1 to ``max_seq_len``) at positions ``input_pos ..
input_pos + T - 1`` (at most ``max_context_len - 1``), writes their keys and values into the
buffers there, and returns the logits of the new tokens that ``logit_positions`` names (``K``
dynamic too). Generation asks for the last one only, ``[T - 1]``, as ExecuTorch's Llama export
computes by default (its ``generate_full_logits`` is off): the output layer over all 128
positions of a prompt would be a quarter of llama_15m's prefill work. The runner's accuracy
check asks for ``0 .. T - 1``.
That is one method rather than a second one for every position, because two methods of a
program each have their own planned memory in the runtime, so they could not share the cache.

Two sizes bound a program, as in ExecuTorch's Llama export: the cache's length,
``max_context_len`` (:data:`MAX_CONTEXT_LEN`), and the most tokens one call takes,
``max_seq_len`` (:data:`MAX_SEQ_LEN`), which sizes the planned memory of the activations and
the logits; longer inputs are run in chunks (the backend does, as ExecuTorch's runner
prefills). The program carries both, and the vocabulary's size, as constant methods
(``get_max_context_len``, ``get_max_seq_len``, ``get_vocab_size``, ``use_kv_cache``), as
ExecuTorch's Llama export writes them.

The cache is updated and read by ExecuTorch's LLM kernels, as its Llama export does with
``use_sdpa_with_kv_cache`` (``executorch.extension.llm.custom_ops``):

* ``llama::update_cache(value, cache, start_pos)`` copies the new positions into the buffer in
  place (nothing else of the cache is touched or copied);
* ``llama::custom_sdpa(q, k_cache, v_cache, start_pos, None, 0, is_causal=True)`` attends new
  token ``i`` to cache positions ``0 .. start_pos + i`` and reads no position beyond
  ``start_pos + T``: entries past the current position (a longer, earlier generation's) are
  never read, so starting a generation again is starting at position 0, with nothing to clear.
  It takes grouped key/value heads as they are (no repeat).

Both kernels' sequence axis is the cache's second one, hence ``[1, max_context_len, kv_heads,
head_dim]`` rather than the ``[1, kv_heads, positions, head_dim]`` of the ONNX graph. XNNPACK
takes the rest (projections, SwiGLU, the output layer) but for small operators left to the
portable kernels: the RMSNorm means and the halves of the rotary positions.

The standard operators alone do not do as well. The length of the cache slice to attend over
is only known at run time (an unbacked size), and XNNPACK's partitioner refuses any tensor of
such a size, which leaves attention to the portable kernels: llama_15m's decode at P=128 was
1.25x slower that way (2 threads, the programs interleaved). Attending over the whole cache
with a mask keeps the shapes static, but reads and copies all of it on every token: 1.9x
slower.

The runtime needs the kernels: ``libcustom_ops_aot_lib.so`` in the ``executorch`` wheel,
which :mod:`benchlab.frameworks.executorch.generative` loads; ExecuTorch's ``llama_main``
links them, its plain ``executor_runner`` does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from benchlab.exporting.context import ExportContext

__all__ = ["MAX_CONTEXT_LEN", "MAX_SEQ_LEN", "METHOD", "QUANT_GROUP", "StaticCacheDecoder",
           "export_decoder_pte", "export_decoder_pte_8da4w", "load_llm_ops", "lower_decoder",
           "metadata"]

#: Positions the cache holds unless the model holds fewer: the zoo's decoders' own limit
#: (``LlamaShape.max_positions``), as the ONNX graph's, so every workload another runtime runs
#: fits (the docs' D + P + G = 512 + 512 + 64 included). Attention never reads past the
#: position, so a long cache costs memory only: 30 MiB for llama_15m, 48 MiB for llama_100m.
MAX_CONTEXT_LEN = 2048
#: The most tokens one call takes: every default prompt (P up to 512) and the 512-token
#: perplexity text in one call. It sizes the planned memory (llama_15m's logits alone are 16 MiB
#: at 512 positions), which the runtime allocates whole at load.
MAX_SEQ_LEN = 512
#: The program's method.
METHOD = "forward"
#: Weights per 4-bit group of ``decoder_pte_8da4w`` (ExecuTorch's Llama export: ``-G 32``).
QUANT_GROUP = 32


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class StaticCacheDecoder(nn.Module):
    """``(tokens [1, T], input_pos [1], logit_positions [K]) → logits [1, K, V]``, the key/value
    cache in mutable buffers ``k_cache_<layer>``/``v_cache_<layer>`` (module docstring).

    Built from a :class:`~benchlab.zoo.archs.llama.KVDecoder` (whose ``inner`` is the
    ``transformers`` ``LlamaModel``); the same computation, position for position. Running or
    exporting it needs ExecuTorch's LLM operators registered (:func:`load_llm_ops`).
    """

    def __init__(self, decoder: nn.Module, max_context_len: int = MAX_CONTEXT_LEN,
                 max_seq_len: int = MAX_SEQ_LEN) -> None:
        super().__init__()
        shape = decoder.shape
        self.shape = shape
        self.max_context_len = min(int(max_context_len), shape.max_positions)
        self.max_seq_len = min(int(max_seq_len), self.max_context_len)
        self.inner = decoder.inner
        self.lm_head = decoder.lm_head
        self.register_buffer("inv_freq", decoder.inv_freq.clone(), persistent=False)
        cache = (1, self.max_context_len, shape.kv_heads, shape.head_dim)
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
        start = input_pos[0].item()
        torch._check_is_size(start)
        torch._check(start + new <= self.max_context_len)
        positions = (torch.arange(new, dtype=torch.int64) + input_pos).to(torch.float32)
        angles = positions[:, None] * self.inv_freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        # [1, T, 1, head_dim]: q and k stay [1, T, heads, head_dim], the kernels' layout.
        cos, sin = angles.cos()[None, :, None], angles.sin()[None, :, None]
        hidden = self.inner.embed_tokens(tokens)
        for index, layer in enumerate(self.inner.layers):
            attn = layer.self_attn
            x = self._norm(hidden, layer.input_layernorm.weight)
            q = attn.q_proj(x).view(1, new, shape.heads, shape.head_dim)
            k = attn.k_proj(x).view(1, new, shape.kv_heads, shape.head_dim)
            v = attn.v_proj(x).view(1, new, shape.kv_heads, shape.head_dim)
            q = q * cos + _rotate_half(q) * sin
            k = k * cos + _rotate_half(k) * sin
            key_cache = getattr(self, f"k_cache_{index}")
            value_cache = getattr(self, f"v_cache_{index}")
            torch.ops.llama.update_cache(k, key_cache, start)
            torch.ops.llama.update_cache(v, value_cache, start)
            context = torch.ops.llama.custom_sdpa(q, key_cache, value_cache, start, None, 0,
                                                  True)
            hidden = hidden + attn.o_proj(context.reshape(1, new, shape.dim))
            x = self._norm(hidden, layer.post_attention_layernorm.weight)
            mlp = layer.mlp
            hidden = hidden + mlp.down_proj(nn.functional.silu(mlp.gate_proj(x)) * mlp.up_proj(x))
        hidden = hidden.index_select(1, logit_positions)
        return self.lm_head(self._norm(hidden, self.inner.norm.weight))


def load_llm_ops() -> None:
    """Register ExecuTorch's LLM operators (``llama::update_cache``, ``llama::custom_sdpa``)
    with torch: their eager kernels and their shapes for export."""
    from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401


def _example() -> tuple[torch.Tensor, ...]:
    """Example inputs: 5 tokens after 3 cached ones, the logits of 2 of them (no size 0 or 1,
    on which ``torch.export`` would specialise, and T differs from K)."""
    return (torch.tensor([[5, 6, 7, 8, 9]], dtype=torch.int64), torch.tensor([3]),
            torch.tensor([2, 4]))


def metadata(module: StaticCacheDecoder) -> dict[str, Any]:
    """The program's constant methods (the names ExecuTorch's Llama export gives them)."""
    return {"get_max_context_len": module.max_context_len, "get_max_seq_len": module.max_seq_len,
            "get_vocab_size": module.shape.vocab, "get_n_layers": module.shape.layers,
            "use_kv_cache": True, "enable_dynamic_shape": True}


def lower_decoder(module: StaticCacheDecoder) -> Any:
    """``torch.export`` (T and K dynamic), XNNPACK lowering, the ExecuTorch program."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from executorch.exir.passes import MemoryPlanningPass

    load_llm_ops()
    tokens = torch.export.Dim("tokens", min=1, max=module.max_seq_len)
    logits = torch.export.Dim("logits", min=1, max=module.max_seq_len)
    with torch.no_grad():
        program = torch.export.export(
            module, _example(),
            dynamic_shapes={"tokens": {1: tokens}, "input_pos": None,
                            "logit_positions": {0: logits}})
    lowered = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()],
                                          constant_methods=metadata(module))
    # The inputs are the caller's tensors, not copied into planned memory (as ExecuTorch's
    # Llama export).
    return lowered.to_executorch(ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False)))


def export_decoder_pte(ctx: ExportContext) -> dict[str, Path]:
    """The decoder as an ExecuTorch program holding its cache (``NAME.decoder.pte``)."""
    decoder = ctx.torch_module()
    module = StaticCacheDecoder(decoder).eval()
    target = ctx.path(".decoder.pte")
    target.write_bytes(lower_decoder(module).buffer)
    return {"decoder_pte": target}


def export_decoder_pte_8da4w(ctx: ExportContext) -> dict[str, Path]:
    """The same program with every linear layer (the output layer too; the embedding table
    stays fp32) quantized as ExecuTorch's Llama export's ``-qmode 8da4w -G 32`` does
    (``NAME.decoder.8da4w.pte``): torchao's ``Int8DynamicActivationIntxWeightConfig``, int4
    weights in symmetric groups of :data:`QUANT_GROUP` with an fp32 scale each, activations
    quantized to int8 per token at run time, lowered to XNNPACK's dynamically quantized
    kernels."""
    import copy

    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
    from torchao.quantization.granularity import PerGroup

    # A copy: the context's decoder is the other formats' too.
    module = StaticCacheDecoder(copy.deepcopy(ctx.torch_module())).eval()
    quantize_(module, Int8DynamicActivationIntxWeightConfig(
        weight_dtype=torch.int4, weight_granularity=PerGroup(QUANT_GROUP)))
    target = ctx.path(".decoder.8da4w.pte")
    target.write_bytes(lower_decoder(module).buffer)
    return {"decoder_pte_8da4w": target}

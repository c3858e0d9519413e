"""GGUF export of the zoo's Llama decoders, for llama.cpp (runs inside the export process).

:func:`export_gguf` writes ``NAME.gguf`` with ``gguf-py``'s :class:`gguf.GGUFWriter` from the
very ``transformers`` weights the reference was computed with: architecture ``llama``, every
hyperparameter llama.cpp reads, the tensors under llama.cpp's names, fp32 throughout, and the
tokenizer trained in code as a ``gpt2`` (byte-level BPE) vocabulary.

One transformation is not a rename. ``transformers``' Llama applies rotary positions to the
two *halves* of each head (``rotate_half``: dimension ``i`` pairs with ``i + d/2``); llama.cpp's
``llama`` architecture rotates *adjacent* pairs (``2i`` with ``2i + 1``). The rows of the query
and key projections are therefore reordered, head by head, so that row ``i`` of the first half
and row ``i`` of the second half become rows ``2i`` and ``2i + 1``
(:func:`rope_interleave`); the attention scores, and so the model, are unchanged. llama.cpp's
own converter (``convert_hf_to_gguf.py``, ``LlamaModel.permute``) applies the same reordering.

:func:`export_quantized` quantizes that file (Q8_0, Q4_0, Q4_K_M) with llama.cpp's own quantizer (``llama_model_quantize`` through ``llama_cpp``), as
``llama-quantize`` would. The k-quants work on rows of 256 weights: a tensor whose rows are not
a multiple of 256 long falls back to another type (llama.cpp's rule: Q4_K → Q5_0, Q6_K → Q8_0),
so llama_15m (384 wide) in Q4_K_M is mostly Q5_0, while llama_100m (768 wide) is Q4_K/Q6_K as
on a large model. The runner reports the bits per weight the file really has.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.exporting.context import ExportContext

__all__ = [
    "GGUF_KEY",
    "GGUF_Q4_0_KEY",
    "GGUF_Q4_K_M_KEY",
    "GGUF_Q8_0_KEY",
    "QUANTIZED_GGUF",
    "export_gguf",
    "export_quantized",
    "gguf_tensors",
    "gguf_vocab",
    "quantize_gguf",
    "rope_deinterleave",
    "rope_interleave",
    "write_gguf",
]

#: The model file keys: the fp32 GGUF file and its copies quantized by llama.cpp.
GGUF_KEY, GGUF_Q8_0_KEY = "gguf", "gguf_q8_0"
GGUF_Q4_0_KEY, GGUF_Q4_K_M_KEY = "gguf_q4_0", "gguf_q4_k_m"
#: Quantized file key → llama.cpp's file type (``LLAMA_FTYPE_MOSTLY_*``). Q8_0: blocks of 32
#: weights with one fp16 scale (8.5 bits per weight); Q4_0: blocks of 32 with one fp16 scale
#: (4.5); Q4_K_M: super-blocks of 256 in Q4_K, half the attention values and feed-forward
#: down projections in Q6_K (about 4.9 on a large model). Norms stay F32 in all three.
QUANTIZED_GGUF = {GGUF_Q8_0_KEY: "Q8_0", GGUF_Q4_0_KEY: "Q4_0", GGUF_Q4_K_M_KEY: "Q4_K_M"}
#: Token ids the zoo's tokenizer gives its two special tokens (``<s>``, ``</s>``).
BOS_ID, EOS_ID = 0, 1
#: llama.cpp's pre-tokenizer matching ``pre_tokenizers.ByteLevel(add_prefix_space=False)``
#: (GPT-2's split regex).
PRE_TOKENIZER = "gpt-2"


def rope_interleave(weight: np.ndarray, heads: int) -> np.ndarray:
    """Rows of a query/key projection (``[heads * d, in]``) from rotate-half order to
    llama.cpp's interleaved order: in each head, row ``j`` (first half) goes to ``2j`` and
    row ``d/2 + j`` to ``2j + 1``."""
    rows = weight.shape[0]
    return (weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def rope_deinterleave(weight: np.ndarray, heads: int) -> np.ndarray:
    """The inverse of :func:`rope_interleave`."""
    rows = weight.shape[0]
    return (weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def gguf_tensors(decoder: Any) -> dict[str, np.ndarray]:
    """llama.cpp's tensor name → float32 array (``[out, in]`` as ``torch.nn.Linear`` holds
    it, which GGUF stores as ``ne = [in, out]``), from a
    :class:`benchlab.zoo.archs.llama.KVDecoder` (``.inner`` the ``LlamaModel``)."""
    shape = decoder.shape
    inner = decoder.inner

    def array(tensor: Any) -> np.ndarray:
        return np.ascontiguousarray(tensor.detach().float().cpu().numpy(), dtype=np.float32)

    tensors = {"token_embd.weight": array(inner.embed_tokens.weight)}
    for index, layer in enumerate(inner.layers):
        attn, mlp = layer.self_attn, layer.mlp
        block = f"blk.{index}"
        tensors.update({
            f"{block}.attn_norm.weight": array(layer.input_layernorm.weight),
            f"{block}.attn_q.weight": rope_interleave(array(attn.q_proj.weight), shape.heads),
            f"{block}.attn_k.weight": rope_interleave(array(attn.k_proj.weight),
                                                      shape.kv_heads),
            f"{block}.attn_v.weight": array(attn.v_proj.weight),
            f"{block}.attn_output.weight": array(attn.o_proj.weight),
            f"{block}.ffn_norm.weight": array(layer.post_attention_layernorm.weight),
            f"{block}.ffn_gate.weight": array(mlp.gate_proj.weight),
            f"{block}.ffn_up.weight": array(mlp.up_proj.weight),
            f"{block}.ffn_down.weight": array(mlp.down_proj.weight),
        })
    tensors["output_norm.weight"] = array(inner.norm.weight)
    tensors["output.weight"] = array(decoder.lm_head.weight)
    return tensors


def gguf_vocab(tokenizer_json: Path, vocab: int) -> tuple[list[str], list[int], list[str]]:
    """``(tokens, token types, merges)`` of a byte-level BPE ``tokenizer.json``, padded to
    ``vocab`` entries with unused ``[PADi]`` tokens as llama.cpp's converter pads.

    Tokens are the byte-level strings themselves (``Ġthe``), as the ``gpt2`` model expects;
    added special tokens are CONTROL, the rest NORMAL.
    """
    import gguf

    data = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    model = data["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"{tokenizer_json}: a BPE tokenizer is needed, not {model.get('type')}")
    by_id = {int(i): token for token, i in model["vocab"].items()}
    special = {}
    for added in data.get("added_tokens", []):
        by_id[int(added["id"])] = added["content"]
        if added.get("special", False):
            special[int(added["id"])] = added["content"]
    if max(by_id) >= vocab:
        raise ValueError(f"the tokenizer has id {max(by_id)}, the model only {vocab} rows")
    tokens: list[str] = []
    types: list[int] = []
    for i in range(vocab):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(int(gguf.TokenType.UNUSED))
        else:
            tokens.append(by_id[i])
            types.append(int(gguf.TokenType.CONTROL if i in special
                             else gguf.TokenType.NORMAL))
    # tokenizers >= 0.20 writes each merge as a pair; older releases as "a b".
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return tokens, types, merges


def write_gguf(decoder: Any, tokenizer_json: Path, target: Path, name: str = "") -> Path:
    """Write ``decoder`` (a :class:`~benchlab.zoo.archs.llama.KVDecoder`) and its tokenizer
    to ``target`` as an all-F32 GGUF file of architecture ``llama``."""
    import gguf

    shape = decoder.shape
    writer = gguf.GGUFWriter(str(target), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    try:
        if name:
            writer.add_name(name)
        writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
        writer.add_context_length(shape.max_positions)
        writer.add_embedding_length(shape.dim)
        writer.add_block_count(shape.layers)
        writer.add_feed_forward_length(shape.hidden)
        writer.add_head_count(shape.heads)
        writer.add_head_count_kv(shape.kv_heads)
        writer.add_rope_dimension_count(shape.head_dim)
        writer.add_rope_freq_base(float(shape.rope_theta))
        writer.add_layer_norm_rms_eps(float(shape.norm_eps))
        writer.add_vocab_size(shape.vocab)
        tokens, types, merges = gguf_vocab(tokenizer_json, shape.vocab)
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre(PRE_TOKENIZER)
        writer.add_token_list(tokens)
        writer.add_token_types(types)
        writer.add_token_merges(merges)
        writer.add_bos_token_id(BOS_ID)
        writer.add_eos_token_id(EOS_ID)
        # benchlab hands token ids over itself; text tools should not get a <s> prepended
        # that the reference never saw.
        writer.add_add_bos_token(False)
        writer.add_add_eos_token(False)
        for tensor_name, array in gguf_tensors(decoder).items():
            writer.add_tensor(tensor_name, array, raw_dtype=gguf.GGMLQuantizationType.F32)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    return target


def export_gguf(ctx: ExportContext) -> dict[str, Path]:
    """``NAME.gguf``: the decoder for llama.cpp, fp32 (see the module's docstring)."""
    return {GGUF_KEY: ctx.once(GGUF_KEY, lambda: _write(ctx, ctx.path(".gguf")))}


def _write(ctx: ExportContext, target: Path) -> Path:
    tokenizer = ctx.extra_files.get("tokenizer")
    if tokenizer is None:
        raise ValueError("a GGUF file needs the decoder's tokenizer (a generative zoo model)")
    return write_gguf(ctx.torch_module(), tokenizer, target, name=ctx.name)


def export_quantized(ctx: ExportContext, key: str) -> dict[str, Path]:
    """``NAME.<type>.gguf``: the fp32 GGUF file quantized by llama.cpp's
    ``llama_model_quantize`` to the file type :data:`QUANTIZED_GGUF` gives ``key``. Made from
    this job's ``NAME.gguf``, written once per job whichever format asks first."""
    source = ctx.once(GGUF_KEY, lambda: _write(ctx, ctx.path(".gguf")))
    file_type = QUANTIZED_GGUF[key]
    target = ctx.path(f".{file_type.lower()}.gguf")
    quantize_gguf(source, target, file_type)
    return {key: target}


def quantize_gguf(source: Path, target: Path, file_type: str, threads: int = 0) -> Path:
    """llama.cpp's quantizer on ``source`` (``file_type``: a ``LLAMA_FTYPE_MOSTLY_*`` suffix,
    ``Q8_0`` say); raises when it reports a failure. The quantizer logs every tensor as a warning;
    ``llama_cpp`` prints llama.cpp's log at the ``llama-cpp-python`` logger's level, so that
    is raised to errors meanwhile (as ``Llama(verbose=False)`` does)."""
    import ctypes
    import logging

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{file_type}")
    params.nthread = threads
    logger = logging.getLogger("llama-cpp-python")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        status = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(),
                                                ctypes.byref(params))
    finally:
        logger.setLevel(level)
    if status != 0:
        Path(target).unlink(missing_ok=True)
        raise RuntimeError(f"llama_model_quantize to {file_type} failed (status {status})")
    print(f"benchlab.exporting.job: {Path(target).name} quantized by llama.cpp to {file_type}",
          file=sys.stderr)
    return target

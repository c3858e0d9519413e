"""The zoo's Llama-architecture decoders defined in code: seeded weights, a tokenizer trained in
code.

No hub: the architecture is ``transformers``' ``LlamaForCausalLM`` (the PyTorch eager
reference every other runtime is checked against) built from a
:class:`~benchlab.exporting.decoder.LlamaShape` with seeded weights; the tokenizer is
:func:`~benchlab.exporting.decoder.train_tokenizer`'s. How a decoder is exported (its
:class:`~benchlab.exporting.decoder.KVDecoder` graph) is the export pipeline's business.
"""

from __future__ import annotations

import torch
from torch import nn

from benchlab.exporting.decoder import LlamaShape

__all__ = ["LLAMA_SHAPES", "llama_15m", "llama_100m"]


#: The zoo's decoders. 15M: the size of the small story-writing models that run on any phone;
#: 100M: a size whose decode is bound by memory bandwidth on a laptop. The larger one groups
#: its key/value heads (4 for 12 query heads), as current Llama models do.
LLAMA_SHAPES: dict[str, LlamaShape] = {
    "llama_15m": LlamaShape(dim=384, layers=5, heads=6, kv_heads=6, hidden=1024),
    "llama_100m": LlamaShape(dim=768, layers=12, heads=12, kv_heads=4, hidden=2048),
}

# Seeded N(0, σ) weights with σ = 0.02 (transformers' default) give logits so flat that
# rounding decides between near-equal tokens, and greedy decoding would part between two
# correct runtimes. A larger output layer spreads the logits (a few nats between the best
# tokens), as a trained model's are, so only a real difference in computation flips a choice.
_INIT_STD = 0.02
_LM_HEAD_STD = 4.0


def _build(shape: LlamaShape, seed: int = 0) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=shape.vocab, hidden_size=shape.dim, intermediate_size=shape.hidden,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads, max_position_embeddings=shape.max_positions,
        rope_theta=shape.rope_theta, rms_norm_eps=shape.norm_eps, tie_word_embeddings=False,
        initializer_range=_INIT_STD, bos_token_id=0, eos_token_id=1, pad_token_id=None,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        generator = torch.Generator().manual_seed(seed + 1)
        model.lm_head.weight.normal_(0.0, _LM_HEAD_STD / shape.dim**0.5, generator=generator)
    model.eval()
    model.llama_shape = shape
    return model


def llama_15m() -> nn.Module:
    """Llama decoder, 384 wide, 5 layers, 6 heads, 8192 tokens: about 15M parameters."""
    return _build(LLAMA_SHAPES["llama_15m"])


def llama_100m() -> nn.Module:
    """Llama decoder, 768 wide, 12 layers, 12 query and 4 key/value heads: about 97M."""
    return _build(LLAMA_SHAPES["llama_100m"])

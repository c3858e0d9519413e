"""Export of the zoo's text generators (runs inside the export process, imports torch).

A generative zoo model's job builds the ``transformers`` model from its entry and writes:

* ``reference`` (``NAME.reference.npz``, :func:`benchlab.runner.generate.save_generative_reference`):
  the eager model's prefill logits on a prompt cut from the shipped corpus, its greedy
  continuation, and the text perplexity is measured on, all as token ids of the tokenizer
  trained in code;
* ``tokenizer`` (``NAME.tokenizer.json``): that tokenizer, for tools that read text;
* the formats: ``decoder_onnx`` (:func:`export_decoder_onnx`), one graph with the key/value
  cache as inputs and outputs, which ONNX Runtime and OpenVINO both run, and its int8 copy
  ``decoder_onnx_int8`` (:func:`export_decoder_onnx_int8`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchlab.exporting.context import ExportContext

__all__ = ["REFERENCE_PROMPT_TOKENS", "REFERENCE_NEW_TOKENS", "decoder_context",
           "export_decoder_onnx", "export_decoder_onnx_int8"]

#: The reference prompt's length and how many greedy tokens the reference continues with.
REFERENCE_PROMPT_TOKENS = 32
REFERENCE_NEW_TOKENS = 32
#: Tokens of the corpus perplexity is measured on (a context every zoo decoder holds).
PERPLEXITY_TOKENS = 512


def decoder_context(job: dict[str, Any], out_dir: Path,
                    build: Any) -> tuple[ExportContext, dict[str, Any]]:
    """The export context of a generative model: the cache-graph module (its example inputs
    hold a non-empty cache, so no export specialises on an empty one), its reference and
    tokenizer written, and its metadata."""
    import torch

    from benchlab.runner.generate import GenerativeReference, save_generative_reference
    from benchlab.exporting.decoder import KVDecoder, corpus_text, train_tokenizer

    model = build(job["entry"])
    # A user's Hugging Face folder brings its tokenizer; the zoo's decoders train theirs.
    own = getattr(model, "tokenizer_json", None)
    if own:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(own)
    else:
        tokenizer = train_tokenizer(model.llama_shape.vocab)
    tokenizer_path = out_dir / f"{job['name']}.tokenizer.json"
    tokenizer.save(str(tokenizer_path))
    ids = np.array(tokenizer.encode(corpus_text()).ids, dtype=np.int64)
    prompt = ids[:REFERENCE_PROMPT_TOKENS]
    with torch.inference_mode():
        logits = model(torch.from_numpy(prompt)[None, :]).logits[0].float().numpy()
        generated = model.generate(torch.from_numpy(prompt)[None, :], do_sample=False,
                                   max_new_tokens=REFERENCE_NEW_TOKENS,
                                   min_new_tokens=REFERENCE_NEW_TOKENS, eos_token_id=None,
                                   pad_token_id=0)
    tokens = generated[0, len(prompt):].numpy()
    reference = out_dir / f"{job['name']}.reference.npz"
    save_generative_reference(reference, GenerativeReference(
        prompt=prompt, logits=logits, tokens=tokens,
        text=ids[:min(PERPLEXITY_TOKENS, model.llama_shape.max_positions)]))
    decoder = KVDecoder(model).eval()
    empty_keys, empty_values = decoder.empty_cache()
    with torch.inference_mode():
        _, keys, values = decoder(torch.from_numpy(prompt[:3])[None, :], empty_keys,
                                  empty_values)
    example = (torch.from_numpy(prompt[3:8])[None, :], keys.clone(), values.clone())
    shape = model.llama_shape
    metadata = {
        "params": int(sum(p.numel() for p in model.parameters())),
        "flops": None,
        "task": job["task"],
        "architecture": {"dim": shape.dim, "layers": shape.layers, "heads": shape.heads,
                         "kv_heads": shape.kv_heads, "hidden": shape.hidden,
                         "vocab": shape.vocab, "max_positions": shape.max_positions},
        "tokenizer_vocab": tokenizer.get_vocab_size(),
    }
    context = ExportContext(name=job["name"], out_dir=out_dir, module=decoder, args=example,
                            input_names=["input_ids", "past_keys", "past_values"],
                            reference=reference, causal_lm=model)
    context.extra_files["tokenizer"] = tokenizer_path
    return context, metadata


def export_decoder_onnx(ctx: ExportContext) -> dict[str, Path]:
    """The decoder as one ONNX graph with its cache as inputs and outputs
    (``NAME.decoder.onnx``): any number of new tokens after any number of cached ones."""
    return {"decoder_onnx": ctx.once("decoder_onnx", lambda: _write_decoder_onnx(ctx))}


def export_decoder_onnx_int8(ctx: ExportContext) -> dict[str, Path]:
    """ONNX Runtime's dynamic int8 quantization of the decoder's matrix products
    (``NAME.decoder.int8.onnx``): per-channel int8 weights (7 bits wide, as the zoo's other
    int8 files: ``quantize.REDUCE_RANGE``), activations quantized per call. The embedding
    table stays fp32. ONNX Runtime and OpenVINO both run it."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from benchlab.exporting.quantize import REDUCE_RANGE

    source = ctx.once("decoder_onnx", lambda: _write_decoder_onnx(ctx))
    target = ctx.path(".decoder.int8.onnx")
    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=REDUCE_RANGE, op_types_to_quantize=["MatMul"])
    return {"decoder_onnx_int8": target}


def _write_decoder_onnx(ctx: ExportContext) -> Path:
    import torch

    from benchlab.runner.kvgraph import GRAPH_INPUTS, GRAPH_OUTPUTS

    shape = ctx.torch_module().shape
    new = torch.export.Dim("new", min=1, max=shape.max_positions)
    past = torch.export.Dim("past", min=0, max=shape.max_positions - 1)
    target = ctx.path(".decoder.onnx")
    torch.onnx.export(ctx.torch_module(), ctx.args, str(target), dynamo=True,
                      external_data=False, input_names=list(GRAPH_INPUTS),
                      output_names=list(GRAPH_OUTPUTS),
                      dynamic_shapes={"input_ids": {1: new}, "past_keys": {3: past},
                                      "past_values": {3: past}})
    return target

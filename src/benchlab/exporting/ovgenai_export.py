"""OpenVINO GenAI models of the text generators (runs inside the export process, imports torch).

``openvino-genai``'s ``LLMPipeline`` runs a *stateful* OpenVINO model: the key/value cache is
held inside the compiled model as variables instead of travelling through its inputs and
outputs, and the model takes ``input_ids``, ``attention_mask`` (every position so far),
``position_ids`` (the new tokens') and ``beam_idx`` (which sequence each batch row continues,
gathered from the cache before use), and returns ``logits``. optimum-intel makes such models
from Hugging Face ones, but its install here would replace benchlab's torch; the same model is
made here from the generator's :class:`~benchlab.exporting.decoder.KVDecoder` (so a user's
Hugging Face Llama takes the path too): the torch module with that signature and the cache as
``past_key_values.N.key``/``present.N.key`` pairs, exported to ONNX, read by OpenVINO, and
made stateful by OpenVINO's own transformation (``apply_make_stateful_transformation``).

Precisions: ``fp32``; ``int8`` and ``int4``, the weights compressed by NNCF
(``nncf.compress_weights``) as optimum-intel's ``--weight-format`` does: int8 asymmetric per
output channel; int4 asymmetric in groups of 128, every matrix product but the embedding
table and the output layer, which NNCF keeps at int8 (its default); a layer whose rows do not
split into groups of 128 takes the largest power of two that divides them (NNCF's ``ADJUST``
fallback).

Each precision is two cache files, the IR and its weights, which the runner's backend links
into a folder as ``openvino_model.xml``/``.bin``. No tokenizer model is written: benchlab
hands the pipeline token ids, as every generative runtime here gets them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from benchlab.exporting.context import ExportContext
from benchlab.exporting.decoder import KVDecoder
from benchlab.frameworks.common import OVGENAI_FILES

__all__ = ["StatefulSignature", "export_ovgenai"]

#: NNCF's int4 group: optimum-intel's default for a model it has no recipe for.
INT4_GROUP = 128
_STEP_INPUTS = ("input_ids", "attention_mask", "position_ids", "beam_idx")


def _cache_names(layers: int) -> tuple[list[str], list[str]]:
    """The cache's input names and the output name each becomes (optimum-intel's)."""
    past = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    return past, [name.replace("past_key_values", "present") for name in past]


class StatefulSignature(torch.nn.Module):
    """The decoder with the signature ``LLMPipeline`` drives, before the cache is made state:
    ``(input_ids [1, T], attention_mask [1, S+T], position_ids [1, T], beam_idx [1],
    past key, past value per layer [1, Hkv, S, d]) → (logits, present key, value per
    layer)``. New token ``i`` attends to the positions up to its own that the mask keeps."""

    def __init__(self, decoder: KVDecoder) -> None:
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor, beam_idx: torch.Tensor,
                *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        pairs = [(past[i].index_select(0, beam_idx), past[i + 1].index_select(0, beam_idx))
                 for i in range(0, len(past), 2)]
        total = past[0].shape[2] + input_ids.shape[1]
        positions = position_ids[0]
        allowed = ((torch.arange(total)[None, :] <= positions[:, None])
                   & (attention_mask[0] != 0)[None, :])
        logits, keys, values = self.decoder.decode(input_ids, positions.float(), allowed, pairs)
        return (logits, *(tensor for pair in zip(keys, values) for tensor in pair))


def _stateful_ir(ctx: ExportContext) -> Path:
    """The fp32 stateful model, ``NAME.ovgenai.xml`` (and ``.bin``)."""
    import openvino as ov
    from openvino._offline_transformations import apply_make_stateful_transformation

    decoder: KVDecoder = ctx.torch_module()
    shape = decoder.shape
    past_names, present_names = _cache_names(shape.layers)
    cached, new = 3, 5  # a non-empty cache, so that nothing specialises on an empty one
    example = (torch.zeros(1, new, dtype=torch.int64),
               torch.ones(1, cached + new, dtype=torch.int64),
               torch.arange(cached, cached + new)[None, :], torch.zeros(1, dtype=torch.int32),
               *(torch.zeros(1, shape.kv_heads, cached, shape.head_dim) for _ in past_names))
    dynamic = torch.export.Dim.DYNAMIC
    onnx_file = ctx.path(".ovgenai.onnx")
    torch.onnx.export(
        StatefulSignature(decoder).eval(), example, str(onnx_file), dynamo=True,
        external_data=False, input_names=[*_STEP_INPUTS, *past_names],
        output_names=["logits", *present_names],
        dynamic_shapes={"input_ids": {1: dynamic}, "attention_mask": {1: dynamic},
                        "position_ids": {1: dynamic}, "beam_idx": None,
                        "past": tuple({2: dynamic} for _ in past_names)})
    model = ov.convert_model(str(onnx_file))
    onnx_file.unlink()
    apply_make_stateful_transformation(model, dict(zip(past_names, present_names)))
    xml = ctx.path(".ovgenai.xml")
    ov.save_model(model, str(xml), compress_to_fp16=False)
    return xml


def _compressed(source: Path, target: Path, precision: str) -> None:
    import nncf
    import openvino as ov

    model = ov.Core().read_model(str(source))
    if precision == "int8":
        compressed = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_ASYM)
    else:
        # A layer whose rows do not split into groups of 128 (a small model's 64-wide ones)
        # gets the largest power of two that divides them, as llama.cpp's k-quants fall back.
        adjust = nncf.AdvancedCompressionParameters(
            group_size_fallback_mode=nncf.GroupSizeFallbackMode.ADJUST)
        compressed = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT4_ASYM,
                                           group_size=INT4_GROUP, ratio=1.0,
                                           advanced_parameters=adjust)
    ov.save_model(compressed, str(target), compress_to_fp16=False)


def export_ovgenai(ctx: ExportContext, precision: str) -> dict[str, Path]:
    """``NAME.ovgenai[.PRECISION].xml`` and its ``.bin``: the stateful model, its weights
    compressed by NNCF for ``int8``/``int4``."""
    ir_key, weights_key = OVGENAI_FILES[precision]
    fp32 = ctx.once("ovgenai_fp32", lambda: _stateful_ir(ctx))
    if precision == "fp32":
        xml = fp32
    else:
        xml = ctx.path(f".ovgenai.{precision}.xml")
        _compressed(fp32, xml, precision)
    print(f"benchlab.exporting.job: {xml.name} made stateful for openvino-genai "
          f"({precision})", file=sys.stderr)
    return {ir_key: xml, weights_key: xml.with_suffix(".bin")}


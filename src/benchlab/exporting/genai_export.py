"""ONNX Runtime GenAI models of the text generators, made by the library's own model builder
(runs inside the export process).

``onnxruntime-genai`` ships its models as a folder: ``genai_config.json`` (the decoder's file
name, its inputs and outputs, the search defaults) beside ``model.onnx`` and its weights. Its
builder (``python -m onnxruntime_genai.models.builder``) writes that folder from a Hugging Face
folder; :func:`export_genai` saves the generator's ``transformers`` model and tokenizer as one
(the zoo's decoders and a user's folder alike), runs the builder for the CPU at the precision
asked, and keeps two files in the artifact cache: the model with its weights inside (a file
the cache can hold on its own) and the config. The runner's backend points a copy of the
config at wherever the model file was staged.

``int4`` is the builder's own weight-only quantization: ``MatMulNBits`` blocks of 32 weights,
symmetric, activations at accuracy level 4 (int8 arithmetic), its defaults for the CPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlab.exporting.context import ExportContext
from benchlab.frameworks.common import GENAI_FILES

__all__ = ["export_genai"]


def _hf_folder(ctx: ExportContext, into: Path) -> Path:
    """The generator's ``transformers`` model and tokenizer as a Hugging Face folder."""
    from transformers import PreTrainedTokenizerFast

    if ctx.causal_lm is None:
        raise ValueError("a GenAI model is built from a text generator's transformers model")
    folder = into / "hf"
    ctx.causal_lm.save_pretrained(str(folder))
    tokenizer = ctx.extra_files.get("tokenizer")
    if tokenizer is None:
        raise ValueError("a GenAI model needs the decoder's tokenizer")
    PreTrainedTokenizerFast(tokenizer_file=str(tokenizer), bos_token="<s>",
                            eos_token="</s>").save_pretrained(str(folder))
    return folder


def export_genai(ctx: ExportContext, precision: str) -> dict[str, Path]:
    """``NAME.genai[.int4].onnx`` and ``NAME.genai[.int4].json``: the GenAI builder's model
    (weights inside) and its ``genai_config.json``."""
    import onnx

    model_key, config_key = GENAI_FILES[precision]
    tag = "" if precision == "fp32" else f".{precision}"
    with tempfile.TemporaryDirectory(dir=ctx.out_dir) as work:
        folder = ctx.once("hf_folder", lambda: _hf_folder(ctx, Path(tempfile.mkdtemp(
            dir=ctx.out_dir))))
        built = Path(work) / "built"
        proc = subprocess.run(
            [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(folder),
             "-o", str(built), "-p", precision, "-e", "cpu", "-c", str(Path(work) / "cache")],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"onnxruntime-genai's builder failed ({precision}): "
                               f"{proc.stderr.strip()[-1500:]}")
        config = json.loads((built / "genai_config.json").read_text())
        decoder = config["model"]["decoder"]
        # The weights into the model file itself: the cache holds each file on its own.
        model_file = ctx.path(f".genai{tag}.onnx")
        onnx.save(onnx.load(str(built / decoder["filename"])), str(model_file))
        decoder["filename"] = model_file.name
        config_file = ctx.path(f".genai{tag}.json")
        config_file.write_text(json.dumps(config, indent=1))
    print(f"benchlab.exporting.job: {model_file.name} built by onnxruntime-genai's builder "
          f"({precision}, cpu)", file=sys.stderr)
    return {model_key: model_file, config_key: config_file}

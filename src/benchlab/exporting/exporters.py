"""One function per export format, sharing the expensive steps through an :class:`ExportContext`.

Each exporter takes the context and returns ``{file_key: path}`` for the files it wrote (the
keys of :data:`benchlab.exporting.formats.FORMAT_FILES`). Heavy packages are imported inside the
exporter that needs them: a job asking for two formats should not pay for importing six
toolchains. Steps several formats need (``torch.export``, the fp32 ONNX file) run once per job
and are memoised on the context, failures included, so a broken ``torch.export`` is reported
by every format built on it without being retried.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from benchlab.exporting.simulate import Simulator

from benchlab.exporting.context import ExportContext

__all__ = [
    "export_aoti",
    "export_onnx",
    "export_decoder_onnx",
    "export_decoder_onnx_int8",
    "export_decoder_pte",
    "export_decoder_pte_8da4w",
    "export_genai_onnx",
    "export_genai_onnx_int4",
    "export_gguf",
    "export_gguf_q4_0",
    "export_gguf_q4_k_m",
    "export_gguf_q8_0",
    "export_onnx_int8",
    "export_openvino",
    "export_ovgenai",
    "export_ovgenai_int4",
    "export_ovgenai_int8",
    "export_pt2",
    "export_pte_portable",
    "export_pte_xnnpack",
    "export_pte_xnnpack_int8",
    "export_tflite",
    "export_torchscript",
]


def export_torchscript(ctx: ExportContext) -> dict[str, Path]:
    """TorchScript by tracing at the example inputs (``NAME.pt``)."""
    import torch

    target = ctx.path(".pt")
    with torch.no_grad():
        # check_trace re-runs the model and compares; the reference check covers that.
        torch.jit.trace(ctx.torch_module(), ctx.args, check_trace=False).save(str(target))
    return {"torchscript": target}


def export_pt2(ctx: ExportContext) -> dict[str, Path]:
    """A ``torch.export`` program saved with ``torch.export.save`` (``NAME.pt2``)."""
    import torch

    target = ctx.path(".pt2")
    torch.export.save(ctx.exported_program(), str(target))
    return {"pt2": target}


def export_aoti(ctx: ExportContext) -> dict[str, Path]:
    """An AOTInductor package (``NAME.aoti.pt2``): C++ compiled ahead of time, about a minute."""
    import torch._inductor

    target = ctx.path(".aoti.pt2")
    torch._inductor.aoti_compile_and_package(ctx.exported_program(), package_path=str(target))
    return {"aoti": target}


def export_onnx(ctx: ExportContext) -> dict[str, Path]:
    """One self-contained ONNX file (``NAME.onnx``), inputs named ``input0..N``."""
    return {"onnx": ctx.fp32_onnx()}


def export_decoder_onnx(ctx: ExportContext) -> dict[str, Path]:
    """A text generator's cache-in, cache-out ONNX graph (:mod:`benchlab.exporting.generative`)."""
    from benchlab.exporting.generative import export_decoder_onnx as export

    return export(ctx)


def export_decoder_onnx_int8(ctx: ExportContext) -> dict[str, Path]:
    """A text generator's decoder graph with int8 matrix products (:mod:`benchlab.exporting.generative`)."""
    from benchlab.exporting.generative import export_decoder_onnx_int8 as export

    return export(ctx)


def export_decoder_pte(ctx: ExportContext) -> dict[str, Path]:
    """A text generator as an ExecuTorch program with its cache inside
    (:mod:`benchlab.exporting.pte_decoder`)."""
    from benchlab.exporting.pte_decoder import export_decoder_pte as export

    return export(ctx)


def export_decoder_pte_8da4w(ctx: ExportContext) -> dict[str, Path]:
    """That program, 8-bit dynamic activations and 4-bit weights
    (:func:`benchlab.exporting.pte_decoder.export_decoder_pte_8da4w`)."""
    from benchlab.exporting.pte_decoder import export_decoder_pte_8da4w as export

    return export(ctx)


def export_gguf(ctx: ExportContext) -> dict[str, Path]:
    """A text generator as one GGUF file for llama.cpp (:mod:`benchlab.exporting.gguf_export`)."""
    from benchlab.exporting.gguf_export import export_gguf as export

    return export(ctx)


def _one_of(module: str, function: str, argument: str,
            doc: str) -> Callable[[ExportContext], dict[str, Path]]:
    """The exporter ``module.function(ctx, argument)``, its module imported on first use: one
    of a family of formats written by one function (the quantized GGUF files by
    :func:`benchlab.exporting.gguf_export.export_quantized`, the GenAI models by
    :func:`benchlab.exporting.genai_export.export_genai`)."""
    def export(ctx: ExportContext) -> dict[str, Path]:
        written: dict[str, Path] = getattr(importlib.import_module(module), function)(
            ctx, argument)
        return written

    export.__doc__ = doc
    return export


def _gguf_quantized(key: str) -> Callable[[ExportContext], dict[str, Path]]:
    return _one_of("benchlab.exporting.gguf_export", "export_quantized", key,
                   f"That GGUF file quantized by llama.cpp ({key}).")


def _genai(precision: str) -> Callable[[ExportContext], dict[str, Path]]:
    return _one_of("benchlab.exporting.genai_export", "export_genai", precision,
                   f"An ONNX Runtime GenAI model ({precision}) built by its builder.")


def _ovgenai(precision: str) -> Callable[[ExportContext], dict[str, Path]]:
    return _one_of("benchlab.exporting.ovgenai_export", "export_ovgenai", precision,
                   f"A stateful OpenVINO model for openvino-genai ({precision}).")


export_genai_onnx = _genai("fp32")
export_genai_onnx_int4 = _genai("int4")
export_gguf_q8_0 = _gguf_quantized("gguf_q8_0")
export_gguf_q4_0 = _gguf_quantized("gguf_q4_0")
export_gguf_q4_k_m = _gguf_quantized("gguf_q4_k_m")
export_ovgenai = _ovgenai("fp32")
export_ovgenai_int8 = _ovgenai("int8")
export_ovgenai_int4 = _ovgenai("int4")


def export_onnx_int8(ctx: ExportContext) -> dict[str, Path]:
    """ONNX Runtime int8 quantization of the fp32 ONNX file (``NAME.int8.onnx``), and for
    torch models its simulated outputs (``NAME.int8.simulated.npz``, see
    :mod:`benchlab.exporting.simulate`)."""
    from benchlab.exporting.quantize import quantize_onnx
    from benchlab.exporting.simulate import onnx_simulator

    target = ctx.path(".int8.onnx")
    quantize_onnx(ctx.fp32_onnx(), target, ctx.calibration)
    written = {"onnx_int8": target}
    written.update(_simulated(ctx, "onnx_int8", target, lambda: onnx_simulator(target)[0]))
    return written


def _simulated(ctx: ExportContext, key: str, model_file: Path,
               simulator: Callable[[], Simulator]) -> dict[str, Path]:
    """``{simulated_<key>: path}``: the simulated outputs of the int8 ``model_file``, the
    recipe (``simulator()``) run on every input set of the reference file.

    Nothing without a reference (ONNX-only models), nor when the recipe cannot be run exactly
    (an op ``onnx.reference`` lacks): the int8 file is worth benchmarking without its error
    split, so that is said on stderr and the export goes on.
    """
    from benchlab.exporting.simulate import simulated_key, simulated_path, write_simulated

    if ctx.reference is None:
        return {}
    target = simulated_path(model_file)
    try:
        write_simulated(ctx.reference, target, simulator())
    except Exception as error:
        target.unlink(missing_ok=True)
        print(f"benchlab.exporting.job: no simulated outputs for {model_file.name}, so no "
              f"quantization/lowering split: {type(error).__name__}: {error}", file=sys.stderr)
        return {}
    return {simulated_key(key): target}


def export_tflite(ctx: ExportContext) -> dict[str, Path]:
    """A LiteRT flatbuffer via ``litert_torch.convert`` (``NAME.tflite``)."""
    import litert_torch

    target = ctx.path(".tflite")
    litert_torch.convert(ctx.torch_module(), ctx.args).export(str(target))
    _check_tflite(target)
    return {"tflite": target}


def _check_tflite(target: Path) -> None:
    """Load the flatbuffer in LiteRT and invoke it once, so an unrunnable file fails here.

    Zeros of each input's own shape and dtype are fed: LiteRT may order inputs differently
    from torch, and this checks that the file runs, not what it computes.
    """
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(target), num_threads=1)
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
    interpreter.invoke()


def _write_pte(program: Any, target: Path, args: tuple[Any, ...]) -> None:
    """Write an ExecuTorch program to ``target``, then load and run it once.

    The XNNPACK partitioner accepts some nodes its runtime compiler then rejects (a static
    slice of an int8 tensor in SSDLite, ExecuTorch 1.4.1), and such a file fails only when a
    benchmark loads it. Running it here turns that into an export failure with a reason.
    """
    from executorch.runtime import Runtime

    target.write_bytes(program.buffer)
    try:
        Runtime.get().load_program(str(target)).load_method("forward").execute(list(args))
    except Exception as error:
        raise RuntimeError(f"the ExecuTorch runtime cannot run the exported program "
                           f"(its C++ log on stderr says why): {error}") from error


def export_pte_xnnpack(ctx: ExportContext) -> dict[str, Path]:
    """ExecuTorch with the XNNPACK delegate (``NAME.xnnpack.pte``)."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    target = ctx.path(".xnnpack.pte")
    lowered = to_edge_transform_and_lower(
        ctx.exported_program(), partitioner=[XnnpackPartitioner()]
    )
    _write_pte(lowered.to_executorch(), target, ctx.args)
    return {"pte_xnnpack": target}


def export_pte_portable(ctx: ExportContext) -> dict[str, Path]:
    """ExecuTorch on its portable (reference C++) kernels, no delegate (``NAME.portable.pte``)."""
    from executorch.exir import to_edge

    target = ctx.path(".portable.pte")
    _write_pte(to_edge(ctx.exported_program()).to_executorch(), target, ctx.args)
    return {"pte_portable": target}


def export_pte_xnnpack_int8(ctx: ExportContext) -> dict[str, Path]:
    """ExecuTorch XNNPACK with PT2E int8 quantization (``NAME.xnnpack-int8.pte``), and the
    fake-quantized model's outputs (``NAME.xnnpack-int8.simulated.npz``)."""
    from benchlab.exporting.quantize import quantize_pt2e_xnnpack
    from benchlab.exporting.simulate import torch_simulator

    target = ctx.path(".xnnpack-int8.pte")
    made = quantize_pt2e_xnnpack(ctx.exported_program(), ctx.args, ctx.calibration)
    _write_pte(made.program, target, ctx.args)
    written = {"pte_xnnpack_int8": target}
    written.update(_simulated(ctx, "pte_xnnpack_int8", target,
                              lambda: torch_simulator(made.fake_quantized)))
    return written


def export_openvino(ctx: ExportContext) -> dict[str, Path]:
    """OpenVINO IR (``NAME.xml`` + ``NAME.bin``) in fp32, from the ONNX file when there is one."""
    import openvino as ov

    onnx_file = ctx.fp32_onnx() if ctx.onnx_source is not None else ctx.onnx_if_made()
    if onnx_file is not None:
        # Converting ONNX takes under a second; tracing the torch module again takes seconds.
        model = ov.convert_model(str(onnx_file))
    else:
        model = ov.convert_model(ctx.torch_module(), example_input=ctx.args)
    xml, weights = ctx.path(".xml"), ctx.path(".bin")
    # compress_to_fp16 defaults to True and would silently halve the weights' precision.
    ov.save_model(model, str(xml), compress_to_fp16=False)
    return {"openvino": xml, "openvino_bin": weights}

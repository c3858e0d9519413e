"""The export formats: everything benchlab knows about each, in one place.

This module imports nothing heavy: benchlab plans exports (and ``benchlab zoo list`` reads
them) without importing torch. The exporters live in :mod:`benchlab.exporting.exporters`,
run by the export process :mod:`benchlab.exporting.job`.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchlab.frameworks.common import GENAI_FILES, OVGENAI_FILES, SIMULATED_PREFIX

__all__ = [
    "ALL_FORMATS",
    "DECODER_FORMATS",
    "DECODER_SOURCES",
    "DEFAULT_FORMATS",
    "EXPORT_PROGRESS_PREFIX",
    "FORMATS",
    "FORMAT_FILES",
    "REFERENCE",
    "ExportFormat",
    "format_of",
]


#: Prefix of the progress lines an export process writes to stderr, one JSON object each
#: (``{"format", "event": "start" | "done" | "failed", "seconds", "cpu_seconds"}``); the parent
#: reads them.
EXPORT_PROGRESS_PREFIX = "BENCHLAB_EXPORT_PROGRESS "


@dataclass(frozen=True, slots=True)
class ExportFormat:
    """One export format of the zoo: everything benchlab knows about it, in one place.

    ``files``: the model file keys it writes (see docs/zoo.md). ``packages``: the
    distributions whose versions decide what it writes (part of its export-cache key).
    ``revision``: bumped when its exporter changes in a way those versions do not capture, so
    only this format is exported again. ``default``: exported unless a model says otherwise.
    ``simulated``: an int8 format that also writes ``simulated_<key>`` beside its file, the
    quantization recipe's exact outputs on the reference's input sets
    (:mod:`benchlab.exporting.simulate`), whenever the model has a reference.
    ``exporter_requires``: (module, distribution, benchlab extra) without which it cannot be
    exported here, found without importing it, as a framework's ``requires``.
    ``from_onnx``: it converts an ONNX file, so ONNX-only models (no PyTorch entry) take it too.
    ``read_by``: the frameworks that run its file: a sweep naming frameworks exports only
    what they read. ``later``: its export takes tens of seconds (XNNPACK lowering, the LiteRT
    converter), so a sweep that measures as exports end does it after every model's quick
    formats (:class:`~benchlab.exporting.session.ExportSession`, ``staged``).
    The exporter is the function ``export_<name>`` of :mod:`benchlab.exporting.exporters`.
    """

    name: str
    files: tuple[str, ...]
    packages: tuple[str, ...] = ("torch",)
    revision: str = ""
    default: bool = True
    simulated: bool = False
    exporter_requires: tuple[str, str, str] = ("torch", "torch", "pytorch")
    from_onnx: bool = False
    read_by: tuple[str, ...] = ("pytorch",)
    later: bool = False

    @property
    def simulated_files(self) -> tuple[str, ...]:
        """The keys of its simulated outputs. Optional: ONNX-only models have no reference
        to take the inputs from, and an export without them still counts."""
        return tuple(SIMULATED_PREFIX + key for key in self.files) if self.simulated else ()

    @property
    def exporter(self) -> str:
        """The name of its function in :mod:`benchlab.exporting.exporters`."""
        return f"export_{self.name}"


_ONNX_PACKAGES = ("torch", "onnx", "onnxscript")
_EXECUTORCH = ("executorch", "executorch", "executorch")
#: OpenVINO GenAI's fp32 model needs OpenVINO to be made; its compressed ones NNCF too
#: (indexed by "compressed").
_OVGENAI = (("openvino", "openvino", "ovgenai"), ("nncf", "nncf", "ovgenai"))
_NNCF: tuple[tuple[str, ...], tuple[str, ...]] = ((), ("nncf",))
#: Every export format, in the order one export job runs them: ONNX before what converts from
#: it (int8, OpenVINO), pt2 before the lowerings that reuse its program, AOTInductor last
#: since it is by far the slowest. AOTInductor (about a minute of C++ compilation per model)
#: and ExecuTorch's portable kernels (seconds per inference on big models) are opt-in per
#: model or via ``benchlab zoo export --formats``.
FORMATS: dict[str, ExportFormat] = {f.name: f for f in (
    ExportFormat("torchscript", ("torchscript",)),
    ExportFormat("pt2", ("pt2",)),
    ExportFormat("onnx", ("onnx",), _ONNX_PACKAGES,
                 exporter_requires=("onnxscript", "onnxscript", "onnxruntime"), from_onnx=True,
                 read_by=("onnxruntime",)),
    ExportFormat("openvino", ("openvino", "openvino_bin"), (*_ONNX_PACKAGES, "openvino"),
                 exporter_requires=("openvino", "openvino", "openvino"), from_onnx=True,
                 read_by=("openvino",)),
    # 2: 7-bit weights (quantize.REDUCE_RANGE), the same on every x86 CPU; 3: simulated outputs
    ExportFormat("onnx_int8", ("onnx_int8",), (*_ONNX_PACKAGES, "onnxruntime"), revision="3",
                 simulated=True, exporter_requires=("onnxruntime", "onnxruntime", "onnxruntime"),
                 from_onnx=True, read_by=("onnxruntime",)),
    ExportFormat("tflite", ("tflite",), ("torch", "litert-torch"),
                 exporter_requires=("litert_torch", "litert-torch", "tflite-export"),
                 read_by=("tflite",), later=True),
    ExportFormat("pte_xnnpack", ("pte_xnnpack",), ("torch", "executorch"),
                 exporter_requires=_EXECUTORCH, read_by=("executorch",), later=True),
    ExportFormat("pte_portable", ("pte_portable",), ("torch", "executorch"), default=False,
                 exporter_requires=_EXECUTORCH, read_by=("executorch",), later=True),
    # 1: simulated outputs
    ExportFormat("pte_xnnpack_int8", ("pte_xnnpack_int8",), ("torch", "executorch", "torchao"),
                 revision="1", simulated=True, exporter_requires=_EXECUTORCH,
                 read_by=("executorch",), later=True),
    ExportFormat("aoti", ("aoti",), default=False),
    # A text generator's decoder, its key/value cache as graph inputs and outputs (ONNX
    # Runtime, OpenVINO); only the zoo's generative models take it.
    ExportFormat("decoder_onnx", ("decoder_onnx",), (*_ONNX_PACKAGES, "transformers",
                                                     "tokenizers"),
                 default=False, exporter_requires=("onnxscript", "onnxscript", "onnxruntime"),
                 read_by=("onnxruntime", "openvino")),
    ExportFormat("decoder_onnx_int8", ("decoder_onnx_int8",),
                 (*_ONNX_PACKAGES, "onnxruntime", "transformers", "tokenizers"), default=False,
                 exporter_requires=("onnxruntime", "onnxruntime", "onnxruntime"),
                 read_by=("onnxruntime", "openvino")),
    # ExecuTorch's decoder program: its key/value cache inside, ExecuTorch's LLM kernels.
    ExportFormat("decoder_pte", ("decoder_pte",), ("torch", "executorch", "transformers",
                                                   "tokenizers"),
                 default=False, exporter_requires=_EXECUTORCH, read_by=("executorch",), later=True),
    # The same, 8-bit dynamic activations and 4-bit weights (ExecuTorch's Llama 8da4w).
    ExportFormat("decoder_pte_8da4w", ("decoder_pte_8da4w",),
                 ("torch", "executorch", "torchao", "transformers", "tokenizers"),
                 default=False, exporter_requires=_EXECUTORCH, read_by=("executorch",), later=True),
    # ONNX Runtime GenAI's model and config, built by its own builder from the generator as
    # a Hugging Face folder (fp32, and its int4 MatMulNBits weights).
    *(ExportFormat(name, (name, config), ("torch", "transformers", "tokenizers", "onnx",
                                          "onnxruntime-genai"),
                   default=False,
                   exporter_requires=("onnxruntime_genai", "onnxruntime-genai", "ortgenai"),
                   read_by=("ortgenai",))
      for name, config in GENAI_FILES.values()),
    # openvino-genai's stateful model (fp32, and its weights compressed by NNCF).
    *(ExportFormat(name, (name, weights),
                   ("torch", "transformers", "tokenizers", *_ONNX_PACKAGES, "openvino",
                    *_NNCF[precision != "fp32"]),
                   default=False, exporter_requires=_OVGENAI[precision != "fp32"],
                   read_by=("ovgenai",))
      for precision, (name, weights) in OVGENAI_FILES.items()),
    # llama.cpp's file, fp32 (written by the gguf package), then quantized by llama.cpp itself;
    # the second reuses the first's file, so it comes after it.
    ExportFormat("gguf", ("gguf",), ("torch", "transformers", "tokenizers", "gguf"),
                 default=False, exporter_requires=("gguf", "gguf", "generative"),
                 read_by=("llamacpp",)),
    *(ExportFormat(key, (key,),
                   ("torch", "transformers", "tokenizers", "gguf", "llama-cpp-python"),
                   default=False,
                   exporter_requires=("llama_cpp", "llama-cpp-python", "llamacpp"),
                   read_by=("llamacpp",))
      for key in ("gguf_q8_0", "gguf_q4_0", "gguf_q4_k_m")),
)}
#: The PyTorch fp32 outputs every export writes beside its files (2: eight input sets).
REFERENCE = ExportFormat("reference", ("reference",), ("torch", "numpy"), revision="2")
#: Format → the model file keys it writes (simulated outputs included).
FORMAT_FILES: dict[str, tuple[str, ...]] = {name: (*f.files, *f.simulated_files)
                                            for name, f in FORMATS.items()}
ALL_FORMATS = tuple(FORMATS)
#: What a zoo model exports to unless it says otherwise.
DEFAULT_FORMATS = tuple(name for name, f in FORMATS.items() if f.default)
#: What a text generator (a Llama decoder, the zoo's or a user's) exports to.
DECODER_FORMATS = ("decoder_onnx", "decoder_onnx_int8", "decoder_pte", "decoder_pte_8da4w",
                   "gguf", "gguf_q8_0", "gguf_q4_0", "gguf_q4_k_m",
                   *(model for model, _ in GENAI_FILES.values()),
                   *(model for model, _ in OVGENAI_FILES.values()))
#: The modules that write a text generator's files: part of its export cache key.
DECODER_SOURCES = ("benchlab.zoo.archs.llama", "benchlab.exporting.generative",
                   "benchlab.exporting.gguf_export", "benchlab.exporting.pte_decoder",
                   "benchlab.exporting.genai_export", "benchlab.exporting.ovgenai_export")


def format_of(name: str) -> ExportFormat:
    """The format called ``name`` (``reference`` included); ``KeyError`` when unknown."""
    return REFERENCE if name == REFERENCE.name else FORMATS[name]

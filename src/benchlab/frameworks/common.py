"""Small helpers shared by the framework adapters (no runtime imports here)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Mapping
from typing import Any

from benchlab.spec.types import ModelDef
from benchlab.schema.availability import Availability

__all__ = [
    "DECODER_ONNX_INT8_KEY",
    "DECODER_ONNX_KEY",
    "GENAI_FILES",
    "GENERATION_TASK",
    "GENERATIVE_FILE_KEYS",
    "OVGENAI_FILES",
    "REFERENCE_KEY",
    "SIMULATED_PREFIX",
    "distribution_availability",
    "is_generative",
    "file_key_with_suffix",
    "file_keys_with_suffix",
    "key_precision",
    "select_file_key",
    "why_not_loop_or_threads",
]

#: The model file key of a reference ``.npz`` (inputs + expected outputs) for accuracy checks.
REFERENCE_KEY = "reference"
#: ``simulated_<key>`` names an ``.npz`` (the reference's layout) with the outputs of the
#: quantization recipe behind the model file ``<key>``, run exactly: the zoo writes one per
#: int8 file, and the runner splits that file's error into quantization and lowering with it.
SIMULATED_PREFIX = "simulated_"
#: The task of a generative model (``model.metadata["task"]``, the zoo's decoders).
GENERATION_TASK = "generation"
#: The zoo's decoder graph with its key/value cache as inputs and outputs (ONNX).
DECODER_ONNX_KEY = "decoder_onnx"
#: Its int8 copy (dynamic quantization of the matrix products).
DECODER_ONNX_INT8_KEY = "decoder_onnx_int8"
#: ONNX Runtime GenAI's models, ``precision`` → (model file key, its ``genai_config`` file
#: key): the builder's fp32 model and its int4 one (``MatMulNBits``, blocks of 32).
GENAI_FILES = {"fp32": ("genai_onnx", "genai_config"),
               "int4": ("genai_onnx_int4", "genai_config_int4")}
#: OpenVINO GenAI's stateful models, ``precision`` → (IR file key, weights file key): fp32
#: and NNCF's int8 and int4.
OVGENAI_FILES = {"fp32": ("ovgenai", "ovgenai_bin"),
                 "int8": ("ovgenai_int8", "ovgenai_int8_bin"),
                 "int4": ("ovgenai_int4", "ovgenai_int4_bin")}
#: Model file keys that only a text generator has: a spec naming one is generative.
GENERATIVE_FILE_KEYS = (DECODER_ONNX_KEY, DECODER_ONNX_INT8_KEY, "gguf", "gguf_q8_0",
                        "gguf_q4_0", "gguf_q4_k_m", "decoder_pte", "decoder_pte_8da4w",
                        *(model for model, _ in GENAI_FILES.values()),
                        *(model for model, _ in OVGENAI_FILES.values()))


def is_generative(model: Any) -> bool:
    """Whether ``model`` (a :class:`~benchlab.spec.types.ModelDef`) generates text: the zoo
    says so in its metadata, a spec by naming a decoder file."""
    return (model.metadata.get("task") == GENERATION_TASK
            or any(key in model.files for key in GENERATIVE_FILE_KEYS))


def why_not_loop_or_threads(framework: str, options: Mapping[str, Any]) -> str | None:
    """An LLM library's ``loop`` (:data:`~benchlab.runner.config.GENERATION_LOOPS`) and
    ``threads`` options checked: why not, or ``None``."""
    from benchlab.runner.config import GENERATION_LOOPS

    loop = str(options.get("loop", GENERATION_LOOPS[0]))
    if loop not in GENERATION_LOOPS:
        return f"{framework} loop must be {' or '.join(GENERATION_LOOPS)}, not {loop!r}"
    threads = options.get("threads")
    if threads is not None and (not str(threads).isdigit() or int(threads) < 1):
        return f"{framework} threads must be a positive integer, not {threads!r}"
    return None


def distribution_availability(
    module: str, distribution: str, extra: str | None = None
) -> Availability:
    """Whether ``module`` can be imported, found without importing it. ``extra`` names the
    benchlab extra that installs it (``None``: the module's name; ``""``: none does, so the
    hint names the distribution itself)."""
    if importlib.util.find_spec(module) is None:
        how = f"benchlab[{extra or module}]" if extra != "" else distribution
        return Availability(ok=False, reason=f"{distribution} is not installed (pip install "
                            f"'{how}')")
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return Availability(ok=True, version=version)


def file_keys_with_suffix(model: ModelDef, suffixes: tuple[str, ...]) -> list[str]:
    """The keys of every model file whose name ends with one of ``suffixes``, in spec order."""
    return [
        key
        for key, ref in model.files.items()
        if key != REFERENCE_KEY and not key.startswith(SIMULATED_PREFIX) and (ref.filename or ref.location).lower().endswith(suffixes)
    ]


def file_key_with_suffix(model: ModelDef, suffixes: tuple[str, ...]) -> str | None:
    """The key of the first model file whose name ends with one of ``suffixes``."""
    keys = file_keys_with_suffix(model, suffixes)
    return keys[0] if keys else None


def key_precision(key: str) -> str:
    """The precision a model file's key says: ``int8`` where the key names it (the zoo's
    ``tflite_int8``, ``pte_xnnpack_int8``), else ``fp32``."""
    return "int8" if "int8" in key.lower() else "fp32"


def select_file_key(
    model: ModelDef,
    options: Mapping[str, Any],
    *,
    preferred: str | None,
    suffixes: tuple[str, ...],
    strict: bool = False,
) -> tuple[str | None, str | None]:
    """Which model file a configuration runs: ``(key, None)`` or ``(None, why not)``.

    An explicit ``file=KEY`` option wins; then the ``preferred`` key (the zoo's naming, e.g.
    ``onnx_int8``); then, unless ``strict`` (a variant such as ``precision=int8`` was asked
    for and must not silently become the fp32 file), the first file whose name ends with one
    of ``suffixes``.
    """
    explicit = options.get("file")
    if explicit is not None:
        if explicit not in model.files:
            return None, f"file={explicit!r} is not among model.files ({', '.join(model.files)})"
        return str(explicit), None
    if preferred is not None and preferred in model.files:
        return preferred, None
    if strict:
        return None, f"no model file keyed {preferred!r} (model.files: {', '.join(model.files)})"
    key = file_key_with_suffix(model, suffixes)
    if key is None:
        return None, f"no {'/'.join(suffixes)} file among model.files (model format {model.format!r})"
    return key, None

"""The ``ortgenai`` framework: the text generators as ``onnxruntime-genai`` ships them, a model
built by its own builder (:mod:`benchlab.exporting.genai_export`) run by its ``Generator``, in
benchlab's runner (``generative.py``). Generative tests only: GenAI has no forward-pass
workload to offer benchlab's other tests."""

from __future__ import annotations

from benchlab.frameworks.common import GENAI_FILES
from benchlab.frameworks.llm_library import LlmLibraryFramework

__all__ = ["OrtGenAiFramework"]


class OrtGenAiFramework(LlmLibraryFramework):
    """Options: ``threads`` (or the test's: ONNX Runtime's intra-op threads), ``precision``
    (``fp32``, the default, or ``int4``: which built model), ``loop`` (``library``, the
    default: GenAI's own ``generate_next_token`` loop; ``benchlab``: benchlab's loop over
    its logits)."""

    name = "ortgenai"
    requires = ("onnxruntime_genai", "onnxruntime-genai", "ortgenai")
    generative_backend = "benchlab.frameworks.ortgenai.generative:OrtGenAiDecoder"
    model_files = GENAI_FILES
    companion = "genai_config"

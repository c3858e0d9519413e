"""The ``ovgenai`` framework: the text generators as ``openvino-genai`` ships them, a stateful
OpenVINO model (:mod:`benchlab.exporting.ovgenai_export`; fp32, or its weights compressed by
NNCF to int8 or int4) run by its ``LLMPipeline``, in benchlab's runner (``generative.py``).
Generative tests only."""

from __future__ import annotations

from benchlab.frameworks.common import OVGENAI_FILES
from benchlab.frameworks.llm_library import LlmLibraryFramework

__all__ = ["OvGenAiFramework"]


class OvGenAiFramework(LlmLibraryFramework):
    """Options: ``threads`` (or the test's: OpenVINO's inference threads), ``precision``
    (``fp32``, the default, ``int8`` or ``int4``: which model), ``loop`` (``library``, the
    default: ``LLMPipeline.generate``, each token at the time the pipeline records producing
    it; ``benchlab``: benchlab's loop over the same compiled model's logits)."""

    name = "ovgenai"
    requires = ("openvino_genai", "openvino-genai", "ovgenai")
    generative_backend = "benchlab.frameworks.ovgenai.generative:OvGenAiDecoder"
    model_files = OVGENAI_FILES
    companion = "weights"

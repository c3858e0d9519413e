"""The ``ovgenai`` framework: the text generators as ``openvino-genai`` ships them, a stateful
OpenVINO model (:mod:`benchlab.exporting.ovgenai_export`; fp32, or its weights compressed by
NNCF to int8 or int4) run by its ``LLMPipeline``, in benchlab's runner (``generative.py``).
Generative tests only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchlab.errors import UsageError
from benchlab.frameworks.common import why_not_loop_or_threads
from benchlab.frameworks.base import Invocation, JobContext, RunnerFramework
from benchlab.spec.types import ModelDef

__all__ = ["OVGENAI_MODELS", "OvGenAiFramework"]

#: ``precision`` → (IR file key, weights file key).
OVGENAI_MODELS = {"fp32": ("ovgenai", "ovgenai_bin"),
                  "int8": ("ovgenai_int8", "ovgenai_int8_bin"),
                  "int4": ("ovgenai_int4", "ovgenai_int4_bin")}


class OvGenAiFramework(RunnerFramework):
    """Options: ``threads`` (or the test's: OpenVINO's inference threads), ``precision``
    (``fp32``, the default, ``int8`` or ``int4``: which model), ``loop`` (``library``, the
    default: ``LLMPipeline.generate``, timed by its streamer; ``benchlab``: benchlab's loop
    over the same compiled model's logits)."""

    name = "ovgenai"
    requires = ("openvino_genai", "openvino-genai", "ovgenai")
    generative_only = True
    generative_backend = "benchlab.frameworks.ovgenai.generative:OvGenAiDecoder"
    generative_file = OVGENAI_MODELS["fp32"][0]
    generative_precisions = {precision: ir for precision, (ir, _) in OVGENAI_MODELS.items()}
    generative_options = frozenset({"threads", "precision", "loop"})

    def why_not_generative(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """The base checks, a known precision, its weights file present, the loop and the
        thread count."""
        precision = str(options.get("precision", "fp32"))
        if precision not in OVGENAI_MODELS:
            return (f"ovgenai precision must be one of {', '.join(OVGENAI_MODELS)}, "
                    f"not {precision!r}")
        why = super().why_not_generative(model, options)
        if why:
            return why
        weights = OVGENAI_MODELS[precision][1]
        if weights not in model.files:
            return f"ovgenai needs the {weights!r} file beside its model, which model.files lacks"
        return why_not_loop_or_threads(self.name, options)

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition of a generative test: the IR and its weights
        staged on the target."""
        if ctx.test.generate is None:
            raise UsageError(f"ovgenai runs generative tests only; test "
                             f"{ctx.test.identifier!r} has no generate block")
        precision = str(ctx.config.options.get("precision", "fp32"))
        weights = self.staged_file(ctx, OVGENAI_MODELS[precision][1])
        return [self.generative_invocation(ctx, {"weights": weights})]


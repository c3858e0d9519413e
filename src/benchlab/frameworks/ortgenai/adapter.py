"""The ``ortgenai`` framework: the text generators as ``onnxruntime-genai`` ships them, a model
built by its own builder (:mod:`benchlab.exporting.genai_export`) run by its ``Generator``, in
benchlab's runner (``generative.py``). Generative tests only: GenAI has no forward-pass
workload to offer benchlab's other tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchlab.errors import UsageError
from benchlab.frameworks.common import why_not_loop_or_threads
from benchlab.frameworks.base import Invocation, JobContext, RunnerFramework
from benchlab.spec.types import ModelDef

__all__ = ["GENAI_MODELS", "OrtGenAiFramework"]

#: ``precision`` → (model file key, config file key): the builder's fp32 model and its int4
#: one (``MatMulNBits``, blocks of 32).
GENAI_MODELS = {"fp32": ("genai_onnx", "genai_config"),
                "int4": ("genai_onnx_int4", "genai_config_int4")}


class OrtGenAiFramework(RunnerFramework):
    """Options: ``threads`` (or the test's: ONNX Runtime's intra-op threads), ``precision``
    (``fp32``, the default, or ``int4``: which built model), ``loop`` (``library``, the
    default: GenAI's own ``generate_next_token`` loop; ``benchlab``: benchlab's loop over
    its logits)."""

    name = "ortgenai"
    requires = ("onnxruntime_genai", "onnxruntime-genai", "ortgenai")
    #: The planner's cue: a forward-pass model is not for GenAI, installed or not.
    generative_only = True
    generative_backend = "benchlab.frameworks.ortgenai.generative:OrtGenAiDecoder"
    generative_file = GENAI_MODELS["fp32"][0]
    generative_precisions = {precision: model for precision, (model, _) in GENAI_MODELS.items()}
    generative_options = frozenset({"threads", "precision", "loop"})

    def why_not_generative(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """The base checks, a known precision, its config file present, a thread count."""
        precision = str(options.get("precision", "fp32"))
        if precision not in GENAI_MODELS:
            return (f"ortgenai precision must be one of {', '.join(GENAI_MODELS)}, "
                    f"not {precision!r}")
        why = super().why_not_generative(model, options)
        if why:
            return why
        config = GENAI_MODELS[precision][1]
        if config not in model.files:
            return f"ortgenai needs the {config!r} file beside its model, which model.files lacks"
        return why_not_loop_or_threads(self.name, options)

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition of a generative test: the model file and its
        config staged on the target."""
        if ctx.test.generate is None:
            raise UsageError(f"ortgenai runs generative tests only; test "
                             f"{ctx.test.identifier!r} has no generate block")
        precision = str(ctx.config.options.get("precision", "fp32"))
        config = self.staged_file(ctx, GENAI_MODELS[precision][1])
        return [self.generative_invocation(ctx, {"genai_config": config})]

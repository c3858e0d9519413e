"""What the frameworks of the LLM libraries share (``ortgenai``, ``ovgenai``): text generators
only; each precision a model file and one companion file the backend reads beside it (GenAI's
``genai_config``, OpenVINO's weights); the ``loop`` and ``threads`` options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchlab.errors import UsageError
from benchlab.frameworks.base import Invocation, JobContext, RunnerFramework
from benchlab.frameworks.common import why_not_loop_or_threads
from benchlab.frameworks.options import THREADS, FrameworkOption, precision_option
from benchlab.runner.config import GENERATION_LOOPS
from benchlab.spec.types import ModelDef

__all__ = ["LOOP", "LlmLibraryFramework"]

#: Who chooses the tokens (:data:`benchlab.runner.config.GENERATION_LOOPS`), read by the
#: runner's generation loop (``runner/generate.py``).
LOOP = FrameworkOption(
    "loop", str, "library: the library's own generation loop chooses the tokens; benchlab: "
    "benchlab's loop over the library's logits", default=GENERATION_LOOPS[0],
    choices=GENERATION_LOOPS)


class LlmLibraryFramework(RunnerFramework):
    """A generative-only framework whose backend loads, per ``precision``, a model file and a
    companion file; subclasses set ``name``, ``requires``, ``generative_backend``,
    ``model_files`` and ``companion``."""

    generative_only = True
    generative_options = frozenset({"threads", "precision", "loop"})
    #: ``precision`` (the first is the default) → (model file key, companion file key).
    model_files: Mapping[str, tuple[str, str]] = {}
    #: The name the backend finds the companion file under (``extra_files``).
    companion = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # The generative planner's file keys follow from ``model_files``: the default
        # precision's model, and each precision's; so do the declared precisions.
        super().__init_subclass__(**kwargs)
        if cls.model_files:
            cls.generative_file = next(iter(cls.model_files.values()))[0]
            cls.generative_precisions = {precision: model for precision, (model, _)
                                         in cls.model_files.items()}
            cls.declared_options = (THREADS, precision_option(
                tuple(cls.model_files), "which model (with its companion file)"), LOOP)

    def why_not_generative(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """A known precision, the base checks, its companion file present, the loop and the
        thread count."""
        precision = str(options.get("precision", "fp32"))
        if precision not in self.model_files:
            return (f"{self.name} precision must be one of {', '.join(self.model_files)}, "
                    f"not {precision!r}")
        why = super().why_not_generative(model, options)
        if why:
            return why
        companion = self.model_files[precision][1]
        if companion not in model.files:
            return (f"{self.name} needs the {companion!r} file beside its model, which "
                    "model.files lacks")
        return why_not_loop_or_threads(self.name, options)

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition of a generative test: the model file and its
        companion staged on the target."""
        if ctx.test.generate is None:
            raise UsageError(f"{self.name} runs generative tests only; test "
                             f"{ctx.test.identifier!r} has no generate block")
        precision = str(ctx.config.options.get("precision", "fp32"))
        staged = self.staged_file(ctx, self.model_files[precision][1])
        return [self.generative_invocation(ctx, {self.companion: staged})]

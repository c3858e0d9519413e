"""What can run on a target without Python (a phone), decided before anything is exported.

A phone runs only native programs: the runners benchlab builds for it (llama.cpp's for text
generators, ExecuTorch's, ONNX Runtime's and LiteRT's for forward passes) and a user's own
tool (``binary=``). Every other framework × model is one "not run" line with its reason,
said by the framework (``why_not_without_python``), never a failed job; and a run whose every device lacks Python
exports only the formats those runners read (:func:`export_readers`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from benchlab.exporting.definition import ModelDefinition
from benchlab.frameworks.base import Framework
from benchlab.frameworks.common import GENERATION_TASK
from benchlab.plugins import FRAMEWORK_GROUP, available_names, load_framework
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import Target

__all__ = ["export_readers", "without_python"]


def without_python(adapter: Framework, model: Any, configs: Sequence[FrameworkConfig]
                   ) -> tuple[list[FrameworkConfig], list[str]]:
    """The configurations that run on a target without Python, and each distinct reason the
    others do not (an adapter that does not say, a plug-in, is not judged)."""
    judge = getattr(adapter, "why_not_without_python", None)
    if judge is None:
        return list(configs), []
    reasons = [judge(model, config.options) for config in configs]
    return ([c for c, why in zip(configs, reasons, strict=True) if not why],
            list(dict.fromkeys(why for why in reasons if why)))


def export_readers(targets: Sequence[Target], configs: Sequence[FrameworkConfig]
                   ) -> Callable[[ModelDefinition], list[str] | None] | list[str] | None:
    """The frameworks whose formats a run exports (None: every framework's).

    With frameworks named, theirs; where every target lacks Python, per model only the
    frameworks that run it there (a text generator's GGUF files for llama.cpp's runner, a
    network's ``.pte``, ``.onnx`` and ``.tflite`` files for the other runners), so a phone
    gets no format it cannot read.
    """
    named = [config.name for config in configs] or None
    if any(target.python_executable() for target in targets):
        return named
    candidates = named or [n for n in available_names(FRAMEWORK_GROUP) if n != "generic"]
    asked: dict[str, list[FrameworkConfig]] = {}
    for name in candidates:
        asked.setdefault(name, [])
    for config in configs:
        if config.options:
            asked[config.name].append(config)

    def readers(definition: ModelDefinition) -> list[str]:
        model = ModelDef(name=definition.name, format="pytorch",
                         metadata={"task": definition.task} if definition.task == GENERATION_TASK
                         else {})
        generative = definition.task == GENERATION_TASK
        found = []
        for name, requested in asked.items():
            adapter = load_framework(name)
            if getattr(adapter, "generative_only", False) and not generative:
                continue  # llama.cpp reads no file of a network
            fits, _ = without_python(adapter, model, requested or [FrameworkConfig(name, {})])
            if fits:
                found.append(name)
        return found

    return readers

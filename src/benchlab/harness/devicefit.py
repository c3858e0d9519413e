"""What can run on a target without Python (a phone), decided before anything is exported.

A phone runs only native programs: the runners benchlab builds for it (llama.cpp's for text
generators, ExecuTorch's, ONNX Runtime's and LiteRT's for forward passes) and a user's own
tool (``binary=``). Every other framework × model is one "not run" line with its reason,
said by the framework (``why_not_without_python``), never a failed job, as is a runner whose
library the device's ARM CPU cannot run (:func:`on_this_arm_cpu`: LiteRT-LM's on a Cortex-A53);
and a run whose every device lacks Python exports only the formats those runners read
(:func:`export_readers`).
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

__all__ = ["ArmFeatures", "device_fit", "export_readers", "on_this_arm_cpu", "without_python"]


class ArmFeatures:
    """A target's ARM CPU features, read once and only when a framework asks: a phone's
    (:meth:`~benchlab.targets.adb.AdbTarget.arm_features`, one shell round trip); None for a
    target that does not say, or a CPU whose features are not listed."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self._read = False
        self._features: frozenset[str] | None = None

    def get(self) -> frozenset[str] | None:
        if not self._read:
            reader = getattr(self._target, "arm_features", None)
            self._features = reader() if reader is not None else None
            self._read = True
        return self._features


def on_this_arm_cpu(adapter: Framework, python: str, configs: Sequence[FrameworkConfig],
                    features: ArmFeatures) -> tuple[list[FrameworkConfig], list[str]]:
    """The configurations whose runner the target's ARM CPU runs, and each distinct reason
    the others cannot (an adapter that does not say, a plug-in, is not judged). The framework
    decides whether the target's features matter (its own runner's library needs one): they
    are read only then, once; where they are not listed, nothing is refused here."""
    judge = getattr(adapter, "why_not_on_arm", None)
    if judge is None:
        return list(configs), []
    reasons = [judge(python, config.options, features.get) for config in configs]
    return ([c for c, why in zip(configs, reasons, strict=True) if not why],
            list(dict.fromkeys(why for why in reasons if why)))


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


def device_fit(adapter: Framework, model: Any, name: str, requested: Sequence[FrameworkConfig],
               python: str, arm: ArmFeatures
               ) -> tuple[list[FrameworkConfig] | None, list[str]]:
    """What of ``requested`` (empty: the framework's defaults) runs on a device whose Python
    is ``python`` (``""``: none) and whose ARM CPU lists ``arm``: the configurations left
    (None: none of them runs there), and each distinct reason for those that do not."""
    asked = list(requested) or [FrameworkConfig(name, {})]
    reasons: list[str] = []
    if not python:
        asked, reasons = without_python(adapter, model, asked)
    if asked:
        asked, more = on_this_arm_cpu(adapter, python, asked, arm)
        reasons += more
    if not asked:
        return None, reasons
    return [c for c in requested if c in asked], reasons


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

    cpus = [ArmFeatures(target) for target in targets]

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
            # ...and whose runner some target's CPU runs (LiteRT's library on an A53: no).
            if fits and (not cpus or any(on_this_arm_cpu(adapter, "", fits, cpu)[0]
                                         for cpu in cpus)):
                found.append(name)
        return found

    return readers

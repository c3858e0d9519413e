"""The built-in model zoo: models defined in code, exported once into the artifact cache.

The zoo is benchlab's default workload: ``benchlab run`` with no spec measures
:data:`DEFAULT_MODELS` on every installed framework. Its models are
:class:`~benchlab.exporting.definition.ModelDefinition` values like a user's (named in
:mod:`benchlab.zoo.registry`), exported by the export pipeline (:mod:`benchlab.exporting`);
this package names them and turns names into definitions and specs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack

from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import UsageError
from benchlab.exporting.definition import ModelDefinition
from benchlab.exporting.session import ExportOptions, ModelExport, export_definitions
from benchlab.exporting.specs import DEFAULT_TEST, spec_of
from benchlab.spec.types import BenchmarkSpec, TestCase
from benchlab.zoo.registry import DEFAULT_MODELS, SMALL_MODELS, ZOO

__all__ = [
    "DEFAULT_MODELS",
    "SMALL_MODELS",
    "ZOO",
    "definitions",
    "export_models",
    "resolve_model_names",
    "spec_document",
    "zoo_specs",
]


def resolve_model_names(names: Sequence[str]) -> list[str]:
    """Expand ``all`` (every model), ``default`` and ``small``; reject unknown names."""
    out: list[str] = []
    for name in names:
        group = {"all": list(ZOO), "default": list(DEFAULT_MODELS),
                 "small": list(SMALL_MODELS)}.get(name, [name])
        out += [n for n in group if n not in out]
    unknown = [n for n in out if n not in ZOO]
    if unknown:
        raise UsageError(f"unknown zoo model(s) {', '.join(unknown)}; known: {', '.join(ZOO)} "
                         "(or all, default, small)")
    return out


def definitions(names: Sequence[str]) -> list[ModelDefinition]:
    """The definitions of the zoo models ``names`` names (``all``, ``default``, ``small``
    expanded)."""
    return [ZOO[name] for name in resolve_model_names(names)]


def export_models(names: Sequence[str], cache: ArtifactCache,
                  **options: Unpack[ExportOptions]) -> list[ModelExport]:
    """Export zoo models by name (:func:`~benchlab.exporting.session.export_definitions`
    of their definitions, as :class:`~benchlab.exporting.session.ExportOptions` says)."""
    return export_definitions(definitions(names), cache, **options)


def zoo_specs(
    names: Sequence[str],
    cache: ArtifactCache,
    test: TestCase | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> list[BenchmarkSpec]:
    """Specs for zoo models, exporting (once) the files their frameworks need."""
    exports = export_models(names, cache, progress=progress)
    return [spec_of(e, cache, test) for e in exports]


def spec_document(export: ModelExport) -> dict[str, Any]:
    """A standalone benchlab spec (JSON-ready) for one exported model, to copy and edit."""
    model = export.model
    return {
        "model": {
            "name": model.name,
            "format": "pytorch" if model.entry else "onnx",
            "description": model.description,
            **({"entry": model.entry} if model.entry else {}),
            "files": {key: {"location": f"file://{path}", "sha256": sha}
                      for key, (path, sha) in sorted(export.files.items())},
        },
        "tests": [{
            "identifier": "default", "warmup": DEFAULT_TEST.warmup, "iter": DEFAULT_TEST.iter,
            "min_time": DEFAULT_TEST.min_time, "repeat": DEFAULT_TEST.repeat,
            "inputs": {f"input{i}": {"shapes": [list(s)], **({"type": d} if d != "float32"
                                                                else {})}
                       for i, (s, d) in enumerate(zip(model.input_shapes, model.dtypes))},
        }],
    }


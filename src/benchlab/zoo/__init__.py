"""The built-in model zoo: models defined in code, exported once into the artifact cache.

The zoo is benchlab's default workload: ``benchlab run`` with no spec measures
:data:`DEFAULT_MODELS` on every installed framework. Each model is exported (in a subprocess,
so benchlab itself never imports torch) to every format its runtimes take; the files are
content-addressed in the artifact cache and indexed by model definition (see
:mod:`benchlab.zoo.cache`), so a second run exports nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchlab.artifacts import ArtifactCache
from benchlab.errors import InfrastructureError, UsageError
from benchlab.spec.types import BenchmarkSpec, FileRef, InputDef, ModelDef, TestCase
from benchlab.zoo.cache import ExportIndex, FormatEntry, format_key, model_fingerprint
from benchlab.zoo.catalog import ALL_FORMATS, ZooModel, format_of
from benchlab.zoo.registry import DEFAULT_MODELS, SMALL_MODELS, ZOO, resolve_onnx_resource

__all__ = [
    "DEFAULT_MODELS",
    "DEFAULT_TEST",
    "SMALL_MODELS",
    "ZOO",
    "ModelExport",
    "ZooModel",
    "export_models",
    "resolve_model_names",
    "spec_document",
    "zoo_specs",
]

# Defaults of the zoo's test: three fresh processes of at least 30 iterations and 0.3 s each.
DEFAULT_TEST = TestCase(identifier="default", warmup=5, iter=30, min_time=0.3, repeat=3)
# One model's exports may include AOTInductor's C++ build; a hung converter still ends.
_EXPORT_TIMEOUT_S = 3600.0


@dataclass(frozen=True, slots=True)
class ModelExport:
    """A model's exported files (model file key → cached path, sha256) and failed formats."""

    model: ZooModel
    fingerprint: str
    files: dict[str, tuple[Path, str]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    exported: tuple[str, ...] = ()  # formats produced by this call (empty: all cache hits)


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


def _missing_exporter(fmt: str) -> str | None:
    """Why a format cannot be exported here, or ``None`` (checked without importing)."""
    import importlib.util

    modules = {"tflite": ("litert_torch", "tflite-export"),
               "pte_xnnpack": ("executorch", "executorch"),
               "pte_xnnpack_int8": ("executorch", "executorch"),
               "pte_portable": ("executorch", "executorch"),
               "openvino": ("openvino", "openvino"), "onnx": ("onnxscript", "onnxruntime"),
               "onnx_int8": ("onnxruntime", "onnxruntime")}
    module, extra = modules.get(fmt, ("torch", "pytorch"))
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed (pip install 'benchlab[{extra}]')"
    return None


def _wanted_formats(model: ZooModel, formats: Sequence[str] | None) -> list[str]:
    wanted = list(formats) if formats else list(model.formats)
    bad = [f for f in wanted if f not in ALL_FORMATS]
    if bad:
        raise UsageError(f"unknown export format(s) {', '.join(bad)}; "
                         f"known: {', '.join(ALL_FORMATS)}")
    if model.entry is None:  # ONNX-only models: only what an .onnx file converts to
        wanted = [f for f in wanted if f in ("onnx", "openvino", "onnx_int8")]
    elif "reference" not in wanted:
        wanted.append("reference")
    return wanted


def _run_exporter(model: ZooModel, formats: list[str], out_dir: Path) -> dict[str, Any]:
    job = {
        "name": model.name, "entry": model.entry, "task": model.task,
        "onnx_resource_path": str(resolve_onnx_resource(model.onnx_resource))
        if model.onnx_resource else None,
        "input_shapes": [list(s) for s in model.input_shapes],
        "input_dtypes": list(model.dtypes), "formats": [f for f in formats if f != "reference"],
        "out_dir": str(out_dir), "seed": 0,
    }
    try:
        proc = subprocess.run([sys.executable, "-m", "benchlab.zoo.export", json.dumps(job)],
                              capture_output=True, text=True, timeout=_EXPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise InfrastructureError(f"exporting {model.name} took over {exc.timeout:.0f} s") from exc
    lines = proc.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else None
    except ValueError:
        report = None
    if proc.returncode != 0 or not isinstance(report, dict):
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        why = f"exporter exited {proc.returncode}: {tail}"
        return {"files": {}, "failed": {f: why for f in formats}, "metadata": {}, "seconds": {}}
    return report


def export_models(
    names: Sequence[str],
    cache: ArtifactCache,
    *,
    formats: Sequence[str] | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[ModelExport]:
    """Export zoo models into the cache (once); returns every model's files and failures.

    ``formats`` replaces each model's own list (``["aoti"]`` adds AOTInductor packages);
    ``force`` re-exports even when the cache holds the files or a remembered failure.
    """
    if not names:
        return []
    index = ExportIndex(cache)
    exports = []
    for name in resolve_model_names(names):
        model = ZOO[name]
        onnx_bytes = (resolve_onnx_resource(model.onnx_resource).read_bytes()
                      if model.onnx_resource else None)
        fingerprint = model_fingerprint(model, onnx_bytes)
        wanted = _wanted_formats(model, formats)
        todo, absent = [], {}
        for fmt in wanted:
            entry = index.get(format_key(fingerprint, fmt))
            if entry is not None and entry.usable() and not force:
                continue
            why = _missing_exporter(fmt)
            if why:
                absent[fmt] = why
            else:
                todo.append(fmt)
        if todo:
            if progress:
                progress(f"exporting {name}: {', '.join(todo)}")
            with tempfile.TemporaryDirectory(prefix="benchlab-zoo-") as tmp:
                report = _run_exporter(model, todo, Path(tmp))
                _index_report(index, cache, fingerprint, todo, report)
            index.save()
        exports.append(_collect(index, model, fingerprint, formats, absent, tuple(todo)))
    return exports


def _index_report(index: ExportIndex, cache: ArtifactCache, fingerprint: str,
                  todo: list[str], report: dict[str, Any]) -> None:
    files: dict[str, str] = report.get("files", {})
    failed: dict[str, str] = report.get("failed", {})
    seconds: dict[str, float] = report.get("seconds", {})
    for fmt in todo:
        keys = format_of(fmt).files
        if fmt in failed or not all(k in files for k in keys):
            reason = failed.get(fmt, "the exporter wrote no file")
            index.put(format_key(fingerprint, fmt), FormatEntry(error=reason))
            continue
        stored = {}
        for key in keys:
            path, sha = cache.put(Path(files[key]))
            stored[key] = {"path": str(path), "sha256": sha}
        index.put(format_key(fingerprint, fmt), FormatEntry(files=stored,
                                                            seconds=seconds.get(fmt)))
    if report.get("metadata"):
        index.put_metadata(fingerprint, report["metadata"])


def _collect(index: ExportIndex, model: ZooModel, fingerprint: str,
             formats: Sequence[str] | None, absent: dict[str, str],
             exported: tuple[str, ...]) -> ModelExport:
    files: dict[str, tuple[Path, str]] = {}
    failures = dict(absent)
    wanted = _wanted_formats(model, formats)
    # Formats exported earlier on request (aoti) are picked up too.
    for fmt in dict.fromkeys([*wanted, *ALL_FORMATS]):
        entry = index.get(format_key(fingerprint, fmt))
        if entry is None:
            continue
        if entry.error is not None:
            if fmt in wanted:
                failures[fmt] = entry.error
            continue
        if entry.usable():
            files.update({k: (Path(v["path"]), v["sha256"]) for k, v in entry.files.items()})
    return ModelExport(model=model, fingerprint=fingerprint, files=files, failures=failures,
                       metadata=index.metadata(fingerprint), exported=exported)


def _spec_of(export: ModelExport, cache: ArtifactCache, test: TestCase) -> BenchmarkSpec:
    model = export.model
    files = {
        key: FileRef(key=key, location=str(path), base_dir=cache.root, sha256=sha,
                     filename=path.name)
        for key, (path, sha) in export.files.items()
    }
    metadata = {"task": model.task, "pretrained": model.pretrained, "zoo": True,
                **{k: v for k, v in export.metadata.items() if k in ("params", "flops")}}
    if export.failures:
        metadata["export_failures"] = dict(export.failures)
    inputs = tuple(InputDef(f"input{i}", s, d)
                   for i, (s, d) in enumerate(zip(model.input_shapes, model.dtypes)))
    return BenchmarkSpec(
        path=Path(f"zoo:{model.name}"),
        model=ModelDef(name=model.name, format="pytorch" if model.entry else "onnx",
                       files=files, entry=model.entry, description=model.description,
                       metadata=metadata),
        tests=(replace(test, inputs=inputs),),
    )


def zoo_specs(
    names: Sequence[str],
    cache: ArtifactCache,
    test: TestCase | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> list[BenchmarkSpec]:
    """Specs for zoo models, exporting (once) the files their frameworks need."""
    exports = export_models(names, cache, progress=progress)
    return [_spec_of(e, cache, test or DEFAULT_TEST) for e in exports]


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


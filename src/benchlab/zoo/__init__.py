"""The built-in model zoo: models defined in code, exported once into the artifact cache.

The zoo is benchlab's default workload: ``benchlab run`` with no spec measures
:data:`DEFAULT_MODELS` on every installed framework. Each model is exported (in a subprocess,
so benchlab itself never imports torch) to every format its runtimes take; the files are
content-addressed in the artifact cache and indexed by model definition (see
:mod:`benchlab.zoo.cache`), so a second run exports nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchlab.artifacts import ArtifactCache
from benchlab.errors import InfrastructureError, UsageError
from benchlab.spec.types import BenchmarkSpec, FileRef, InputDef, ModelDef, TestCase
from benchlab.zoo.cache import (
    ExportIndex,
    FormatEntry,
    file_record,
    format_key,
    model_fingerprint,
)
from benchlab.zoo.catalog import ALL_FORMATS, EXPORT_PROGRESS_PREFIX, ZooModel, format_of
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


def _run_exporter(model: ZooModel, formats: list[str], out_dir: Path,
                  on_event: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Export ``formats`` of ``model`` in a fresh process; its progress lines go to
    ``on_event`` as they come, its report (the last stdout line) is returned."""
    job = {
        "name": model.name, "entry": model.entry, "task": model.task,
        "onnx_resource_path": str(resolve_onnx_resource(model.onnx_resource))
        if model.onnx_resource else None,
        "input_shapes": [list(s) for s in model.input_shapes],
        "input_dtypes": list(model.dtypes), "formats": [f for f in formats if f != "reference"],
        "out_dir": str(out_dir), "seed": 0,
    }
    proc = subprocess.Popen([sys.executable, "-m", "benchlab.zoo.export", json.dumps(job)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tail: deque[str] = deque(maxlen=6)

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith(EXPORT_PROGRESS_PREFIX):
                try:
                    event = json.loads(line[len(EXPORT_PROGRESS_PREFIX):])
                except ValueError:
                    continue
                if on_event is not None:
                    on_event(event)
            elif line.strip():
                tail.append(line.rstrip())

    killed: list[bool] = []

    def kill() -> None:
        killed.append(True)
        proc.kill()

    reader = threading.Thread(target=read_stderr, daemon=True)
    timer = threading.Timer(_EXPORT_TIMEOUT_S, kill)
    reader.start()
    timer.start()
    try:
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.wait()
    finally:
        timer.cancel()
        reader.join(timeout=10)
    if killed:
        raise InfrastructureError(f"exporting {model.name} took over {_EXPORT_TIMEOUT_S:.0f} s")
    lines = out.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else None
    except ValueError:
        report = None
    if proc.returncode != 0 or not isinstance(report, dict):
        why = f"exporter exited {proc.returncode}: " + "\n".join(tail)
        return {"files": {}, "failed": {f: why for f in formats}, "metadata": {}, "seconds": {}}
    return report


def default_export_workers() -> int:
    """How many export processes run at once: two where the machine has two cores or more.

    Exports run before any measurement, so they may share the machine; more than two
    mostly trade memory (a torch export process takes 1-2 GiB) for little time.
    """
    return max(1, min(2, os.cpu_count() or 1))


class _ExportProgress:
    """Lines saying which model and format is exporting, and how long each took."""

    def __init__(self, progress: Callable[[str], None] | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def say(self, text: str) -> None:
        if self.progress is not None:
            with self.lock:
                self.progress(f"[{time.monotonic() - self.started:4.0f} s] {text}")

    def event(self, model: str) -> Callable[[dict[str, Any]], None]:
        def on_event(event: dict[str, Any]) -> None:
            fmt, what = event.get("format", "?"), event.get("event")
            if what == "start":
                self.say(f"exporting {model}: {fmt} …")
                return
            with self.lock:
                self.done += 1
                done = self.done
            verb = "failed after" if what == "failed" else "done in"
            self.say(f"exported {model}: {fmt} {verb} {float(event.get('seconds') or 0):.1f} s "
                     f"({done}/{self.total} formats)")
        return on_event


def export_models(
    names: Sequence[str],
    cache: ArtifactCache,
    *,
    formats: Sequence[str] | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    workers: int | None = None,
) -> list[ModelExport]:
    """Export zoo models into the cache (once); returns every model's files and failures.

    ``formats`` replaces each model's own list (``["aoti"]`` adds AOTInductor packages);
    ``force`` re-exports even when the cache holds the files or a remembered failure.
    Up to ``workers`` models export at once, each in its own process (default:
    :func:`default_export_workers`); ``progress`` gets a line as each format starts and ends.
    """
    if not names:
        return []
    index = ExportIndex(cache)
    planned: list[tuple[ZooModel, str, list[str], dict[str, str]]] = []
    for name in resolve_model_names(names):
        model = ZOO[name]
        onnx_bytes = (resolve_onnx_resource(model.onnx_resource).read_bytes()
                      if model.onnx_resource else None)
        fingerprint = model_fingerprint(model, onnx_bytes)
        todo, absent = [], {}
        for fmt in _wanted_formats(model, formats):
            entry = index.get(format_key(fingerprint, fmt))
            if entry is not None and entry.usable() and not force:
                continue
            why = _missing_exporter(fmt)
            if why:
                absent[fmt] = why
            else:
                todo.append(fmt)
        planned.append((model, fingerprint, todo, absent))
    busy = [(model, fingerprint, todo) for model, fingerprint, todo, _ in planned if todo]
    at_once = min(workers or default_export_workers(), max(len(busy), 1))
    shown = _ExportProgress(progress, sum(len([f for f in todo if f != "reference"])
                                          for _, _, todo in busy))
    if busy:
        shown.say(f"exporting {len(busy)} model(s), {shown.total} format(s), {at_once} at a "
                  "time (once: later runs reuse the files)")
    index_lock = threading.Lock()

    def export_one(model: ZooModel, fingerprint: str, todo: list[str]) -> None:
        with tempfile.TemporaryDirectory(prefix="benchlab-zoo-") as tmp:
            report = _run_exporter(model, todo, Path(tmp), shown.event(model.name))
            with index_lock:  # one writer of the cache and its index at a time
                _index_report(index, cache, fingerprint, todo, report)
                index.save()

    with ThreadPoolExecutor(max_workers=at_once) as pool:
        for future in [pool.submit(export_one, *job) for job in busy]:
            future.result()
    return [_collect(index, model, fingerprint, formats, absent, tuple(todo))
            for model, fingerprint, todo, absent in planned]


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
            stored[key] = file_record(*cache.put(Path(files[key])))
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


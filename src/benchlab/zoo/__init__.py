"""The built-in model zoo: models defined in code, exported once into the artifact cache.

The zoo is benchlab's default workload: ``benchlab run`` with no spec measures
:data:`DEFAULT_MODELS` on every installed framework. Each model is exported (in a subprocess,
so benchlab itself never imports torch) to every format its runtimes take; the files are
content-addressed in the artifact cache and indexed by model definition (see
:mod:`benchlab.zoo.cache`), so a second run exports nothing.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchlab.artifacts import ArtifactCache
from benchlab.errors import UsageError
from benchlab.frameworks.common import GENERATION_TASK, distribution_availability
from benchlab.generation import DEFAULT_GENERATION, Generation
from benchlab.spec.types import BenchmarkSpec, FileRef, InputDef, ModelDef, TestCase
from benchlab.zoo.cache import (
    ExportIndex,
    FormatEntry,
    file_record,
    format_key,
    model_fingerprint,
)
from benchlab.zoo.catalog import ALL_FORMATS, ZooModel, format_of
from benchlab.zoo.pipeline import (
    ExportProgress,
    PausableProcesses,
    default_export_workers,
    run_exporter,
)
from benchlab.zoo.registry import DEFAULT_MODELS, SMALL_MODELS, ZOO, resolve_onnx_resource

__all__ = [
    "DEFAULT_GENERATIVE_TEST",
    "DEFAULT_MODELS",
    "DEFAULT_TEST",
    "ExportSession",
    "SMALL_MODELS",
    "ZOO",
    "ModelExport",
    "ZooModel",
    "export_models",
    "generative_tests",
    "resolve_model_names",
    "spec_document",
    "spec_of",
    "zoo_specs",
]

# Defaults of the zoo's test: five fresh processes of at least 30 iterations and 0.3 s each.
# Five, not three: the interval that predicts the next run is t(k-1)·√(2/k) times the spread
# of the processes, 3.51 with three and 1.76 with five, and with three the lab's flags missed
# a 12% slowdown in 3 of 5 runs (docs/performance.md §11).
DEFAULT_TEST = TestCase(identifier="default", warmup=5, iter=30, min_time=0.3, repeat=5)
# A generative zoo model's test: P = 128, G = 64 at depth 0 (docs/generative.md); each
# iteration is a whole generation, so fewer of them, and one warm-up generation keeps the
# cold start (first_inference) out of TTFT.
DEFAULT_GENERATIVE_TEST = TestCase(identifier=f"generate[{DEFAULT_GENERATION.label}]",
                                   warmup=1, iter=5, min_time=0.0, repeat=5,
                                   generate=DEFAULT_GENERATION)


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
    return distribution_availability(*format_of(fmt).exporter_requires).reason or None


def _wanted_formats(model: ZooModel, formats: Sequence[str] | None,
                    readers: Sequence[str] | None = None) -> list[str]:
    """What to export of ``model``: ``formats`` or its own, only those ``readers`` (framework
    names; ``None``: every framework) run, and the reference of a PyTorch model."""
    wanted = list(formats) if formats else list(model.formats)
    bad = [f for f in wanted if f not in ALL_FORMATS]
    if bad:
        raise UsageError(f"unknown export format(s) {', '.join(bad)}; "
                         f"known: {', '.join(ALL_FORMATS)}")
    if readers is not None:
        wanted = [f for f in wanted if set(format_of(f).read_by) & set(readers)]
    if model.entry is None:  # ONNX-only models: only what an .onnx file converts to
        wanted = [f for f in wanted if format_of(f).from_onnx]
    if "reference" not in wanted:
        wanted.append("reference")
    return wanted


@dataclass(frozen=True, slots=True)
class _Planned:
    model: ZooModel
    fingerprint: str
    wanted: tuple[str, ...]  # formats the sweep reads ("reference" included)
    todo: tuple[str, ...]  # formats to export now ("reference" included)
    absent: dict[str, str]  # format → why it cannot be exported here


class ExportSession:
    """The exports of some models (the zoo's by name, a user's by definition), handed out
    model by model as each one ends.

    Planning (on construction) only reads the index: :attr:`fingerprints` is known before
    anything runs. :meth:`batches` yields first the models that need no export, then each
    model (or models) whose export has just ended. With ``pause=True`` every other export is
    stopped while the caller holds a batch (it measures it), and continues when the caller
    asks for the next; exports never run during a measurement. Use as a context manager:
    leaving it kills exports still running. ``readers`` (framework names) limits the exports
    to the formats they run.
    """

    def __init__(self, names: Sequence[str | ZooModel], cache: ArtifactCache, *,
                 formats: Sequence[str] | None = None, force: bool = False,
                 progress: Callable[[str], None] | None = None,
                 workers: int | None = None, readers: Sequence[str] | None = None) -> None:
        self._cache, self._formats, self._force = cache, formats, force
        self._readers = readers
        self._index = ExportIndex(cache)
        # A user's model comes as its definition (benchlab.usermodels); the zoo's by name.
        zoo = resolve_model_names([n for n in names if isinstance(n, str)])
        self._planned = [self._plan(ZOO[name]) for name in zoo] + [
            self._plan(model) for model in names if isinstance(model, ZooModel)]
        busy = [p for p in self._planned if p.todo]
        self._workers = min(workers or default_export_workers(), max(len(busy), 1))
        self._shown = ExportProgress(progress, sum(
            len([f for f in p.todo if f != "reference"]) for p in busy))
        self._processes = PausableProcesses()
        self._index_lock = threading.Lock()

    def _plan(self, model: ZooModel) -> _Planned:
        onnx_bytes = (resolve_onnx_resource(model.onnx_resource).read_bytes()
                      if model.onnx_resource else None)
        fingerprint = model_fingerprint(model, onnx_bytes)
        todo, absent = [], {}
        wanted = _wanted_formats(model, self._formats, self._readers)
        for fmt in wanted:
            if not self._needs_export(fingerprint, fmt):
                continue
            why = _missing_exporter(fmt)
            if why:
                absent[fmt] = why
            else:
                todo.append(fmt)
        return _Planned(model, fingerprint, tuple(wanted), tuple(todo), absent)

    @property
    def fingerprints(self) -> dict[str, str]:
        """Model name → the fingerprint of its definition (what its export cache key is)."""
        return {p.model.name: p.fingerprint for p in self._planned}

    def __enter__(self) -> ExportSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self._processes.close()

    def _export(self, planned: _Planned) -> ModelExport:
        # Another process sharing the cache (a second run, parallel test workers) may be
        # exporting this model now: wait for it, then export only what it left undone.
        with self._cache.exclusive(f"zoo-export-{planned.fingerprint}"):
            with self._index_lock:
                self._index.reload()
                todo = [fmt for fmt in planned.todo
                        if self._needs_export(planned.fingerprint, fmt)]
            if not todo:
                self._shown.say(f"{planned.model.name}: exported meanwhile by another process "
                                "sharing the cache")
                return replace(self._collect(planned), exported=())
            with tempfile.TemporaryDirectory(prefix="benchlab-zoo-") as tmp:
                report = run_exporter(planned.model, todo, Path(tmp), self._processes,
                                      self._shown.event(planned.model.name))
                # Copying into the cache is disk work: never while a measurement runs.
                with self._processes.running(), self._index_lock:
                    _index_report(self._index, self._cache, planned.fingerprint, todo, report)
                    self._index.save()
        return replace(self._collect(planned), exported=tuple(todo))

    def _needs_export(self, fingerprint: str, fmt: str) -> bool:
        """Whether ``fmt`` must be exported: forced, or the index has no usable entry for it."""
        entry = self._index.get(format_key(fingerprint, fmt))
        return self._force or entry is None or not entry.usable()

    def _collect(self, planned: _Planned) -> ModelExport:
        return _collect(self._index, planned.model, planned.fingerprint, planned.wanted,
                        planned.absent, planned.todo)

    def cached(self) -> list[ModelExport]:
        """The models whose every format is in the cache already: ready without an export."""
        return [self._collect(p) for p in self._planned if not p.todo]

    def batches(self, *, pause: bool = False,
                include_cached: bool = True) -> Iterator[list[ModelExport]]:
        """Lists of finished models: the cached ones first (unless ``include_cached`` is
        False, for a caller that took them from :meth:`cached`), then each export as it
        ends."""
        ready = self.cached() if include_cached else []
        busy = [p for p in self._planned if p.todo]
        if ready:
            yield ready
        if not busy:
            return
        self._shown.say(f"exporting {len(busy)} model(s), {self._shown.total} format(s), "
                        f"{self._workers} at a time (once: later runs reuse the files)")
        with ThreadPoolExecutor(max_workers=self._workers) as pool:
            # When the caller measures as models come, the first one exports alone: on two
            # cores one export alone takes about half as long as two side by side, so the
            # first result comes sooner; the others then share the machine as before.
            first, rest = (busy[:1], busy[1:]) if pause and len(busy) > 1 else (busy, [])
            pending = {pool.submit(self._export, p) for p in first}
            try:
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    batch = [future.result() for future in finished]
                    if pause and (pending or rest):
                        self._processes.pause()
                        if pending:
                            self._shown.say(
                                f"{len(pending)} export(s) paused while "
                                f"{', '.join(e.model.name for e in batch)} is measured")
                    yield batch
                    if self._processes.paused:
                        self._processes.resume()
                    pending |= {pool.submit(self._export, p) for p in rest}
                    rest = []
            finally:
                self._processes.close()


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
    with ExportSession(names, cache, formats=formats, force=force, progress=progress,
                       workers=workers) as session:
        done = {e.model.name: e for batch in session.batches() for e in batch}
    return [done[name] for name in session.fingerprints]


def _index_report(index: ExportIndex, cache: ArtifactCache, fingerprint: str,
                  todo: list[str], report: dict[str, Any]) -> None:
    files: dict[str, str] = report.get("files", {})
    failed: dict[str, str] = report.get("failed", {})
    seconds: dict[str, float] = report.get("seconds", {})
    for fmt in todo:
        spec = format_of(fmt)
        if fmt in failed or not all(k in files for k in spec.files):
            reason = failed.get(fmt, "the exporter wrote no file")
            index.put(format_key(fingerprint, fmt), FormatEntry(error=reason))
            continue
        stored = {}
        # Simulated outputs are kept when written: models without a reference have none.
        for key in [*spec.files, *(k for k in spec.simulated_files if k in files)]:
            stored[key] = file_record(*cache.put(Path(files[key])))
        index.put(format_key(fingerprint, fmt), FormatEntry(files=stored,
                                                            seconds=seconds.get(fmt)))
    if report.get("metadata"):
        index.put_metadata(fingerprint, report["metadata"])


def _collect(index: ExportIndex, model: ZooModel, fingerprint: str,
             wanted: Sequence[str], absent: dict[str, str],
             exported: tuple[str, ...]) -> ModelExport:
    files: dict[str, tuple[Path, str]] = {}
    failures = dict(absent)
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


def generative_tests(test: TestCase, generations: Sequence[Generation] = ()
                     ) -> tuple[TestCase, ...]:
    """One copy of a generative ``test`` per workload of ``generations`` (default: the
    test's own, else :data:`~benchlab.generation.DEFAULT_GENERATION`)."""
    return tuple(replace(test, identifier=f"generate[{g.label}]", generate=g)
                 for g in (generations or (test.generate or DEFAULT_GENERATION,)))


def spec_of(export: ModelExport, cache: ArtifactCache, test: TestCase | None = None, *,
            generations: Sequence[Generation] = (),
            own_tests: Sequence[TestCase] = ()) -> BenchmarkSpec:
    """The spec of an exported model: its files in the cache, ``test`` (default
    :data:`DEFAULT_TEST`) with the model's inputs. A text generator gets one test per
    workload of ``generations`` (default: :data:`DEFAULT_GENERATIVE_TEST`'s). ``own_tests``
    (a user's spec's own) replace them all."""
    model = export.model
    generative = model.task == GENERATION_TASK
    test = test or (DEFAULT_GENERATIVE_TEST if generative else DEFAULT_TEST)
    if generative:
        tests = generative_tests(test, generations)
    else:
        tests = (test,)
    tests = tuple(own_tests) or tests
    files = {
        key: FileRef(key=key, location=str(path), base_dir=cache.root, sha256=sha,
                     filename=path.name)
        for key, (path, sha) in export.files.items()
    }
    metadata = {"task": model.task, "pretrained": model.pretrained, "zoo": not model.given,
                **{k: v for k, v in export.metadata.items()
                   if k in ("params", "flops", "inputs")}}
    if model.given:
        metadata["given"] = model.given
    if export.failures:
        metadata["export_failures"] = dict(export.failures)
    # An ONNX file given without shapes: the ones the export read from the graph.
    shapes = model.input_shapes or tuple(tuple(s) for s in export.metadata.get("input_shapes", ()))
    dtypes = model.input_dtypes or tuple(export.metadata.get("input_dtypes", ())) or tuple(
        "float32" for _ in shapes)
    inputs = tuple(InputDef(f"input{i}", s, d) for i, (s, d) in enumerate(zip(shapes, dtypes)))
    return BenchmarkSpec(
        path=Path(model.given or f"zoo:{model.name}"),
        model=ModelDef(name=model.name, format="pytorch" if model.entry else "onnx",
                       files=files, entry=model.entry, description=model.description,
                       metadata=metadata),
        tests=tuple(replace(t, inputs=inputs) if inputs else t for t in tests),
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


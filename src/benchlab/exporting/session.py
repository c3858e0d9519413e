"""Exporting models into the artifact cache: :class:`ExportSession` plans every model's
formats against the cache's index, runs the export processes (:mod:`benchlab.exporting.pipeline`)
and hands the models out as each one ends; :func:`export_definitions` does it all at once.

Each model is exported (in a subprocess, so benchlab itself never imports torch) to every
format its runtimes take; the files are content-addressed in the artifact cache and indexed by
model definition (see :mod:`benchlab.exporting.cache`), so a second run exports nothing.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict, Unpack

from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import UsageError
from benchlab.exporting.cache import (
    ExportIndex,
    FormatEntry,
    file_record,
    format_key,
    model_fingerprint,
)
from benchlab.exporting.definition import ModelDefinition, resolve_onnx_resource
from benchlab.exporting.formats import ALL_FORMATS, format_of
from benchlab.exporting.pipeline import (
    ExportProgress,
    PausableProcesses,
    default_export_workers,
    run_exporter,
)
from benchlab.frameworks.common import distribution_availability
from benchlab.plugins import FRAMEWORK_GROUP, available_names

__all__ = ["ExportSession", "ModelExport", "export_definitions"]


@dataclass(frozen=True, slots=True)
class ModelExport:
    """A model's exported files (model file key → cached path, sha256) and failed formats."""

    model: ModelDefinition
    fingerprint: str
    files: dict[str, tuple[Path, str]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    exported: tuple[str, ...] = ()  # formats produced by this call (empty: all cache hits)
    #: Frameworks not to plan with this export: in a staged session, those whose files come
    #: in the model's other stage (:attr:`ExportSession.staged`).
    elsewhere: tuple[str, ...] = ()


def _missing_exporter(fmt: str) -> str | None:
    """Why a format cannot be exported here, or ``None`` (checked without importing)."""
    return distribution_availability(*format_of(fmt).exporter_requires).reason or None


def _wanted_formats(model: ModelDefinition, formats: Sequence[str] | None,
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
    model: ModelDefinition
    fingerprint: str
    wanted: tuple[str, ...]  # formats the sweep reads ("reference" included)
    todo: tuple[str, ...]  # formats to export now ("reference" included)
    absent: dict[str, str]  # format → why it cannot be exported here


class ExportOptions(TypedDict, total=False):
    """How models are exported, as :class:`ExportSession`, :func:`export_definitions` and
    :func:`benchlab.zoo.export_models` take it."""

    #: Replaces each model's own list of formats (``["aoti"]`` adds AOTInductor packages).
    formats: Sequence[str] | None
    #: Re-export even when the cache holds the files or a remembered failure.
    force: bool
    #: Gets a line as each format starts and ends.
    progress: Callable[[str], None] | None
    #: How many models export at once, each in its own process (default:
    #: :func:`~benchlab.exporting.pipeline.default_export_workers`).
    workers: int | None


class ExportSession:
    """The exports of some models (the zoo's, a user's: :class:`ModelDefinition`), handed
    out model by model as each one ends.

    Planning (on construction) only reads the index: :attr:`fingerprints` is known before
    anything runs. :meth:`batches` yields first the models that need no export, then each
    model (or models) whose export has just ended. With ``pause=True`` every other export is
    stopped while the caller holds a batch (it measures it), and continues when the caller
    asks for the next; exports never run during a measurement. Use as a context manager:
    leaving it kills exports still running. ``readers`` (framework names, or a function of
    the model giving them: a phone's runners differ by kind of model) limits the exports to
    the formats they run.

    ``staged``: each model comes twice, first with the formats that export in seconds (its
    ``elsewhere`` naming the frameworks that wait for the rest), then, after every model's
    first stage, with the slow ones (:attr:`ExportFormat.later`: LiteRT, ExecuTorch), its
    ``elsewhere`` naming every other framework. The first cells reach the screen after
    seconds of export instead of after a whole model's minute.
    """

    def __init__(self, models: Sequence[ModelDefinition], cache: ArtifactCache, *,
                 readers: (Sequence[str] | Callable[[ModelDefinition], Sequence[str] | None]
                           | None) = None, staged: bool = False,
                 **options: Unpack[ExportOptions]) -> None:
        formats, progress, workers = (options.get("formats"), options.get("progress"),
                                      options.get("workers"))
        self._cache, self._formats, self._force = cache, formats, options.get("force", False)
        self._readers, self.staged = readers, staged
        self._index = ExportIndex(cache)
        self._planned = [self._plan(model) for model in models]
        busy = [p for p in self._planned if p.todo]
        self._workers = min(workers or default_export_workers(), max(len(busy), 1))
        self._shown = ExportProgress(progress, sum(
            len([f for f in p.todo if f != "reference"]) for p in busy))
        self._processes = PausableProcesses()
        self._index_lock = threading.Lock()

    def _plan(self, model: ModelDefinition) -> _Planned:
        onnx_bytes = (resolve_onnx_resource(model.onnx_resource).read_bytes()
                      if model.onnx_resource else None)
        fingerprint = model_fingerprint(model, onnx_bytes)
        todo, absent = [], {}
        readers = self._readers(model) if callable(self._readers) else self._readers
        wanted = _wanted_formats(model, self._formats, readers)
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

    def _export(self, planned: _Planned, formats: tuple[str, ...],
                elsewhere: tuple[str, ...] = ()) -> ModelExport:
        # Another process sharing the cache (a second run, parallel test workers) may be
        # exporting this model now: wait for it, then export only what it left undone.
        with self._cache.exclusive(f"zoo-export-{planned.fingerprint}"):
            with self._index_lock:
                self._index.reload()
                todo = [fmt for fmt in formats if self._needs_export(planned.fingerprint, fmt)]
            if not todo:
                self._shown.say(f"{planned.model.name}: exported meanwhile by another process "
                                "sharing the cache")
                return _in_stage(replace(self._collect(planned), exported=()), elsewhere)
            with tempfile.TemporaryDirectory(prefix="benchlab-zoo-") as tmp:
                log = self._cache.root / "export-logs" / f"{planned.model.name}.log"
                report = run_exporter(planned.model, todo, Path(tmp), self._processes,
                                      self._shown.event(planned.model.name), log=log)
                if report.get("failed"):
                    self._shown.say(f"{planned.model.name}: the exporters' full output is in "
                                    f"{log}")
                # Copying into the cache is disk work: never while a measurement runs.
                with self._processes.running(), self._index_lock:
                    _index_report(self._index, self._cache, planned.fingerprint, todo, report)
                    self._index.save()
        return _in_stage(replace(self._collect(planned), exported=tuple(todo)), elsewhere)

    def _needs_export(self, fingerprint: str, fmt: str) -> bool:
        """Whether ``fmt`` must be exported: forced, or the index has no usable entry for it."""
        entry = self._index.get(format_key(fingerprint, fmt))
        return self._force or entry is None or not entry.usable()

    def _collect(self, planned: _Planned) -> ModelExport:
        return _collect(self._index, planned.model, planned.fingerprint, planned.wanted,
                        planned.absent, planned.todo)

    def _stages(self, planned: _Planned) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """The model's exports still to do, as (formats, frameworks planned elsewhere): one
        for everything, or in a staged session its quick formats, then its later ones."""
        if not self.staged:
            return [(planned.todo, ())] if planned.todo else []
        later = {f for f in planned.wanted if format_of(f).later}
        slow = tuple(f for f in planned.todo if f in later)
        if not slow:
            return [(planned.todo, ())] if planned.todo else []
        waiting = tuple(sorted({r for f in later for r in format_of(f).read_by}))
        others = tuple(sorted(set(available_names(FRAMEWORK_GROUP)) - set(waiting)))
        quick = tuple(f for f in planned.todo if f not in later)
        return [(quick, waiting), (slow, others)]

    def cached(self) -> list[ModelExport]:
        """The models ready without an export: every format in the cache already, or, in a
        staged session, every quick one (the frameworks of the rest planned later)."""
        ready = []
        for planned in self._planned:
            stages = self._stages(planned)
            if not planned.todo:
                ready.append(self._collect(planned))
            elif stages and not stages[0][0]:
                ready.append(_in_stage(self._collect(planned), stages[0][1]))
        return ready

    def batches(self, *, pause: bool = False,
                include_cached: bool = True) -> Iterator[list[ModelExport]]:
        """Lists of finished models: the cached ones first (unless ``include_cached`` is
        False, for a caller that took them from :meth:`cached`), then each export as it
        ends (in a staged session, each stage of each model)."""
        ready = self.cached() if include_cached else []
        if ready:
            yield ready
        # Every model's first stage, in order; a model's second stage joins the queue's end
        # when its first ends, so the quick formats of every model come before any slow one.
        queue: list[tuple[_Planned, tuple[str, ...], tuple[str, ...]]] = []
        then: dict[str, tuple[_Planned, tuple[str, ...], tuple[str, ...]]] = {}
        for planned in self._planned:
            stages = self._stages(planned)
            if stages and not stages[0][0]:  # its first stage came from the cache
                stages = stages[1:]
            if stages:
                queue.append((planned, *stages[0]))
            if len(stages) > 1:
                then[planned.model.name] = (planned, *stages[1])
        if not queue:
            return
        busy = len({planned.model.name for planned, _, _ in queue})
        self._shown.say(f"exporting {busy} model(s), {self._shown.total} format(s), "
                        f"{self._workers} at a time (once: later runs reuse the files)")
        with ThreadPoolExecutor(max_workers=self._workers) as pool:
            # When the caller measures as models come, the first export runs alone: on two
            # cores one export alone takes about half as long as two side by side, so the
            # first result comes sooner; the others then share the machine as before.
            limit = 1 if pause and len(queue) + len(then) > 1 else self._workers
            pending: set[Any] = set()

            def fill() -> None:
                while queue and len(pending) < limit:
                    pending.add(pool.submit(self._export, *queue.pop(0)))

            fill()
            began, held = time.monotonic(), 0.0
            try:
                while pending:
                    finished, running = wait(pending, return_when=FIRST_COMPLETED)
                    pending.clear()
                    pending.update(running)
                    batch = [future.result() for future in finished]
                    queue.extend(then.pop(e.model.name) for e in batch if e.model.name in then)
                    if pause and (pending or queue):
                        self._processes.pause()
                        if pending:
                            self._shown.say(
                                f"{len(pending)} export(s) paused while "
                                f"{', '.join(e.model.name for e in batch)} is measured")
                    handed = time.monotonic()
                    yield batch
                    # The caller held the batch (measured it): no export ran meanwhile.
                    held += time.monotonic() - handed if pause else 0.0
                    if self._processes.paused:
                        self._processes.resume()
                    limit = self._workers
                    fill()
                spent = time.monotonic() - began - held
                self._shown.say(f"exports done: {spent:.0f} s spent exporting"
                                + (" (measurements not counted)" if held else ""))
            finally:
                self._processes.close()


def _in_stage(export: ModelExport, elsewhere: tuple[str, ...]) -> ModelExport:
    """``export`` as one stage of a staged session: the frameworks in ``elsewhere`` left to
    the other stage, and with them the failed formats only they read (each said once)."""
    if not elsewhere:
        return export
    failures = {fmt: why for fmt, why in export.failures.items()
                if not set(format_of(fmt).read_by) <= set(elsewhere)}
    return replace(export, elsewhere=elsewhere, failures=failures)


def export_definitions(models: Sequence[ModelDefinition], cache: ArtifactCache,
                       **options: Unpack[ExportOptions]) -> list[ModelExport]:
    """Export models into the cache (once, as :class:`ExportOptions` says); returns every
    model's files and failures."""
    if not models:
        return []
    with ExportSession(models, cache, **options) as session:
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


def _collect(index: ExportIndex, model: ModelDefinition, fingerprint: str,
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

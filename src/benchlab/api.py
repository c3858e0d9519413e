"""The Python API: :func:`run` is what ``benchlab run`` calls, one function for one command."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from typing_extensions import Unpack

from benchlab.spec.artifacts import ArtifactCache, DownloadProgress, default_cache_dir
from benchlab.ab.sides import CompareSettings, Side
from benchlab.ab.driver import compare_jobs
from benchlab.schema.comparison import Comparison
from benchlab.errors import InfrastructureError, UsageError
from benchlab.harness.devicefit import export_readers
from benchlab.harness.planner import Plan, StagedPlan, across_devices, execute, plan
from benchlab.report.jsondir import write_result_json, write_simple_result_json
from benchlab.harness.results import Results
from benchlab.schema.result import EnvKey, Result
from benchlab.spec import load
from benchlab.spec.types import BenchmarkSpec
from benchlab.harness.sweep import SpecsArg, Sweep, SweepFields, framework_configs
from benchlab.store import ResultStore, using_store
from benchlab.targets.base import Target
from benchlab.harness.selection import select_targets, usable_target
from benchlab.tracking.gitrepo import fetch
from benchlab.tracking.tracker import (
    TrackReport,
    TrackSettings,
    set_fetch_status,
    track_commits,
    wait_interval,
)
from benchlab.tracking.tracker import fingerprint as track_fingerprint
from benchlab.usermodels.prepare import entry_only, prepare_models
from benchlab.exporting.session import ExportSession, ModelExport
from benchlab.exporting.specs import (
    DEFAULT_GENERATIVE_TEST,
    DEFAULT_TEST,
    generative_tests,
    spec_of,
)
from benchlab.zoo import DEFAULT_MODELS, definitions

if TYPE_CHECKING:  # rich is the reporters' business; the API only passes a console through
    from rich.console import Console

    from benchlab.report.terminal import SweepProgress

__all__ = ["compare", "plan_sweep", "run", "track"]


@dataclass(frozen=True, slots=True)
class _Staged:
    """A staged sweep, the plans of the stages taken so far."""

    sweep: StagedPlan
    taken: list[Plan]
    zoo_models: int


def _as_sweep(specs: SpecsArg | Sweep, fields: SweepFields) -> Sweep:
    """``specs`` when it is a :class:`Sweep` already (then no other field may be given),
    else the sweep those arguments describe (:meth:`Sweep.of`)."""
    if not isinstance(specs, Sweep):
        return Sweep.of(specs, **fields)
    if fields:
        raise UsageError(f"give a Sweep or its fields, not both ({', '.join(sorted(fields))} "
                         "given beside a Sweep)")
    return specs


@contextmanager
def _staged(
    sweep: Sweep,
    targets: Sequence[Target],
    cache: ArtifactCache,
    progress: Callable[[str], None] | None = None,
    pause: bool = True,
) -> Iterator[_Staged]:
    """Plan spec files at once and zoo models stage by stage, as their exports end.

    With ``pause``, the exports still running stop while a stage is measured (see
    :class:`benchlab.exporting.session.ExportSession`). The sweep's fingerprint is known before any
    export: it digests the spec files' job keys and each zoo model's definition.
    """
    configs = list(sweep.frameworks)
    loaded = [spec for path in sweep.specs for spec in load(path, root_dir=sweep.root_model_dir)]
    # A spec naming a factory and no file is the user's model: exported like any other.
    factories = [spec for spec in loaded if entry_only(spec)]
    loaded = [spec for spec in loaded if not entry_only(spec)]
    zoo = definitions(list(sweep.models) if sweep.models
                      else [] if sweep.specs or sweep.user_models else list(DEFAULT_MODELS))
    for spec in loaded if progress else ():
        for field, why in spec.ignored:
            progress(f"{spec.path.name}: {field} is not used: {why}")
    users = prepare_models(sweep.user_models, cache, inputs=sweep.inputs, data=sweep.data,
                           test=DEFAULT_TEST,
                           generative=generative_tests(DEFAULT_GENERATIVE_TEST, sweep.generations),
                           specs=factories, progress=progress)
    loaded += users.ready
    if not loaded and not zoo and not users.exports:
        raise UsageError("nothing to run: the given specs contain no tests")
    own_tests = users.tests or {}

    # Once per target: describing a remote one is a round trip, and stages plan many times.
    devices = [str(target.describe().get(EnvKey.HOSTNAME, "")) for target in targets]

    def plan_of(batch: list[BenchmarkSpec]) -> Plan:
        return across_devices([plan(batch, target, frameworks=configs or None,
                                    overrides=sweep.overrides, device=device,
                                    scenario=sweep.scenario)
                               for target, device in zip(targets, devices, strict=True)])

    def spec_for(export: ModelExport) -> BenchmarkSpec:
        return spec_of(export, cache, generations=sweep.generations,
                       own_tests=own_tests.get(export.model.name, ()))

    # Frameworks named: export only what they read (-f onnxruntime needs no ExecuTorch file);
    # devices without Python: only what their runners read.
    readers = export_readers(targets, configs)
    # A run measuring as exports end takes each model's quick formats first (staged).
    with ExportSession([*zoo, *users.exports], cache, progress=progress,
                       readers=readers, staged=pause) as session:
        first = plan_of(loaded)
        requested = [job.identity.key for job in first.jobs]
        legacy = list(requested)
        if session.fingerprints:
            where = ",".join(f"{target.name}@{device}"
                             for target, device in zip(targets, devices, strict=True))
            for name, fp in session.fingerprints.items():
                requested.append(f"zoo:{name}@{fp} {sweep.fingerprint_line(where)}")
                legacy.append(f"zoo:{name}@{fp} {sweep.legacy_fingerprint_line(where)}")
        taken: list[Plan] = []

        def stages() -> Iterator[Plan]:
            # Spec files and cached models need no export: one stage, so that their
            # processes are measured in the same rounds (harness.execute).
            cached = session.cached()
            taken.append(plan_of([*loaded, *(spec_for(e) for e in cached)]) if cached else first)
            yield taken[-1]
            for batch in session.batches(pause=pause, include_cached=False):
                taken.append(plan_of([spec_for(export) for export in batch]))
                yield taken[-1]

        staged = StagedPlan(tuple(requested), stages(),
                            legacy_requested=tuple(legacy) if session.fingerprints else ())
        yield _Staged(staged, taken, len(session.fingerprints))


def _cache_of(sweep: Sweep, progress: DownloadProgress | None = None) -> ArtifactCache:
    return ArtifactCache(sweep.cache_dir or default_cache_dir(),
                         root_model_dir=sweep.root_model_dir, progress=progress)


def _plan(sweep: Sweep, targets: Sequence[Target], cache: ArtifactCache) -> Plan:
    """The whole sweep as one plan, every export done first; same fingerprint as a run."""
    with _staged(sweep, targets, cache, pause=False) as staged:
        stages = list(staged.sweep.stages)
    return Plan(jobs=tuple(job for stage in stages for job in stage.jobs),
                skipped=tuple(skip for stage in stages for skip in stage.skipped),
                requested=staged.sweep.requested,
                legacy_requested=staged.sweep.legacy_requested)


def _one_target(sweep: Sweep) -> Target:
    """The one device a compare or a track runs on."""
    if len(sweep.targets) != 1:
        raise UsageError(f"a compare or a track runs on one device; {len(sweep.targets)} given")
    return usable_target(sweep.targets[0])


def plan_sweep(specs: SpecsArg | Sweep = None, **fields: Unpack[SweepFields]) -> Plan:
    """The jobs :func:`run` would run with the same arguments (or :class:`Sweep`), without
    running them."""
    sweep = _as_sweep(specs, fields)
    return _plan(sweep, select_targets(list(sweep.targets), sweep.exclude_targets),
                 _cache_of(sweep))


def run(
    specs: SpecsArg | Sweep = None,
    *,
    db: str | Path | ResultStore | None = None,
    resume: bool | int | str = False,
    json_dir: Path | None = None,
    simple_json_dir: Path | None = None,
    progress: bool = False,
    console: Console | None = None,
    on_run: Callable[[str], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
    **fields: Unpack[SweepFields],
) -> Results:
    """Run a sweep and return its :class:`Results`; every result is also in the store.

    ``specs`` are spec or suite files, or a whole :class:`~benchlab.harness.sweep.Sweep` (then the
    fields it holds are not given again). The other keyword arguments are the sweep's fields,
    each described in :class:`~benchlab.harness.sweep.SweepFields`: ``models`` (zoo models),
    ``model`` (your own: a ``torch.nn.Module``, ``"file.py:factory"``, an ONNX file or a file
    a runtime reads as it is, exported to every format the installed runtimes take,
    docs/your-model.md) with ``inputs`` and ``data``, ``frameworks``, ``target`` (one device
    or a list: every job runs on every device and the reports set them side by side),
    ``exclude_targets``, ``overrides``, ``string_map``, ``time_budget``, ``generations``,
    ``scenario``, ``energy``, ``reboot``, ``order`` and ``race``.
    With none of them, the zoo's default models run on every installed framework.
    Failed jobs do not raise: they are results with a failed status (see ``Results.failed``).

    ``db`` is a store URL or SQLite path (default: the per-user store) or an open
    :class:`~benchlab.store.ResultStore`, which is used as it is and left open.
    ``on_run`` is called with the run's UUID once it is in the store (a new or resumed run);
    ``on_result`` with each result once it is stored (the lab's remote reporter uses it).
    ``json_dir`` also writes each result as a JSON file under the run's folder there,
    ``simple_json_dir`` into one flat folder, the latest run's file of a job replacing the last
    (:mod:`benchlab.report.jsondir`).
    """
    sweep = _as_sweep(specs, fields)
    announce, bar, downloads = None, None, None
    if progress:
        # rich only when something is shown: the API itself stays free of it.
        from benchlab.report.terminal import SweepProgress, download_bar, make_console

        announce = (console or make_console(stderr=True)).print
        bar, downloads = SweepProgress(0, console=console), download_bar(console)
    cache = _cache_of(sweep, downloads)
    targets = select_targets(list(sweep.targets), sweep.exclude_targets)
    with _staged(sweep, targets, cache, announce) as staged, using_store(db) as store:
        run_label: list[str] = []

        def stored(result: Result) -> None:
            if json_dir is not None:
                write_result_json(json_dir, run_label[0], result)
            if simple_json_dir is not None:
                write_simple_result_json(simple_json_dir, result)
            if on_result is not None:
                on_result(result)

        def start(record_uuid: str) -> None:
            run_label.append(record_uuid)
            if on_run is not None:
                on_run(record_uuid)

        planned = staged.sweep
        if bar is not None:
            planned = replace(planned, stages=_counted(planned.stages, staged.zoo_models, bar))
            bar.__enter__()
        try:
            record, results = execute(
                planned, sweep, targets, cache, store, resume=resume,
                description=_describe(sweep), on_result=stored, progress=bar, on_run=start,
            )
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
        ended = store.get_run(record.id)  # its end status and counts, not those at its start
    skips = tuple(s for stage in staged.taken for s in stage.skipped)
    return Results(
        items=tuple(results),
        run=ended,
        skipped=tuple((s.label, s.reason) for s in skips),
        skips=skips,
    )


def _counted(stages: Iterator[Plan], zoo_models: int, bar: SweepProgress) -> Iterator[Plan]:
    """The stages, setting the bar's total as each comes: the jobs planned so far plus, for
    zoo models still exporting, as many per model as the zoo models planned so far had."""
    planned, zoo_jobs, zoo_seen = 0, 0, set()
    for stage in stages:
        planned += len(stage.jobs)
        for job in stage.jobs:
            if job.spec.model.metadata.get("zoo"):
                zoo_jobs += 1
                zoo_seen.add(job.identity.model_name)
        waiting = max(zoo_models - len(zoo_seen), 0)
        bar.expect(planned + (round(zoo_jobs / len(zoo_seen) * waiting) if zoo_seen else 0))
        yield stage


def _fetch_for_pass(settings: TrackSettings, follow: bool,
                    progress: Callable[[str], None] | None) -> None:
    """Fetch the followed branch before a pass. Without ``follow`` a failed fetch is an error;
    while following, it is reported (progress and the status file's second line) and the pass
    goes on with what was fetched before; the next poll fetches again."""
    assert settings.remote is not None and settings.branch is not None
    where = f"{settings.remote}/{settings.branch}"
    try:
        head = fetch(settings.repo, settings.remote, settings.branch, settings.vcs)
    except InfrastructureError as exc:
        if not follow:
            raise
        set_fetch_status(settings.status_file, f"fetch failed, retrying at the next poll: {exc}")
        if progress:
            progress(f"{exc}; retrying at the next poll")
        return
    set_fetch_status(settings.status_file, f"fetched {where} at {head}")
    if progress:
        progress(f"fetched {where} at {head[:12]}")


def _describe(sweep: Sweep) -> str:
    parts = []
    if sweep.specs:
        parts.append("specs=" + ",".join(map(str, sweep.specs)))
    if sweep.models or not sweep.specs:
        parts.append("models=" + ",".join(sweep.models or DEFAULT_MODELS))
    if sweep.frameworks:
        parts.append("frameworks=" + ",".join(c.name for c in sweep.frameworks))
    return " ".join(parts)


def compare(
    specs: SpecsArg | Sweep = None,
    *,
    control: Side,
    treatment: Side,
    db: str | Path | ResultStore | None = None,
    settings: CompareSettings | None = None,
    progress: Callable[[str], None] | None = None,
    **fields: Unpack[SweepFields],
) -> Comparison:
    """Compare two sides (programs, framework variants or Python environments) on every job.

    When the sides name framework configurations, each test is planned once with the
    control's configuration and each side swaps in its own. Every side's observations are
    stored as a result with variant ``control`` or ``treatment``. ``specs`` may be a whole
    :class:`~benchlab.harness.sweep.Sweep` on one device; the other keyword arguments are its fields
    (:class:`~benchlab.harness.sweep.SweepFields`; ``target``: the one device both sides run on).
    """
    sweep = _as_sweep(specs, fields)
    if control.framework is not None and not sweep.frameworks:
        sweep = replace(sweep, frameworks=framework_configs([control.framework]))
    cache = _cache_of(sweep)
    the_target = _one_target(sweep)
    planned = _plan(sweep, [the_target], cache)
    with using_store(db) as store:
        record = store.start_run(
            fingerprint=f"ab:{planned.fingerprint}",
            host=the_target.describe().get(EnvKey.HOSTNAME, ""),
            description=f"compare {treatment.label} vs {control.label}",
        )
        comparison = compare_jobs(
            planned.jobs, control, treatment, the_target, cache, settings or CompareSettings(),
            on_result=lambda result: store.add_result(
                record.id, sweep.labels.stamp(result) if sweep.labels else result),
            progress=progress, skipped=[f"{skip.label}: skipped: {skip.reason}" for skip in planned.skipped],
        )
        store.finish_run(record.id)
    return comparison


def track(
    specs: SpecsArg | Sweep = None,
    *,
    settings: TrackSettings,
    follow: bool = False,
    interval: float = 600.0,
    db: str | Path | ResultStore | None = None,
    progress: Callable[[str], None] | None = None,
    **fields: Unpack[SweepFields],
) -> TrackReport:
    """Track a commit range (or follow a branch) against a pinned reference build.

    The spec's commands name the build as ``{program}``; ``settings.program`` says what that
    is inside a commit's worktree. A track stopped through its status file, or killed,
    resumes where it stopped when run again with the same arguments. The other keyword
    arguments are the sweep's fields (:class:`~benchlab.harness.sweep.SweepFields`; ``target``: the
    one device the track runs on).
    """
    sweep = _as_sweep(specs, fields)
    cache = _cache_of(sweep)
    the_target = _one_target(sweep)
    planned = _plan(sweep, [the_target], cache)
    with using_store(db) as store:
        key = track_fingerprint(settings, settings.reference or "", planned.jobs)
        # A finished track of the same range is extended too: its commits stay measured.
        record = store.latest_run(key)
        record = store.resume_run(record.id) if record else store.start_run(
            fingerprint=key, description=f"track {settings.revisions} in {settings.repo}"
        )
        while True:
            if settings.fetches:
                _fetch_for_pass(settings, follow, progress)
            report = track_commits(planned.jobs, settings, the_target, cache, store, record.id,
                                   progress=progress)
            if report.stopped or not follow:
                break
            if not wait_interval(interval, settings.status_file):
                # Stopped between two passes: the track stops as it would inside one.
                report = replace(report, stopped=True)
                break
        if report.stopped or follow:
            store.mark_interrupted(record.id)
        else:
            store.finish_run(record.id)
    return report

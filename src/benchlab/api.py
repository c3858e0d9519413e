"""The Python API: :func:`run` is what ``benchlab run`` calls, one function for one command."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from benchlab.artifacts import ArtifactCache, default_cache_dir
from benchlab.ab.pairs import CompareSettings, Side, compare_jobs
from benchlab.ab.model import Comparison
from benchlab.energy.session import EnergySettings
from benchlab.errors import InfrastructureError, UsageError
from benchlab.harness import Plan, StagedPlan, TestOverrides, across_devices, execute, plan
from benchlab.plugins import FRAMEWORK_GROUP, available_names, parse_plugin_text
from benchlab.report.jsondir import write_result_json
from benchlab.report.terminal import SweepProgress, download_bar, make_console
from benchlab.results import Results
from benchlab.schema import Result
from benchlab.spec import load
from benchlab.spec.types import BenchmarkSpec, FrameworkConfig
from benchlab.store import ResultStore, using_store
from benchlab.targets.base import Target
from benchlab.targets.reboot import RebootPolicy
from benchlab.targets.selection import select_targets, usable_target
from benchlab.tracking.gitrepo import fetch
from benchlab.tracking.tracker import (
    TrackReport,
    TrackSettings,
    set_fetch_status,
    track_commits,
    wait_interval,
)
from benchlab.tracking.tracker import fingerprint as track_fingerprint
from benchlab.zoo import DEFAULT_MODELS, ExportSession, resolve_model_names, spec_of

if TYPE_CHECKING:  # rich is the reporters' business; the API only passes a console through
    from rich.console import Console

__all__ = ["compare", "parse_framework", "plan_sweep", "run", "track"]


def parse_framework(text: str) -> FrameworkConfig:
    """Parse ``name`` or ``name:key=value,key=value`` (values parsed as int/float/bool if they
    look like one), e.g. ``pytorch:mode=torchscript`` or ``onnxruntime:intra_op_threads=1``."""
    name, options = parse_plugin_text(text, "framework")
    return FrameworkConfig(name, options)


def _framework_configs(frameworks: Sequence[str | FrameworkConfig] | None
                       ) -> list[FrameworkConfig]:
    configs = [parse_framework(f) if isinstance(f, str) else f for f in frameworks or ()]
    if any(c.name == "all" for c in configs):
        # "all" = every installed framework's defaults, except those configured explicitly.
        # Alone, it leaves each spec to its own defaults (what no -f at all does).
        explicit = [c for c in configs if c.name != "all"]
        named = {c.name for c in explicit}
        configs = [FrameworkConfig(n) for n in available_names(FRAMEWORK_GROUP)
                   if n != "generic" and n not in named] + explicit if explicit else []
    return configs


@dataclass(frozen=True, slots=True)
class _Staged:
    """A staged sweep, the plans of the stages taken so far, the framework configurations."""

    sweep: StagedPlan
    taken: list[Plan]
    configs: list[FrameworkConfig]
    zoo_models: int


@contextmanager
def _staged(
    specs: Sequence[str | Path] | str | Path | None,
    models: Sequence[str] | None,
    frameworks: Sequence[str | FrameworkConfig] | None,
    targets: Sequence[Target],
    overrides: TestOverrides | None,
    cache: ArtifactCache,
    root_model_dir: Path | None,
    progress: Callable[[str], None] | None = None,
    pause: bool = True,
) -> Iterator[_Staged]:
    """Plan spec files at once and zoo models stage by stage, as their exports end.

    With ``pause``, the exports still running stop while a stage is measured (see
    :class:`benchlab.zoo.ExportSession`). The sweep's fingerprint is known before any
    export: it digests the spec files' job keys and each zoo model's definition.
    """
    configs = _framework_configs(frameworks)
    paths = [specs] if isinstance(specs, (str, Path)) else list(specs or ())
    loaded = [spec for path in paths for spec in load(Path(path), root_dir=root_model_dir)]
    names = (resolve_model_names(models) if models
             else [] if paths else list(DEFAULT_MODELS))
    if not loaded and not names:
        raise UsageError("nothing to run: the given specs contain no tests")
    for spec in loaded if progress else ():
        for field, why in spec.ignored:
            progress(f"{spec.path.name}: {field} is not used: {why}")

    # Once per target: describing a remote one is a round trip, and stages plan many times.
    devices = [str(target.describe().get("hostname", "")) for target in targets]

    def plan_of(batch: list[BenchmarkSpec]) -> Plan:
        return across_devices([plan(batch, target, frameworks=configs or None,
                                    overrides=overrides, device=device)
                               for target, device in zip(targets, devices, strict=True)])

    with ExportSession(names, cache, progress=progress) as session:
        first = plan_of(loaded)
        requested = [job.identity.key for job in first.jobs]
        if names:
            where = ",".join(f"{target.name}@{device}"
                             for target, device in zip(targets, devices, strict=True))
            settings = f"frameworks={configs!r} overrides={overrides!r} target={where}"
            requested += [f"zoo:{name}@{fp} {settings}"
                          for name, fp in session.fingerprints.items()]
        taken: list[Plan] = []

        def stages() -> Iterator[Plan]:
            # Spec files and cached zoo models need no export: one stage, so that their
            # processes are measured in the same rounds (harness.execute).
            cached = session.cached()
            taken.append(plan_of([*loaded, *(spec_of(e, cache) for e in cached)])
                         if cached else first)
            yield taken[-1]
            for batch in session.batches(pause=pause, include_cached=False):
                taken.append(plan_of([spec_of(export, cache) for export in batch]))
                yield taken[-1]

        yield _Staged(StagedPlan(tuple(requested), stages()), taken, configs, len(names))


def _plan(
    specs: Sequence[str | Path] | str | Path | None,
    models: Sequence[str] | None,
    frameworks: Sequence[str | FrameworkConfig] | None,
    targets: Sequence[Target],
    overrides: TestOverrides | None,
    cache: ArtifactCache,
    root_model_dir: Path | None,
) -> tuple[Plan, list[FrameworkConfig]]:
    """The whole sweep as one plan, every export done first; same fingerprint as a run."""
    with _staged(specs, models, frameworks, targets, overrides, cache, root_model_dir,
                 pause=False) as staged:
        stages = list(staged.sweep.stages)
    whole = Plan(jobs=tuple(job for stage in stages for job in stage.jobs),
                 skipped=tuple(skip for stage in stages for skip in stage.skipped),
                 requested=staged.sweep.requested)
    return whole, staged.configs


def plan_sweep(
    specs: Sequence[str | Path] | str | Path | None = None,
    *,
    models: Sequence[str] | None = None,
    frameworks: Sequence[str | FrameworkConfig] | None = None,
    target: str | Target | Sequence[str | Target] = "host",
    exclude_targets: Sequence[str] = (),
    overrides: TestOverrides | None = None,
    cache_dir: Path | None = None,
    root_model_dir: Path | None = None,
) -> Plan:
    """The jobs :func:`run` would run with the same arguments, without running them."""
    cache = ArtifactCache(cache_dir or default_cache_dir(), root_model_dir=root_model_dir)
    targets = select_targets(target, exclude_targets)
    return _plan(specs, models, frameworks, targets, overrides, cache, root_model_dir)[0]


def run(
    specs: Sequence[str | Path] | str | Path | None = None,
    *,
    models: Sequence[str] | None = None,
    frameworks: Sequence[str | FrameworkConfig] | None = None,
    target: str | Target | Sequence[str | Target] = "host",
    exclude_targets: Sequence[str] = (),
    db: str | Path | ResultStore | None = None,
    resume: bool | int | str = False,
    overrides: TestOverrides | None = None,
    time_budget: float | None = None,
    energy: str | EnergySettings | None = None,
    string_map: Mapping[str, str] | None = None,
    json_dir: Path | None = None,
    cache_dir: Path | None = None,
    root_model_dir: Path | None = None,
    progress: bool = False,
    console: Console | None = None,
    reboot: RebootPolicy | None = None,
    on_run: Callable[[str], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
    order: str = "rounds",
) -> Results:
    """Run a sweep and return its :class:`Results`; every result is also in the store.

    ``specs`` are spec or suite files; ``models`` names zoo models (or ``all``, ``default``,
    ``small``). With neither, the zoo's default models run on every installed framework.
    ``frameworks`` limits and configures the frameworks (``"pytorch:mode=eager"``).
    Failed jobs do not raise: they are results with a failed status (see ``Results.failed``).
    ``target`` is ``"host"``, ``"ssh:host=pi"``, ``"adb:serial=X"``, a target object, or a
    list of them: every job then runs on every device, one device after the other, and the
    reports set the devices side by side. ``adb`` without a serial means every attached phone;
    ``exclude_targets`` drops the devices it names (``"adb:serial=X"``).
    ``energy`` (``"auto"`` or a meter name) measures energy per inference where a meter can;
    elsewhere each result's ``details.energy`` says why it is unavailable.
    ``reboot`` reboots the device before the run, after failures in a row or after an uptime
    (adb targets); each reboot is recorded in the next result's ``details.reboot``.
    ``db`` is a store URL or SQLite path (default: the per-user store) or an open
    :class:`~benchlab.store.ResultStore`, which is used as it is and left open.
    ``on_run`` is called with the run's UUID once it is in the store (a new or resumed run);
    ``on_result`` with each result once it is stored (the lab's remote reporter uses it).
    ``order`` is ``"rounds"`` (every job's first process, then every job's second...: drift
    falls on every cell alike and the "× fastest" ratios are paired) or ``"jobs"`` (each job's
    processes back to back); see :func:`benchlab.harness.execute`.
    """
    if order not in ("rounds", "jobs"):
        raise UsageError(f"order must be 'rounds' or 'jobs', not {order!r}")
    if isinstance(energy, str):
        energy = EnergySettings(meter=energy)
    cache = ArtifactCache(
        cache_dir or default_cache_dir(), root_model_dir=root_model_dir,
        progress=download_bar(console) if progress else None,
    )
    targets = select_targets(target, exclude_targets)
    announce = (console or make_console(stderr=True)).print if progress else None
    with _staged(specs, models, frameworks, targets, overrides, cache, root_model_dir,
                 announce) as staged, using_store(db) as store:
        run_label: list[str] = []

        def stored(result: Result) -> None:
            if json_dir is not None:
                write_result_json(json_dir, run_label[0], result)
            if on_result is not None:
                on_result(result)

        def start(record_uuid: str) -> None:
            run_label.append(record_uuid)
            if on_run is not None:
                on_run(record_uuid)

        bar = SweepProgress(0, console=console) if progress else None
        sweep = staged.sweep
        if bar is not None:
            sweep = replace(sweep, stages=_counted(sweep.stages, staged.zoo_models, bar))
            bar.__enter__()
        try:
            record, results = execute(
                sweep, targets, cache, store, resume=resume, string_map=string_map,
                time_budget=time_budget, energy=energy,
                description=_describe(specs, models, staged.configs),
                on_result=stored, progress=bar, on_run=start, reboot=reboot, order=order,
            )
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
    return Results(
        items=tuple(results),
        run_id=record.id,
        run_uuid=record.uuid,
        skipped=tuple((s.label, s.reason) for stage in staged.taken for s in stage.skipped),
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
        head = fetch(settings.repo, settings.remote, settings.branch)
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


def _describe(
    specs: Sequence[str | Path] | str | Path | None,
    models: Sequence[str] | None,
    configs: Sequence[FrameworkConfig],
) -> str:
    parts = []
    if specs:
        parts.append("specs=" + ",".join(map(str, [specs] if isinstance(specs, (str, Path))
                                                  else specs)))
    parts.append("models=" + ",".join(models or DEFAULT_MODELS) if models or not specs else "")
    if configs:
        parts.append("frameworks=" + ",".join(c.name for c in configs))
    return " ".join(p for p in parts if p)


def compare(
    specs: Sequence[str | Path] | str | Path | None = None,
    *,
    control: Side,
    treatment: Side,
    models: Sequence[str] | None = None,
    frameworks: Sequence[str | FrameworkConfig] | None = None,
    target: str | Target = "host",
    db: str | Path | ResultStore | None = None,
    settings: CompareSettings | None = None,
    overrides: TestOverrides | None = None,
    cache_dir: Path | None = None,
    root_model_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    """Compare two sides (programs, framework variants or Python environments) on every job.

    When the sides name framework configurations, each test is planned once with the
    control's configuration and each side swaps in its own. Every side's observations are
    stored as a result with variant ``control`` or ``treatment``.
    """
    cache = ArtifactCache(cache_dir or default_cache_dir(), root_model_dir=root_model_dir)
    the_target = usable_target(target)
    if control.framework is not None and not frameworks:
        frameworks = [control.framework]
    sweep, _ = _plan(specs, models, frameworks, [the_target], overrides, cache, root_model_dir)
    with using_store(db) as store:
        record = store.start_run(
            fingerprint=f"ab:{sweep.fingerprint}", host=the_target.describe().get("hostname", ""),
            description=f"compare {treatment.label} vs {control.label}",
        )
        comparison = compare_jobs(
            sweep.jobs, control, treatment, the_target, cache, settings or CompareSettings(),
            on_result=lambda result: store.add_result(record.id, result), progress=progress,
            skipped=[f"{skip.label}: skipped: {skip.reason}" for skip in sweep.skipped],
        )
        store.finish_run(record.id)
    return comparison


def track(
    specs: Sequence[str | Path] | str | Path | None = None,
    *,
    settings: TrackSettings,
    follow: bool = False,
    interval: float = 600.0,
    models: Sequence[str] | None = None,
    frameworks: Sequence[str | FrameworkConfig] | None = None,
    target: str | Target = "host",
    db: str | Path | ResultStore | None = None,
    overrides: TestOverrides | None = None,
    cache_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> TrackReport:
    """Track a commit range (or follow a branch) against a pinned reference build.

    The spec's commands name the build as ``{program}``; ``settings.program`` says what that
    is inside a commit's worktree. A track stopped through its status file, or killed,
    resumes where it stopped when run again with the same arguments.
    """
    cache = ArtifactCache(cache_dir or default_cache_dir())
    the_target = usable_target(target)
    sweep, _ = _plan(specs, models, frameworks, [the_target], overrides, cache, None)
    with using_store(db) as store:
        key = track_fingerprint(settings, settings.reference or "", sweep.jobs)
        # A finished track of the same range is extended too: its commits stay measured.
        record = store.latest_run(key)
        record = store.resume_run(record.id) if record else store.start_run(
            fingerprint=key, description=f"track {settings.revisions} in {settings.repo}"
        )
        while True:
            if settings.fetches:
                _fetch_for_pass(settings, follow, progress)
            report = track_commits(sweep.jobs, settings, the_target, cache, store, record.id,
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

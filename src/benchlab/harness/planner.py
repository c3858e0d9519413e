"""Spec → jobs → results: plan a sweep, run it job by job, commit each result at once.

:func:`plan` expands specs into jobs (test × framework configuration × target) and lists the
combinations that cannot run, with the reason. :func:`execute` runs the jobs, writing every
finished job to the store in its own transaction before starting the next, so a killed sweep
loses at most the job in flight and ``resume`` picks up exactly where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import zip_longest

from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import UsageError
from benchlab.frameworks.base import NATIVE_BINARY, Framework, Unsupported
from benchlab.frameworks.common import is_generative
from benchlab.harness.devicefit import ArmFeatures, device_fit
from benchlab.harness.jobrun import Job, JobMeasurement, run_job
from benchlab.plugins import FRAMEWORK_GROUP, available_names, load_framework
from benchlab.plugins import check_configurations, check_spec_configurations
from benchlab.harness.rounds import Pace, ProgressCallback, measure_in_rounds
from benchlab.schema.result import EnvKey, JobIdentity, Result
from benchlab.harness.overrides import TestOverrides
from benchlab.schema.scenario import Scenario
from benchlab.store import ResultStore, RunRecord
from benchlab.harness.sweep import Sweep
from benchlab.spec.types import BenchmarkSpec, FrameworkConfig, ModelDef, TestCase
from benchlab.targets.base import Target
from benchlab.targets.reboot import Rebootable, RebootPolicy, Rebooter

__all__ = [
    "FORWARD_PASS",
    "Plan",
    "Skipped",
    "StagedPlan",
    "TEXT_GENERATOR",
    "across_devices",
    "execute",
    "ignored_fields",
    "model_hash",
    "plan",
    "skip_summary",
    "sweep_fingerprint",
]


#: The kinds of model a framework may be unable to run at all (:attr:`Skipped.unfit`).
FORWARD_PASS = "forward pass"
TEXT_GENERATOR = "text generator"

#: What a summary line says of the frameworks that cannot run a kind of model: of one, of
#: several.
_UNFIT_WORDS = {
    FORWARD_PASS: ("runs text generators only", "run text generators only"),
    TEXT_GENERATOR: ("has no text generator backend", "have no text generator backend"),
}


@dataclass(frozen=True, slots=True)
class Skipped:
    """A spec × framework combination that was not planned, and why.

    ``framework`` is the framework left out (empty for a skip that is not one framework's:
    a failed export). ``unfit`` is the kind of model it cannot run at all, where that is why
    (:data:`FORWARD_PASS` for a runtime of text generators only, :data:`TEXT_GENERATOR` for
    one without a generative backend); empty for any other reason. ``named`` says whether the
    user named the framework (``-f``, a spec's ``frameworks``, ``frameworks=`` in the API),
    false for one a sweep took only because it is installed.
    """

    label: str
    reason: str
    framework: str = ""
    unfit: str = ""
    named: bool = True

    @property
    def shown(self) -> bool:
        """Whether a report lists it with its reason: every skip but that of a framework the
        user did not name and that cannot run this kind of model at all. A default sweep
        takes every installed framework, so those would say, model after model, what the user
        never asked about; :func:`skip_summary` names them in one line per kind."""
        return self.named or not self.unfit


def skip_summary(skipped: Iterable[Skipped]) -> tuple[str, ...]:
    """One line per kind of model for the skips a report does not list (not
    :attr:`Skipped.shown`): how many frameworks, which, and how to see why."""
    left_out: dict[str, set[str]] = {}
    for skip in skipped:
        if not skip.shown:
            left_out.setdefault(skip.unfit, set()).add(skip.framework)
    lines = []
    for kind, names in left_out.items():
        one, several = _UNFIT_WORDS.get(kind, (f"cannot run a {kind}", f"cannot run a {kind}"))
        count = (f"1 framework {one}" if len(names) == 1
                 else f"{len(names)} frameworks {several}")
        lines.append(f"{count}: {', '.join(sorted(names))} (name one with -f to see why)")
    return tuple(lines)


def _unfit(adapter: Framework, model: object) -> str:
    """The kind of model ``model`` is when ``adapter`` cannot run that kind at all (see
    :attr:`Skipped.unfit`), else ``""``."""
    generative = is_generative(model)
    if getattr(adapter, "generative_only", False) and not generative:
        return FORWARD_PASS
    # "" is the base class's "no generative backend"; a plugin without the attribute at all
    # is not judged.
    if generative and getattr(adapter, "generative_backend", None) == "":
        return TEXT_GENERATOR
    return ""


def sweep_fingerprint(lines: Iterable[str]) -> str:
    """The digest that names a sweep: the same lines, in any order, give the same one."""
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Plan:
    """The jobs of a sweep, the combinations skipped, and a fingerprint identifying the sweep.

    ``skipped`` holds every combination not planned; a report lists those
    :attr:`Skipped.shown` and says the rest in :func:`skip_summary`'s lines.

    The fingerprint digests the job keys, or ``requested`` where the sweep was asked for in
    terms known before its jobs were (zoo models not yet exported: see :class:`StagedPlan`).
    """

    jobs: tuple[Job, ...]
    skipped: tuple[Skipped, ...]
    requested: tuple[str, ...] | None = None
    #: See :attr:`StagedPlan.legacy_requested`.
    legacy_requested: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """The same sweep gets the same fingerprint (what ``resume`` finds it by)."""
        if self.requested is not None:
            return sweep_fingerprint(self.requested)
        return sweep_fingerprint(job.identity.key for job in self.jobs)

    @property
    def fingerprints(self) -> tuple[str, ...]:
        """Every name a run of this sweep may have in the store, the current one first."""
        return _names(self.fingerprint, self.legacy_requested)


@dataclass(frozen=True)
class StagedPlan:
    """A sweep planned stage by stage, each stage as its models become ready to measure.

    A fresh run exports zoo models before it can plan their jobs; stages let the first ones
    be measured while later exports wait. ``requested`` names the whole sweep up front (job
    keys of what is planned already, a line per model still to come), so its fingerprint is
    known before the first stage and a resumed run finds it.
    """

    requested: tuple[str, ...]
    stages: Iterator[Plan]
    #: What the same request was named by before the canonical fingerprint (empty when it
    #: was named the same way): a run started then is still found by ``resume``.
    legacy_requested: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """The digest of ``requested``: a resume of the same request finds this run."""
        return sweep_fingerprint(self.requested)

    @property
    def fingerprints(self) -> tuple[str, ...]:
        """Every name a run of this request may have in the store, the current one first."""
        return _names(self.fingerprint, self.legacy_requested)


def _names(fingerprint: str, legacy_requested: tuple[str, ...]) -> tuple[str, ...]:
    legacy = sweep_fingerprint(legacy_requested) if legacy_requested else fingerprint
    return (fingerprint,) if legacy == fingerprint else (fingerprint, legacy)


def model_hash(spec: BenchmarkSpec) -> str:
    """A digest of the model's declared file hashes and entry point."""
    parts = [
        f"{key}={ref.sha256 or ref.md5 or ref.location}"
        for key, ref in sorted(spec.model.files.items())
    ]
    parts.append(f"entry={spec.model.entry or ''}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _command_framework(model_format: str) -> str:
    """The framework for a spec with its own commands: the one named by the model's format
    when it reads its native tool's output (FAI-PEP's ``tflite`` specs), else ``generic``."""
    if model_format != "generic" and model_format in available_names(FRAMEWORK_GROUP):
        if getattr(load_framework(model_format), "runs_spec_commands", False):
            return model_format
    return "generic"


def _requested_configs(
    spec: BenchmarkSpec, frameworks: Sequence[FrameworkConfig] | None
) -> tuple[dict[str, list[FrameworkConfig]], bool]:
    """Framework name → requested configs (empty list = that framework's defaults), and
    whether the user or the spec named them (false: every installed framework, by default).
    A bare name beside configured ones of the same framework (``-f tflite -f
    tflite:runner=native``) stays in the list, option-less: its defaults run too
    (:func:`_configurations`)."""
    chosen: dict[str, list[FrameworkConfig]] = {}
    source = list(frameworks) if frameworks else list(spec.frameworks)
    if source:
        for config in source:
            chosen.setdefault(config.name, []).append(config)
        for name, configs in chosen.items():
            if all(not config.options for config in configs):
                chosen[name] = []  # only the bare name: the defaults
        return chosen, True
    if spec.model.framework:
        return {spec.model.framework: []}, True
    if any(test.commands for test in spec.tests):
        return {_command_framework(spec.model.format): []}, True
    return {name: [] for name in available_names(FRAMEWORK_GROUP) if name != "generic"}, False


def _configurations(adapter: Framework, model: ModelDef,
                    requested: Sequence[FrameworkConfig]) -> list[FrameworkConfig] | Unsupported:
    """The framework's configurations for ``requested``; an option-less one among configured
    ones stands for the defaults, which run beside them (a configuration the defaults hold
    already runs once). Where the defaults cannot run, the configured ones still do."""
    configured = [c for c in requested if c.options]
    if len(configured) == len(requested):
        return adapter.configurations(model, requested)
    asked = adapter.configurations(model, configured)
    defaults = adapter.configurations(model, [])
    if isinstance(asked, Unsupported) or isinstance(defaults, Unsupported):
        return asked if isinstance(asked, Unsupported) else asked or defaults
    return defaults + [c for c in asked if all(c.options != d.options for d in defaults)]


def plan(
    specs: Sequence[BenchmarkSpec],
    target: Target,
    *,
    frameworks: Sequence[FrameworkConfig] | None = None,
    overrides: TestOverrides | None = None,
    device: str | None = None,
    scenario: Scenario | None = None,
) -> Plan:
    """Expand specs into jobs for ``target``; explicit ``frameworks`` override the specs'.

    ``scenario`` replaces every test's own where the test can run it (:func:`_under_scenario`);
    the others are skipped, saying why.

    ``device`` is the target's hostname when the caller read it already (describing a remote
    target is a round trip, and a staged sweep plans several times)."""
    overrides = overrides or TestOverrides()
    adapters: dict[str, Framework] = {}
    jobs: list[Job] = []
    skipped: list[Skipped] = []
    check_configurations(frameworks or ())
    if device is None:
        device = str(target.describe().get(EnvKey.HOSTNAME, ""))
    python = target.python_executable()
    arm = ArmFeatures(target)  # read only if a framework's runner needs a feature
    for spec in specs:
        if not frameworks:  # the spec's own configurations run: their file names the error
            check_spec_configurations(spec)
        # A zoo model a converter rejected: say so once per format, not by a silent gap.
        for fmt, reason in spec.model.metadata.get("export_failures", {}).items():
            skipped.append(Skipped(f"{spec.model.name} @ {fmt} export", reason))
        chosen, named = _requested_configs(spec, frameworks)
        for name, requested in chosen.items():
            if name in spec.elsewhere:  # planned with the model's other export stage
                continue
            label = f"{spec.model.name} @ {name}"
            if name not in adapters:
                adapters[name] = load_framework(name)
            adapter = adapters[name]
            available = adapter.availability()
            unfit = _unfit(adapter, spec.model)

            def skip(reason: str) -> Skipped:  # called in this iteration only
                # Each says whose it is, whether the user named it, and any unfit kind: what
                # a report needs to leave it to the summary line.
                return Skipped(label, reason, framework=name, unfit=unfit, named=named)

            # A native tool (benchmark_model on a phone) needs no runtime on this machine.
            native_only = (bool(requested) and all(c.options.get(NATIVE_BINARY)
                                                   for c in requested)) or (
                getattr(adapter, "runs_spec_commands", False)
                and all(test.commands for test in spec.tests))
            if not available.ok and not native_only:
                # A runtime that could not run this model anyway says that, not "install it".
                if unfit == FORWARD_PASS:
                    skipped.append(skip(adapter.generators_only_reason))
                elif unfit == TEXT_GENERATOR:
                    skipped.append(skip(adapter.why_not_generative(spec.model, {})
                                        or available.reason))
                else:
                    skipped.append(skip(available.reason))
                continue
            if not native_only:
                # What cannot run on the device (a phone without Python, a runner's library
                # its CPU cannot run) is one line, before any export or push, and before what
                # the model lacks for it (a phone needs none of that).
                fits, refused = device_fit(adapter, spec.model, name, requested, python, arm)
                skipped += [skip(reason) for reason in refused]
                if fits is None:
                    continue
                requested = fits
            configs = _configurations(adapter, spec.model, requested)
            if isinstance(configs, Unsupported):
                skipped.append(skip(configs.reason))
                continue
            tests = spec.tests
            if scenario is not None:
                tests = _under_scenario(tests, scenario, label, skipped)
            for config in configs:
                for test in tests:
                    identity = JobIdentity(
                        spec=str(spec.path),
                        model_name=spec.model.name,
                        model_hash=model_hash(spec),
                        test_identifier=test.identifier,
                        framework=name,
                        framework_config=dict(config.options),
                        target=target.name,
                        device=device,
                    )
                    jobs.append(Job(identity, spec, overrides.apply(test), config, adapter,
                                    target))
    keys = [job.identity.key for job in jobs]
    if len(set(keys)) != len(keys):
        raise UsageError("the sweep lists the same job twice (duplicate spec or test identifier)")
    return Plan(tuple(jobs), tuple(skipped))


def _under_scenario(tests: Sequence[TestCase], scenario: Scenario, label: str,
                    skipped: list[Skipped]) -> tuple[TestCase, ...]:
    """The tests that can run ``scenario``, with it; a line in ``skipped`` for the rest.

    A forward-pass test runs every scenario but a generative server's (token bounds); a
    generative test runs offline, or server with token bounds (docs/scenarios.md)."""
    why = {}
    for test in tests:
        if test.generate is None and scenario.token_bounds:
            why[test.identifier] = ("bounds on the time to first token and per output token "
                                    "are for generative tests")
        elif test.generate is not None and not (
                scenario.name == "offline" or (scenario.name == "server"
                                               and scenario.token_bounds)):
            why[test.identifier] = ("a generative test runs the offline scenario, or the "
                                    "server one with --ttft-bound/--tpot-bound")
    for reason in dict.fromkeys(why.values()):
        count = sum(1 for r in why.values() if r == reason)
        skipped.append(Skipped(label, f"{count} test(s) skipped under {scenario.label}: "
                               f"{reason}"))
    return tuple(replace(t, scenario=scenario) for t in tests if t.identifier not in why)


def across_devices(plans: Sequence[Plan]) -> Plan:
    """One plan from the same specs planned for several devices: each job runs on every
    device one after the other, so a slow drift of the lab touches every device alike."""
    if len(plans) == 1:
        return plans[0]
    jobs = [job for group in zip_longest(*(p.jobs for p in plans)) for job in group
            if job is not None]
    skipped = tuple(dict.fromkeys(s for p in plans for s in p.skipped))
    return Plan(tuple(jobs), skipped)


def execute(
    planned: Plan | StagedPlan,
    sweep: Sweep,
    target: Target | Sequence[Target],
    cache: ArtifactCache,
    store: ResultStore,
    *,
    resume: bool | int | str = False,
    description: str = "",
    on_result: Callable[[Result], None] | None = None,
    progress: ProgressCallback | None = None,
    on_run: Callable[[str], None] | None = None,
) -> tuple[RunRecord, list[Result]]:
    """Run the jobs ``planned`` from ``sweep``; returns the store's run record and the run's
    results. How they run is the sweep's: its string map, time budget, energy settings,
    reboot policy, order and race (:meth:`~benchlab.harness.sweep.Sweep.race_policy`).

    ``order="rounds"`` (the default) runs each stage's jobs in rounds: every job's first
    process, then every job's second, and so on, so a drift of the machine during the run
    falls on every cell alike and the processes of one round can be compared side by side
    (paired ratios, :func:`benchlab.stats.runstats.paired_ratio`). Jobs that must keep their
    processes together (a power meter, FAI-PEP host commands) run whole before the rounds,
    and a reboot policy runs everything job after job. ``order="jobs"`` runs each job's
    processes back to back, one job after another. With a race (and rounds), the processes
    go where the answer is open (:mod:`benchlab.stats.race`, :func:`benchlab.harness.rounds.measure_in_rounds`):
    still in rounds, each cell recorded as soon as the race decides it.

    A :class:`StagedPlan`'s stages are taken one at a time, each when the one before is
    measured. A job runs on its own ``Job.target`` when it has one (a sweep over several
    devices), else on ``target``. ``reboot`` says when to reboot a device between its jobs
    (each reboot is in the next result's ``details.reboot``); over several devices, it applies
    to those that can reboot. With ``resume`` (``True`` for the latest interrupted
    run of the same sweep, or a run id),
    jobs already recorded in that run are not run again.
    """
    targets = [target] if isinstance(target, Target) else list(target)
    rebooters = _rebooters(sweep.reboot or RebootPolicy(), targets)
    string_map = dict(sweep.string_map) or None
    time_budget, energy, race = sweep.time_budget, sweep.energy, sweep.race_policy()
    run = _open_run(store, planned, resume, description)
    if on_run:
        on_run(run.uuid)
    done = store.finished_job_keys(run.id)
    stages = iter((planned,)) if isinstance(planned, Plan) else planned.stages
    keys: set[str] = set()
    pace = Pace()

    def record(job: Job, result: Result) -> None:
        if sweep.labels is not None:  # the user's labels of the run, in every result it stores
            result = sweep.labels.stamp(result)
        store.add_result(run.id, result)
        if on_result:
            on_result(result)
        if progress:
            progress(job, result)

    def measurement(job: Job, raced: bool) -> JobMeasurement:
        return JobMeasurement(job, job.target or targets[0], cache, string_map=string_map,
                              time_budget=time_budget, energy=energy, raced=raced)

    try:
        for stage in stages:
            keys.update(job.identity.key for job in stage.jobs)
            todo = [job for job in stage.jobs if job.identity.key not in done]
            if sweep.order == "rounds" and not any(r.policy.active for r in rebooters.values()):
                measure_in_rounds(todo, measurement, record, progress, pace, race)
                continue
            for job in todo:
                where = job.target or targets[0]
                rebooter = rebooters[id(where)]
                pace.wait()
                rebooter.before_job()
                if progress:
                    progress(job, None)
                result = rebooter.record(run_job(job, where, cache, string_map=string_map,
                                                 time_budget=time_budget, energy=energy))
                record(job, result)
                pace.after(job)
                rebooter.after_job(result)
    except BaseException:
        store.mark_interrupted(run.id)
        raise
    store.finish_run(run.id)
    results = [r for r in store.results(run.id) if r.identity.key in keys]
    return run, results


def _open_run(store: ResultStore, planned: Plan | StagedPlan, resume: bool | int | str,
               description: str) -> RunRecord:
    """The run the results go to: with ``resume``, the interrupted run of the same sweep (or
    the one named), reopened; else a new one."""
    if resume:
        ref = None if resume is True else resume
        # A run started before the canonical fingerprint is found by its old name.
        names = planned.fingerprints
        if ref is not None:
            run = store.find_resumable_run(run_id=ref)
        else:
            found = (store.find_resumable_run(name) for name in names)
            run = next((r for r in found if r is not None), None)
            if run is None:
                raise UsageError("nothing to resume: no interrupted run of this sweep in the "
                                 "store")
        if run is not None and run.fingerprint not in names:
            raise UsageError(
                f"run {run.id} measured a different sweep; resume it with the same specs and "
                "options it was started with"
            )
        if run is not None:
            return store.resume_run(run.id)
    return store.start_run(fingerprint=planned.fingerprint, description=description,
                           host=socket.gethostname())


def _rebooters(policy: RebootPolicy, targets: Sequence[Target]) -> dict[int, Rebooter]:
    """One :class:`Rebooter` per device; with several, the devices that cannot reboot (the
    host, a board) run without the policy, and none that can is the usual error."""
    if len(targets) > 1 and policy.active:
        if not any(isinstance(t, Rebootable) for t in targets):
            Rebooter(policy, targets[0])  # raises: no device here can reboot
        return {id(t): Rebooter(policy if isinstance(t, Rebootable) else RebootPolicy(), t)
                for t in targets}
    return {id(t): Rebooter(policy, t) for t in targets}


def ignored_fields(sweep: Plan) -> list[dict[str, str]]:
    """The FAI-PEP fields the sweep's specs use that benchlab does not act on, once per spec."""
    seen: dict[str, BenchmarkSpec] = {}
    for job in sweep.jobs:
        seen.setdefault(str(job.spec.path), job.spec)
    return [{"spec": path, "field": field, "why": why}
            for path, spec in seen.items() for field, why in spec.ignored]


def describe_plan(sweep: Plan) -> str:
    """A JSON description of a plan's jobs, for ``run --dry-run``: the skips a report lists
    (:attr:`Skipped.shown`), the others in ``skipped_summary``'s lines, as the run says them."""
    return json.dumps(
        {
            "fingerprint": sweep.fingerprint,
            "jobs": [
                {"key": j.identity.key, "label": j.identity.label,
                 "device": j.identity.device_label} for j in sweep.jobs
            ],
            "skipped": [{"label": s.label, "reason": s.reason} for s in sweep.skipped
                        if s.shown],
            "skipped_summary": list(skip_summary(sweep.skipped)),
            "ignored": ignored_fields(sweep),
        },
        indent=2,
    )


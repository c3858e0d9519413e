"""``benchlab track``: measure a commit history against a pinned reference, find and bisect steps.

Every measured commit is built once in its own tree (:mod:`benchlab.tracking.gitrepo`; git or
Mercurial, :mod:`benchlab.tracking.vcs`), by one builder thread that builds the walk's next
commit while the current one is measured when the device is not this host
(:mod:`benchlab.tracking.builder`), and
compared with the reference build by the A/B protocol (ABBA pairs of fresh processes), so
each commit gets a change with an interval and the per-pair log-ratios behind it. Change points
in that series (:mod:`benchlab.tracking.changepoint`) between commits that were not adjacent
(``step`` > 1) are bisected: the midpoint is measured and joins the side whose level it matches,
until the first commit of the new level is found. Each commit's observations are committed to
the store as they finish; a stopped or killed track resumes without re-measuring them.
"""

from __future__ import annotations

import hashlib
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from benchlab.ab.sides import CompareSettings, Side
from benchlab.ab.counted import COUNT_KEY
from benchlab.ab.driver import compare_jobs
from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import CommitFailedError, UsageError
from benchlab.harness.jobrun import Job
from benchlab.schema.result import LATENCY_KEY, DetailKey, Result
from benchlab.store import ResultStore
from benchlab.targets.base import Target
from benchlab.tracking.builder import Builder, BuildTiming
from benchlab.tracking.changepoint import find_change_points
from benchlab.tracking.gitrepo import BuildCache, every_nth, list_commits
from benchlab.tracking.vcs import KINDS
from benchlab.tracking.week import weekly_reference_in

__all__ = ["REFERENCE_RULES", "CommitPoint", "TrackReport", "TrackSettings", "builds_in_parallel",
           "set_fetch_status", "track_commits"]

REFERENCE_RULES = ("first", "week")
"""How ``track`` picks its reference when none is pinned: the range's first commit, or
FAI-PEP's weekly control (:mod:`benchlab.tracking.week`)."""

@dataclass(frozen=True, slots=True)
class TrackSettings:
    """What to walk and how. ``program`` is the command standing for a build, with
    ``{WORKTREE}`` replaced by the commit's worktree (``python {WORKTREE}/prog.py``).

    With ``remote`` and ``branch``, every pass first fetches the branch, and ``revisions``
    (``<remote>/<branch>`` unless given) names the fetched commits. ``measure`` is ``time``
    or ``instructions`` (each commit's calls counted under valgrind; ``pairs`` then counts
    counted pairs, and one is usually enough: docs/statistics.md).

    ``vcs`` is ``git`` or ``hg`` (``None``: detected from the repository). ``reference_rule``
    ``week`` makes the reference FAI-PEP's weekly control: the first commit of the newest
    commit's week (Monday 00:00 UTC), or ``reference`` when that is later.
    ``same_host``: whether the device is this host, so builds never overlap measurements
    (``None``: it is when the target is ``host``; see :func:`builds_in_parallel`).
    """

    repo: Path
    revisions: str
    program: str
    builds_dir: Path
    build_command: str | None = None
    reference: str | None = None
    step: int = 1
    min_effect: float = 0.01
    alpha: float = 0.05
    pairs: int = 20
    status_file: Path | None = None
    remote: str | None = None
    branch: str | None = None
    measure: str = "time"
    vcs: str | None = None
    reference_rule: str = "first"
    same_host: bool | None = None

    def __post_init__(self) -> None:
        if self.vcs is not None and self.vcs not in KINDS:
            raise UsageError(f"unknown version-control system {self.vcs!r}: choose one of "
                             f"{', '.join(KINDS)}")
        if self.reference_rule not in REFERENCE_RULES:
            raise UsageError(f"unknown reference rule {self.reference_rule!r}: choose one of "
                             f"{', '.join(REFERENCE_RULES)}")

    @property
    def key(self) -> str:
        """The summary key a commit is judged on: latency, or counted instructions."""
        return COUNT_KEY if self.measure == "instructions" else LATENCY_KEY

    @property
    def fetches(self) -> bool:
        """Whether each pass first fetches ``branch`` from ``remote`` (``--follow --remote``)."""
        return self.remote is not None and self.branch is not None


@dataclass(frozen=True, slots=True)
class CommitPoint:
    """One commit measured against the reference.

    ``build`` says when its build ran and ``measured`` when its measurement did (seconds since
    the track began; ``None`` for a commit measured by an earlier track); ``build_overlapped``
    whether its build ran while another commit was being measured.
    """

    commit: str
    index: int
    change: float
    ci_low: float
    ci_high: float
    log_ratios: tuple[float, ...]
    build: BuildTiming | None = None
    measured: tuple[float, float] | None = None
    build_overlapped: bool = False

    @property
    def level(self) -> float:
        """The mean per-pair log-ratio: this commit's level relative to the reference."""
        return statistics.fmean(self.log_ratios)


@dataclass(frozen=True, slots=True)
class TrackReport:
    """The measured series, the steps found in it and the commits that caused them."""

    reference: str
    points: tuple[CommitPoint, ...]
    culprits: tuple[tuple[str, float], ...]
    stopped: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    parallel_build: bool = False
    seconds: float = 0.0

    @property
    def build_seconds(self) -> float:
        """Seconds spent building the measured commits in this pass."""
        return sum(p.build.seconds for p in self.points if p.build is not None)

    @property
    def overlapped_build_seconds(self) -> float:
        """Of those, the seconds of builds that ran while another commit was measured."""
        return sum(p.build.seconds for p in self.points
                   if p.build is not None and p.build_overlapped)


def _stop_requested(status: Path | None) -> bool:
    try:
        return status is not None and status.read_text().strip().lower().startswith("stop")
    except OSError:
        return False


def _set_status_line(status: Path | None, index: int, text: str) -> None:
    """Replace line ``index`` of the status file (0: the track's state, 1: the last fetch),
    keeping the other, unless a stop was asked for."""
    if status is None or _stop_requested(status):
        return
    lines = (status.read_text().splitlines() if status.exists() else [])[:2]
    lines += ["waiting"] * (index + 1 - len(lines))
    lines[index] = text
    # Whole or not at all: someone may be reading it (or writing "stop") meanwhile.
    tmp = status.with_name(f".{status.name}.{os.getpid()}.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, status)


def _set_status(status: Path | None, text: str) -> None:
    _set_status_line(status, 0, text)


def set_fetch_status(status: Path | None, text: str) -> None:
    """Record the last fetch (``fetched origin/main at 1a2b3c``, or why it failed) as the
    status file's second line, keeping its first (the track's state)."""
    _set_status_line(status, 1, text)


def fingerprint(settings: TrackSettings, reference: str, jobs: Sequence[Job]) -> str:
    """Identifies one track (repository, range, reference, jobs) for resuming it."""
    parts = [str(settings.repo.resolve()), settings.revisions, reference, settings.program,
             *sorted(j.identity.key for j in jobs)]
    if settings.reference_rule != "first":  # the default's fingerprints stay as they were
        parts.append(f"reference_rule:{settings.reference_rule}")
    return "track:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _per_process(result: Result, key: str) -> dict[int, float]:
    groups: dict[int, list[float]] = {}
    for sample in result.samples:
        if sample.key == key:
            groups.setdefault(sample.repetition, []).append(sample.value)
    return {rep: statistics.median(values) for rep, values in groups.items()}


def stored_points(store: ResultStore, run_id: int, order: Sequence[str],
                  key: str = LATENCY_KEY, reference: str | None = None
                  ) -> dict[str, CommitPoint]:
    """Commits already measured in this track run, rebuilt from their stored samples; with
    ``reference``, only those measured against it (a weekly reference moves each week)."""
    by_variant = {r.identity.variant: r for r in store.results(run_id)}
    points = {}
    for index, commit in enumerate(order):
        treatment = by_variant.get(f"commit:{commit}")
        control = by_variant.get(f"reference@{commit}")
        if treatment is None or control is None:
            continue
        t, c = _per_process(treatment, key), _per_process(control, key)
        ratios = tuple(math.log(t[k] / c[k]) for k in sorted(t) if k in c)
        if not ratios:
            continue
        estimate = treatment.details.get(DetailKey.TRACK_ESTIMATE, {})
        if reference is not None and estimate.get("reference", reference) != reference:
            continue
        points[commit] = CommitPoint(
            commit, index, estimate.get("change", math.exp(statistics.fmean(ratios)) - 1),
            estimate.get("ci_low", math.nan), estimate.get("ci_high", math.nan), ratios,
        )
    return points


def builds_in_parallel(settings: TrackSettings, target: Target) -> bool:
    """Whether the next commit may be built while the current one is measured: never when
    the device is this host (``same_host``, by default when the target is ``host``), where a
    build would slow the measurement down; always on a phone or a board."""
    same_host = settings.same_host if settings.same_host is not None else target.name == "host"
    return not same_host


def pick_reference(settings: TrackSettings, builds: BuildCache, commits: Sequence[str]) -> str:
    """The reference's full hash: the pinned one, the range's first commit, or FAI-PEP's
    weekly control of the range's newest commit."""
    if settings.reference_rule == "week":
        return weekly_reference_in(builds.repository, commits[-1], settings.reference)
    return builds.repository.resolve(settings.reference or commits[0])


def track_commits(
    jobs: Sequence[Job],
    settings: TrackSettings,
    target: Target,
    cache: ArtifactCache,
    store: ResultStore,
    run_id: int,
    *,
    progress: Callable[[str], None] | None = None,
) -> TrackReport:
    """Walk, measure, detect and bisect; see the module docstring."""
    origin = time.monotonic()
    commits = list_commits(settings.repo, settings.revisions, 1, settings.vcs)
    walk = every_nth(commits, settings.step)
    builds = BuildCache(settings.repo, settings.builds_dir, settings.build_command,
                        vcs=settings.vcs)
    reference = pick_reference(settings, builds, commits)
    parallel = builds_in_parallel(settings, target)
    with Builder(builds, parallel=parallel, origin=origin) as builder:
        ref_program = settings.program.replace("{WORKTREE}",
                                               str(builder.build(reference)[0].path))
        points = stored_points(store, run_id, commits, settings.key, reference)
        walk_ahead = {commit: [c for c in walk[i + 1:] if c not in points][:1]
                      for i, commit in enumerate(walk)}
        measure = _Measurer(jobs, settings, target, cache, store, run_id, commits, points,
                            builder, reference, ref_program, origin, progress)
        series: list[CommitPoint] = []
        stopped = False
        for commit in walk:
            if _stop_requested(settings.status_file):
                stopped = True
                break
            series.append(measure(commit, ahead=walk_ahead[commit]))
        culprits: list[tuple[str, float]] = []
        notes: list[str] = []
        if not stopped:
            steps = find_change_points([p.log_ratios for p in series], settings.min_effect)
            for step in steps:
                lo, hi = series[step.index - 1].index, series[step.index].index
                while hi - lo > 1:  # bisection between the last old-level and first new-level
                    mid = measure(commits[(lo + hi) // 2])
                    closer_to_new = abs(mid.level - step.after) < abs(mid.level - step.before)
                    lo, hi = (lo, mid.index) if closer_to_new else (mid.index, hi)
                culprits.append((commits[hi], step.change))
                notes.append(f"step of {step.change:+.2%} first seen at {commits[hi][:12]} "
                             f"(t = {step.t:.1f})")
    _set_status(settings.status_file, "stopped" if stopped else "done")
    ordered = tuple(sorted(points.values(), key=lambda p: p.index))
    return TrackReport(reference, ordered, tuple(culprits), stopped, tuple(notes),
                       parallel_build=parallel, seconds=time.monotonic() - origin)


class _Measurer:
    """Measures one commit against the reference (once: a measured commit is remembered)."""

    def __init__(self, jobs: Sequence[Job], settings: TrackSettings, target: Target,
                 cache: ArtifactCache, store: ResultStore, run_id: int,
                 commits: Sequence[str], points: dict[str, CommitPoint], builder: Builder,
                 reference: str, ref_program: str, origin: float,
                 progress: Callable[[str], None] | None) -> None:
        self.jobs, self.settings, self.target, self.cache = jobs, settings, target, cache
        self.store, self.run_id, self.commits, self.points = store, run_id, commits, points
        self.builder, self.reference, self.ref_program = builder, reference, ref_program
        self.origin, self.progress = origin, progress
        self.compare = CompareSettings(
            min_effect=settings.min_effect, alpha=settings.alpha, looks=(settings.pairs,),
            verify=False, measure=settings.measure, count_looks=(settings.pairs,))

    def __call__(self, commit: str, ahead: Sequence[str] = ()) -> CommitPoint:
        if commit in self.points:
            return self.points[commit]
        settings, reference = self.settings, self.reference
        _set_status(settings.status_file, f"running {commit}")
        built, timing = self.builder.build(commit)
        for later in ahead:  # built here while this commit is measured on the device
            self.builder.build_ahead(later)
        program = settings.program.replace("{WORKTREE}", str(built.path))
        pending: list[Result] = []
        began = time.monotonic() - self.origin
        comparison = compare_jobs(
            self.jobs,
            Side(f"reference {reference[:12]}", string_map={"program": self.ref_program},
                 variant=f"reference@{commit}"),
            Side(commit[:12], string_map={"program": program}, variant=f"commit:{commit}"),
            self.target, self.cache, self.compare, on_result=pending.append,
            progress=self.progress,
        )
        measured = (began, time.monotonic() - self.origin)
        latency = next((m for m in comparison.metrics if m.metric == settings.key), None)
        if latency is None:
            why = "; ".join(comparison.failed) or f"no {settings.key} was measured"
            raise CommitFailedError(f"commit {commit[:12]}: its benchmark failed: {why}")
        overlapped = timing.fresh and any(
            p.measured is not None and p.measured[0] < timing.ended
            and timing.started < p.measured[1] for p in self.points.values())
        e = latency.estimate
        facts = {"change": e.change, "ci_low": e.ci_low, "ci_high": e.ci_high,
                 "reference": reference, "build_seconds": timing.seconds,
                 "build_overlapped": overlapped}
        for result in pending:
            self.store.add_result(self.run_id, _with_detail(result, commit, facts))
        point = CommitPoint(
            commit, self.commits.index(commit), e.change, e.ci_low, e.ci_high,
            tuple(math.log(t / c) for c, t in zip(latency.control, latency.treatment,
                                                   strict=True)),
            build=timing, measured=measured, build_overlapped=overlapped,
        )
        self.points[commit] = point
        return point


def _with_detail(result: Result, commit: str, facts: dict[str, object]) -> Result:
    return replace(result, details={**result.details, DetailKey.COMMIT: commit,
                                    DetailKey.TRACK_ESTIMATE: facts})


def wait_interval(seconds: float, status: Path | None) -> bool:
    """Sleep between passes of ``--follow``; False when a stop was requested meanwhile."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _stop_requested(status):
            return False
        time.sleep(min(1.0, deadline - time.monotonic()))
    return not _stop_requested(status)

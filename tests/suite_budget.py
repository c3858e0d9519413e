"""A pytest plugin: the suite is held to a budget of costly processes, and says its time.

Most of the suite's time goes to child processes: a zoo export (``python -m benchlab.exporting.job``,
20 s to 2 min each: it imports torch and every converter), a runner (``python -m
benchlab.runner``, a runtime's import each), a bench script or a whole ``benchlab`` command. A
test that exports the zoo again into a cache of its own, or runs a default-sized sweep where a
small one shows the same, shows here first: every process a test starts is counted by kind
(:func:`kind_of`), and the run fails when a kind's total passes its budget in pyproject.toml
(``process_budget``, ``kind count`` per line). Counts, unlike seconds, do not move with the load
of a shared machine, so the budget can be strict: a run over it names the kind, the tests that
started most of them and what to do.

The run's CPU time (:func:`cpu_seconds`) is printed beside its wall time: the pytest process's
own and that of every process below it that ended and was waited for, so that a slower or
busier machine (same CPU time, longer wall time) is told from a heavier suite (more CPU time).

**The cost budget** holds that CPU time, and travels between machines: a machine 1.5 times
slower spends 1.5 times the CPU seconds on the same suite, so seconds alone cannot be budgeted.
At the start of the run a short fixed workload (:func:`calibration_workload`: Python code and
compiled C, as the suite's processes run) is timed in CPU seconds; the run's cost is its tests'
CPU time scaled by ``calibration_reference_s / calibration``, i.e. expressed in CPU minutes of
the reference machine on which ``calibration_reference_s`` was measured (pyproject.toml). The
run fails when the cost passes ``cost_budget_minutes``. The builds run before the tests
(tests/prebuild.py, :func:`record_build`) are shown apart and are not in the cost.

Only processes started by the test processes themselves are seen, not their children's. Under
pytest-xdist each worker counts its own tests and the reports carry the counts to the
controller, which adds them up.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from calibration import calibration_seconds

# Kinds of child process, judged from the argument list (first match wins).
KINDS = (
    ("export", ("benchlab.exporting.job",)),
    ("runner", ("benchlab.runner",)),
    ("bench script", ("/bench/",)),
    ("benchlab command", ("-m benchlab ", "benchlab.cli", "/bin/benchlab ")),
    ("pytest", ("-m pytest",)),
    ("lab", ("benchlab.lab",)),
)
OTHER = "other"

_PROPERTY = "processes_started"
_TOTALS = pytest.StashKey[Counter[str]]()
_BY_TEST = pytest.StashKey[dict[str, Counter[str]]]()
_STARTED = pytest.StashKey[float]()
_CPU = pytest.StashKey[tuple[float, float]]()
_BUILDS = pytest.StashKey[tuple[float, float]]()
_CALIBRATION = pytest.StashKey[float]()
_COST = pytest.StashKey["Cost | None"]()


def kind_of(args: Any) -> str:
    """What kind of process an argument list starts (see :data:`KINDS`)."""
    if isinstance(args, (str, bytes, os.PathLike)):
        words = [os.fsdecode(args)]
    else:
        words = [os.fsdecode(a) for a in args]
    text = " ".join(words) + " "
    for kind, needles in KINDS:
        if any(needle in text for needle in needles):
            return kind
    return OTHER


class ProcessCounter:
    """Counts the processes this Python process starts, by kind, from the moment it is
    installed; the wrapped ``Popen.__init__`` calls the original unchanged."""

    def __init__(self) -> None:
        self.started: Counter[str] = Counter()

    def install(self) -> None:
        original = subprocess.Popen.__init__
        counter = self

        def init(popen: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> None:
            counter.started[kind_of(args)] += 1
            original(popen, args, *rest, **kwargs)

        subprocess.Popen.__init__ = init  # type: ignore[method-assign]


def parse_budget(lines: list[str]) -> dict[str, int]:
    """``process_budget``'s lines, ``kind count`` each, as a mapping."""
    budget = {}
    for line in lines:
        kind, _, count = line.rpartition(" ")
        known = {k for k, _ in KINDS} | {OTHER}
        if kind.strip() not in known or not count.isdigit():
            raise pytest.UsageError(f"process_budget: {line!r} is not '<kind> <count>' with a "
                                    f"kind among {', '.join(sorted(known))}")
        budget[kind.strip()] = int(count)
    return budget


class _Recorder:
    """In a process that runs tests: the counts of each test, set on its teardown report."""

    def __init__(self) -> None:
        self.counter = ProcessCounter()
        self.counter.install()
        self.before: Counter[str] = Counter()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        self.before = Counter(self.counter.started)
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None],
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "teardown":
            started = self.counter.started - self.before
            if started:
                report.user_properties.append((_PROPERTY, dict(started)))
        return report


class _Totals:
    """In the process that reports (the xdist controller, or a plain run): the sums."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for key, value in report.user_properties:
            if key == _PROPERTY:
                self.config.stash[_TOTALS].update(value)
                self.config.stash[_BY_TEST][report.nodeid].update(value)


def cpu_seconds() -> tuple[float, float]:
    """The CPU seconds (user + system) of this process, and of its child processes that have
    ended and been waited for, each with its own waited-for children, down the tree.

    Called in the xdist controller after its workers have ended (execnet waits for each), the
    second figure holds the workers' and every process their tests started and waited for
    (``subprocess.run``, a killed server's ``wait``), as ``/usr/bin/time`` counts them. A
    process that detached and was never waited for (a daemon: PostgreSQL's server under
    ``pg_ctl start``, the adb server) is not in it."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def time_lines(wall_s: float, cpu: tuple[float, float], cores: int) -> list[str]:
    """The summary's lines on time: the wall time, then the CPU time of ``cpu`` (pytest's own
    seconds, its child processes' seconds) and the cores it kept busy on average."""
    own, children = cpu
    total = own + children
    busy = f"{total / wall_s:.1f}" if wall_s > 0 else "?"
    return [f"wall time {wall_s / 60:.1f} min",
            f"CPU time {total / 60:.1f} min ({total:.0f} s: pytest {own:.0f} s, its child "
            f"processes {children:.0f} s), {busy} of {cores} cores busy on average"]


@dataclass(frozen=True)
class Cost:
    """What the run's tests cost, in CPU minutes of the reference machine."""

    #: The tests' CPU seconds here: the run's, less the builds run before the tests.
    tests_cpu_s: float
    #: This machine's calibration, and the reference machine's, in CPU seconds.
    calibration_s: float
    reference_s: float
    #: The budget in reference CPU minutes (0: none).
    budget_minutes: float

    @property
    def minutes(self) -> float:
        return self.tests_cpu_s / 60 * self.reference_s / self.calibration_s

    @property
    def over(self) -> bool:
        return bool(self.budget_minutes) and self.minutes > self.budget_minutes

    def line(self) -> str:
        speed = self.calibration_s / self.reference_s
        text = (f"cost {self.minutes:.2f} reference CPU minutes: the tests' "
                f"{self.tests_cpu_s:.1f} CPU seconds here, where the calibration took "
                f"{self.calibration_s * 1000:.0f} ms ({speed:.2f} times the reference "
                f"machine's {self.reference_s * 1000:.0f} ms)")
        if not self.budget_minutes:
            return text
        if self.over:
            return (f"{text}: OVER the budget of {self.budget_minutes:g}, the run fails "
                    "(bench/suite_cost.py shows where the CPU goes)")
        return f"{text}: within the budget of {self.budget_minutes:g}"


def run_cpu_seconds(config: pytest.Config) -> tuple[float, float] | None:
    """The CPU seconds the summary printed (:func:`cpu_seconds`), None before it."""
    return config.stash.get(_CPU, None)


def record_build(config: pytest.Config, *, wall_s: float, cpu_s: float) -> None:
    """Say that builds run before the tests (tests/prebuild.py) took ``wall_s`` seconds and
    ``cpu_s`` CPU seconds of the run's processes: shown apart, left out of the cost."""
    wall, cpu = config.stash.get(_BUILDS, (0.0, 0.0))
    config.stash[_BUILDS] = (wall + wall_s, cpu + cpu_s)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("process_budget", type="linelist", default=[],
                  help="'<kind> <count>' per line: the most processes of each kind the run may "
                       "start (tests/suite_budget.py)")
    parser.addini("cost_budget_minutes", default="0",
                  help="the most the tests may cost, in CPU minutes of the reference machine "
                       "(tests/suite_budget.py); 0: no budget")
    parser.addini("calibration_reference_s", default="0",
                  help="the calibration's CPU seconds on the reference machine "
                       "(tests/calibration.py)")
    parser.addoption("--suite-budget-out", type=Path, default=None,
                     help="write the suite budget's figures to this JSON file "
                          "(bench/suite_cost.py reads them)")


def _reporting(config: pytest.Config) -> bool:
    """Whether this process adds up the run (the xdist controller, or a run in one process)."""
    return not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TOTALS] = Counter()
    config.stash[_BY_TEST] = defaultdict(Counter)
    config.stash[_STARTED] = time.monotonic()
    parse_budget(config.getini("process_budget"))  # a typo fails at start, not at the end
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        config.pluginmanager.register(_Recorder(), "suite_budget_recorder")
    config.pluginmanager.register(_Totals(config), "suite_budget_totals")
    if _reporting(config):
        # Before any worker starts: the machine is as quiet as the run will find it.
        config.stash[_CALIBRATION] = calibration_seconds()


def _over(config: pytest.Config) -> dict[str, tuple[int, int]]:
    totals = config.stash.get(_TOTALS, Counter())
    budget = parse_budget(config.getini("process_budget"))
    return {kind: (totals[kind], limit) for kind, limit in budget.items()
            if totals[kind] > limit}


def _cost(config: pytest.Config, cpu: tuple[float, float]) -> Cost | None:
    reference = float(config.getini("calibration_reference_s") or 0)
    if not reference:
        return None
    _, builds_cpu = config.stash.get(_BUILDS, (0.0, 0.0))
    return Cost(tests_cpu_s=max(0.0, sum(cpu) - builds_cpu),
                calibration_s=config.stash[_CALIBRATION], reference_s=reference,
                budget_minutes=float(config.getini("cost_budget_minutes") or 0))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not _reporting(config):
        return  # the controller decides on the sums
    # Last: xdist's own pytest_sessionfinish has ended and waited for its workers, and the
    # session fixtures of a run in one process are torn down, so every process is counted.
    config.stash[_CPU] = cpu = cpu_seconds()
    cost = config.stash[_COST] = _cost(config, cpu)
    over = bool(_over(config)) or (cost is not None and cost.over)
    if over and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    totals = config.stash.get(_TOTALS, Counter())
    budget = parse_budget(config.getini("process_budget"))
    wall_s = time.monotonic() - config.stash[_STARTED]
    cpu = config.stash.get(_CPU, None) or cpu_seconds()
    terminalreporter.section("suite budget")
    for line in time_lines(wall_s, cpu, len(os.sched_getaffinity(0))):
        terminalreporter.write_line(line)
    builds = config.stash.get(_BUILDS, None)
    if builds is not None:
        terminalreporter.write_line(f"builds before the tests (tests/prebuild.py): "
                                    f"{builds[0]:.0f} s, {builds[1]:.0f} s of CPU, in the "
                                    "times above, not in the cost")
    cost = config.stash.get(_COST, None)
    if cost is not None:
        terminalreporter.write_line(cost.line(), red=cost.over)
    out = config.getoption("suite_budget_out", None)
    if out is not None:
        out.write_text(json.dumps({
            "wall_s": round(wall_s, 1), "pytest_cpu_s": round(cpu[0], 1),
            "children_cpu_s": round(cpu[1], 1),
            "builds": None if builds is None else {"wall_s": round(builds[0], 1),
                                                   "cpu_s": round(builds[1], 1)},
            "cost": None if cost is None else {
                "tests_cpu_s": round(cost.tests_cpu_s, 1),
                "calibration_s": round(cost.calibration_s, 4),
                "reference_s": cost.reference_s, "minutes": round(cost.minutes, 2),
                "budget_minutes": cost.budget_minutes, "over": cost.over},
            "processes": dict(totals)}, indent=1) + "\n")
    terminalreporter.write_line("processes started: " + ", ".join(
        f"{kind} {n}" + (f"/{budget[kind]}" if kind in budget else "")
        for kind, n in totals.most_common()))
    over = _over(config)
    for kind, (count, limit) in over.items():
        heaviest = sorted(config.stash[_BY_TEST].items(), key=lambda kv: -kv[1][kind])[:5]
        terminalreporter.write_line(
            f"{count} {kind} processes, over the budget of {limit}: the run fails. Most from: "
            + ", ".join(f"{nodeid} ({counts[kind]})" for nodeid, counts in heaviest
                        if counts[kind]), red=True)
        terminalreporter.write_line(
            "Share the expensive work (the session's zoo_cache_dir, llama_15m_export), run a "
            "smaller workload, or pay for the new tests by making others cheaper: the budget "
            "is not raised to let a change pass.", red=True)

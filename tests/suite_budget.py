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

The wall time of the run is printed beside ``time_budget_minutes`` (never asserted: these
machines are shared and noisy); ``bench/suite_cost.py`` measures where it goes. Beside it, the
run's CPU time (:func:`cpu_seconds`): the pytest process's own and that of every process below
it that ended and was waited for, so that a slower or busier machine (same CPU time, longer
wall time) is told from a heavier suite (more CPU time).

Only processes started by the test processes themselves are seen, not their children's. Under
pytest-xdist each worker counts its own tests and the reports carry the counts to the
controller, which adds them up.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Generator
from typing import Any

import pytest

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


def time_lines(wall_s: float, cpu: tuple[float, float], planned_minutes: float,
               cores: int) -> list[str]:
    """The summary's lines on time: the wall time beside the budget, then the CPU time of
    ``cpu`` (pytest's own seconds, its child processes' seconds) and the cores it kept busy
    on average."""
    minutes = wall_s / 60
    wall = f"wall time {minutes:.1f} min"
    if planned_minutes:
        verdict = ("within" if minutes <= planned_minutes
                   else "OVER (bench/suite_cost.py shows where)")
        wall += f", {verdict} the {planned_minutes:g}-minute budget"
    own, children = cpu
    total = own + children
    busy = f"{total / wall_s:.1f}" if wall_s > 0 else "?"
    return [wall, f"CPU time {total / 60:.1f} min ({total:.0f} s: pytest {own:.0f} s, its child "
                  f"processes {children:.0f} s), {busy} of {cores} cores busy on average"]


def run_cpu_seconds(config: pytest.Config) -> tuple[float, float] | None:
    """The CPU seconds the summary printed (:func:`cpu_seconds`), None before it."""
    return config.stash.get(_CPU, None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("process_budget", type="linelist", default=[],
                  help="'<kind> <count>' per line: the most processes of each kind the run may "
                       "start (tests/suite_budget.py)")
    parser.addini("time_budget_minutes", default="0",
                  help="the run's intended wall time, printed beside the measured one")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TOTALS] = Counter()
    config.stash[_BY_TEST] = defaultdict(Counter)
    config.stash[_STARTED] = time.monotonic()
    parse_budget(config.getini("process_budget"))  # a typo fails at start, not at the end
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        config.pluginmanager.register(_Recorder(), "suite_budget_recorder")
    config.pluginmanager.register(_Totals(config), "suite_budget_totals")


def _over(config: pytest.Config) -> dict[str, tuple[int, int]]:
    totals = config.stash.get(_TOTALS, Counter())
    budget = parse_budget(config.getini("process_budget"))
    return {kind: (totals[kind], limit) for kind, limit in budget.items()
            if totals[kind] > limit}


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        return  # the controller decides on the sums
    if _over(session.config) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    totals = config.stash.get(_TOTALS, Counter())
    budget = parse_budget(config.getini("process_budget"))
    wall_s = time.monotonic() - config.stash[_STARTED]
    planned = float(config.getini("time_budget_minutes") or 0)
    # Here the xdist workers have ended and been waited for (xdist's pytest_sessionfinish,
    # before the terminal reporter's summary), and the session fixtures torn down.
    config.stash[_CPU] = cpu = cpu_seconds()
    terminalreporter.section("suite budget")
    for line in time_lines(wall_s, cpu, planned, len(os.sched_getaffinity(0))):
        terminalreporter.write_line(line)
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
            "smaller workload, or raise process_budget in pyproject.toml and say why in the "
            "commit.", red=True)

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
machines are shared and noisy); ``bench/suite_cost.py`` measures where it goes.

Only processes started by the test processes themselves are seen, not their children's. Under
pytest-xdist each worker counts its own tests and the reports carry the counts to the
controller, which adds them up.
"""

from __future__ import annotations

import os
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
    minutes = (time.monotonic() - config.stash[_STARTED]) / 60
    planned = float(config.getini("time_budget_minutes") or 0)
    terminalreporter.section("suite budget")
    if planned:
        verdict = "within" if minutes <= planned else "OVER (bench/suite_cost.py shows where)"
        terminalreporter.write_line(f"wall time {minutes:.1f} min, {verdict} the "
                                    f"{planned:g}-minute budget")
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

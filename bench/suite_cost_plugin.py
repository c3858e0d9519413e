"""A pytest plugin for bench/suite_cost.py: where each test's time goes.

Loaded with ``-p suite_cost_plugin --suite-cost-dir DIR`` (bench/ on ``sys.path``), it writes one
JSON file per pytest process into DIR (one per xdist worker, ``main`` without xdist). Per test
and phase (setup, call, teardown) it records the wall time, the CPU time of the pytest process
itself and of the child processes it reaped (``getrusage``) and the time the main thread asked
``time.sleep`` for; per test, the child processes it started by kind (exports, runners, bench
scripts: counted by tests/suite_budget.py, read from the report) and the runtimes it was first
to import. Per fixture it records the wall time of each setup with its scope, so a session
fixture's one-off cost shows apart from the tests that use it.

Nothing here changes what a test does: the counter wraps ``time.sleep`` and calls the original.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

# Heavy modules whose first import a test pays for.
RUNTIMES = ("torch", "onnxruntime", "openvino", "executorch", "ai_edge_litert", "litert_torch",
            "transformers", "llama_cpp", "playwright", "procrastinate", "fastapi", "pandas",
            "mlperf_loadgen", "onnx")


class Counters:
    """Running totals the wrapped functions add to; the test hooks read differences."""

    def __init__(self) -> None:
        self.sleep_s = 0.0
        self.main = threading.main_thread()

    def install(self) -> None:
        original_sleep = time.sleep
        counters = self

        def sleep(seconds: float) -> None:
            if threading.current_thread() is counters.main:
                counters.sleep_s += max(0.0, float(seconds))
            original_sleep(seconds)

        time.sleep = sleep  # type: ignore[assignment]


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class SuiteCost:
    def __init__(self, out_dir: Path, worker: str) -> None:
        self.out_dir = out_dir
        self.worker = worker
        self.counters = Counters()
        self.counters.install()
        self.tests: dict[str, dict[str, Any]] = {}
        self.fixtures: list[dict[str, Any]] = []
        self.current: str | None = None
        self.started = time.monotonic()
        self.seen_modules = {name for name in RUNTIMES if name in sys.modules}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        self.current = item.nodeid
        started = time.monotonic() - self.started
        self.tests[item.nodeid] = {"worker": self.worker, "start_s": started,
                                   "phases": {}, "outcome": "passed", "imported": [],
                                   "processes": {}, "clock": [time.time(), None]}
        try:
            return (yield)
        finally:
            # Wall-clock bounds, for charging exited processes to tests (process_accounting).
            self.tests[item.nodeid]["clock"][1] = time.time()
            fresh = [name for name in RUNTIMES
                     if name in sys.modules and name not in self.seen_modules]
            self.seen_modules.update(fresh)
            self.tests[item.nodeid]["imported"] = fresh
            self.current = None

    def _phase(self, item: pytest.Item, phase: str) -> Any:
        wall0 = time.monotonic()
        own0, children0 = _cpu()
        sleep0 = self.counters.sleep_s
        try:
            return (yield)
        finally:
            own1, children1 = _cpu()
            self.tests[item.nodeid]["phases"][phase] = {
                "wall_s": round(time.monotonic() - wall0, 4),
                "cpu_s": round(own1 - own0, 4),
                "children_cpu_s": round(children1 - children0, 4),
                "sleep_s": round(self.counters.sleep_s - sleep0, 4),
            }

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        return (yield from self._phase(item, "setup"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        return (yield from self._phase(item, "call"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        return (yield from self._phase(item, "teardown"))

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any],
                             request: pytest.FixtureRequest) -> Any:
        started = time.monotonic()
        try:
            return (yield)
        finally:
            self.fixtures.append({
                "fixture": fixturedef.argname, "scope": fixturedef.scope,
                "baseid": fixturedef.baseid, "test": self.current,
                "wall_s": round(time.monotonic() - started, 4)})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = self.tests.get(report.nodeid)
        if row is None:
            return
        # tests/suite_budget.py counts the processes each test started, on its teardown report.
        for key, value in report.user_properties:
            if key == "processes_started":
                row["processes"] = dict(value)
        if report.failed:
            row["outcome"] = "failed" if report.when == "call" else "error"
        elif report.skipped and row["outcome"] == "passed":
            row["outcome"] = "skipped"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        payload = {"worker": self.worker, "pid": os.getpid(),
                   "wall_s": round(time.monotonic() - self.started, 2),
                   "tests": self.tests, "fixtures": self.fixtures}
        (self.out_dir / f"{self.worker}.json").write_text(json.dumps(payload))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--suite-cost-dir", default=None,
                     help="write where each test's time goes into this folder "
                          "(bench/suite_cost.py)")


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("suite_cost_dir")
    # The xdist controller runs no tests: only the processes that do record.
    runs_tests = hasattr(config, "workerinput") or not config.getoption("numprocesses", None)
    if out is None or not runs_tests:
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    config.pluginmanager.register(SuiteCost(Path(out), worker), "suite_cost")

"""A pytest plugin: a test that needs PostgreSQL or the browser may not skip unnoticed.

The lab's tests skip where PostgreSQL's server binaries are missing, the browser tests where
Chromium or Playwright is, and llama.cpp's where ``llama-cpp-python`` (compiled at install) is: right on a laptop, but a CI run that skips them all still
ends green having tested none of the lab. So by default the run fails when such a test
skipped, and its summary names the missing dependency and each distinct reason;
``--allow-skip=postgres,browser,llamacpp`` (any name alone too) lets a developer run the rest on
purpose without them.

A test needs a dependency when it carries the dependency's marker, or uses its fixture: a
lab test that forgot the ``postgres`` marker still reaches PostgreSQL through ``pg_server``.
tests/conftest.py loads this module; tests/test_required_deps.py runs it on generated tests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Generator

import pytest

REQUIRED = {
    "postgres": "PostgreSQL's server binaries, initdb and pg_ctl (Debian: apt-get install "
                "postgresql)",
    "browser": "headless Chromium driven by Playwright (Debian: apt-get install chromium)",
    "llamacpp": "llama-cpp-python, which README's test command compiles (pip install "
                "'benchlab[llamacpp]')",
    "arm": "the ARM stand-in: QEMU's aarch64 emulator registered with binfmt_misc (root once) "
           "and a cross compiler (Debian: apt-get install qemu-user-static "
           "g++-aarch64-linux-gnu cmake)",
    "valgrind": "valgrind, whose callgrind counts instructions in counting mode (Debian: "
                "apt-get install valgrind)",
    "hg": "Mercurial, whose repositories track walks (Debian: apt-get install mercurial)",
}
"""Each dependency a test may not skip for: marker name → what to install."""

# The fixture that reaches each dependency (llama.cpp has none: its tests carry the marker).
_FIXTURES = {"postgres": "pg_server", "browser": "browser"}

_ALLOWED = pytest.StashKey[frozenset[str]]()
_SKIPPED = pytest.StashKey[list[tuple[str, str, str]]]()  # (dependency, node id, reason)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--allow-skip", action="append", default=[], metavar="DEPS",
        help="let tests that need these dependencies skip without failing the run "
             f"(comma-separated: {', '.join(REQUIRED)}); by default such a skip fails it")


def pytest_configure(config: pytest.Config) -> None:
    names = {name.strip() for value in config.getoption("allow_skip")
             for name in value.split(",") if name.strip()}
    unknown = sorted(names - REQUIRED.keys())
    if unknown:
        raise pytest.UsageError(f"--allow-skip: unknown dependency {', '.join(unknown)}; "
                                f"known: {', '.join(REQUIRED)}")
    config.stash[_ALLOWED] = frozenset(names)
    config.stash[_SKIPPED] = []
    config.pluginmanager.register(_SkipCollector(config), "required_deps_skips")


def _needs(item: pytest.Item) -> list[str]:
    fixtures = set(getattr(item, "fixturenames", ()))
    return [name for name in REQUIRED
            if item.get_closest_marker(name) is not None or _FIXTURES.get(name) in fixtures]


def _reason(report: pytest.TestReport) -> str:
    # A skip's longrepr is (file, line, "Skipped: why").
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return str(report.longrepr)


# The report carries what the test needs, so the process that prints the summary (under
# pytest-xdist the controller, which runs no test itself) learns of it from the report alone.
_NEEDS = "needs_dependency"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
        item: pytest.Item, call: pytest.CallInfo[None],
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    # An expected failure is reported as skipped too; it says nothing about the machine.
    if report.skipped and not hasattr(report, "wasxfail"):
        report.user_properties.extend((_NEEDS, name) for name in _needs(item))
    return report


class _SkipCollector:
    """Collects the skips of tests that needed a dependency, from their reports.

    Under xdist a worker sees its own reports and the controller each report it receives; the
    worker's count is never read, the controller's (or a plain run's) decides the exit status.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.skipped:
            return
        allowed = self.config.stash[_ALLOWED]
        for key, name in report.user_properties:
            if key == _NEEDS and name not in allowed:
                self.config.stash[_SKIPPED].append((name, report.nodeid, _reason(report)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Only a run that would otherwise pass is turned into a failure: an interrupted or
    # already failing run keeps its own exit status.
    if session.config.stash.get(_SKIPPED, []) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = terminalreporter.config.stash.get(_SKIPPED, [])
    if not skipped:
        return
    by_name: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, nodeid, reason in skipped:
        by_name[name][reason].append(nodeid)
    terminalreporter.section("tests skipped for a missing dependency: the run fails",
                             red=True, bold=True)
    for name in sorted(by_name):
        count = sum(len(nodes) for nodes in by_name[name].values())
        terminalreporter.write_line(f"{name}: {count} test(s) skipped; they need "
                                    f"{REQUIRED[name]}", red=True)
        for reason, nodes in by_name[name].items():
            more = f" and {len(nodes) - 1} more" if len(nodes) > 1 else ""
            terminalreporter.write_line(f"  {reason} ({nodes[0]}{more})")
    terminalreporter.write_line(
        f"Install them (README's test command does), or run without them on purpose: "
        f"--allow-skip={','.join(sorted(by_name))}")

"""A pytest plugin: what the run must build once per machine is built before its tests start.

Builds are not tests. The ARM board's arm64 root and llama.cpp's runner for the ARM phone take
minutes (docs/performance.md §15); built inside a test, beside the other workers' tests, they
took the test past its time limit on a slower VM. Here the process that hands out the tests
(the xdist controller once every worker has collected, or the only process) runs the builds
the collected modules need, one after another, with nothing else running: the workers wait
for their first test until the builds are done.

Each build is ``python -m benchlab_standin --prepare --only KEY``, the command a user runs
(:func:`build_command`), in a process of its own: its lines are shown as they come, with its
time; it is cached by key, so a second run finds it in a moment; one that fails ends the run
with the build's own error; one that runs past ``build_limit_minutes`` (pyproject.toml) is
killed, with everything it started, and ends the run too. The CPU time of the builds is
reported apart from the tests' and left out of the suite's cost (tests/suite_budget.py).

A fixture that needs a build takes it with :func:`prepared`: a cache hit in a moment, a skip
saying why where it cannot be built here, and a failure when the run did not prepare it (its
module is missing from :data:`NEEDS`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import suite_budget
from benchlab_standin.prepare import ARM_BUILDS, CANNOT_BUILD_HERE, StandinBuild

from benchlab.devicetools import PreparedTool
from benchlab.errors import InfrastructureError

#: The builds tests may need, by key.
BUILDS: dict[str, StandinBuild] = dict(ARM_BUILDS)

#: Test module → the keys of the :data:`BUILDS` it needs.
NEEDS = {
    "tests/targets/test_arm_board.py": ("board-root", "arm-et-runner", "arm-ort-runner"),
    "tests/targets/test_arm_phone.py": ("phone-tools", "arm-et-runner", "arm-litert-runner",
                                        "arm-litert-debian-runner", "host-et-runner"),
    "tests/frameworks/test_executorch_native.py": ("host-et-runner",),
    "tests/frameworks/test_onnxruntime_native.py": ("host-ort-runner",),
    "tests/frameworks/test_tflite_native.py": ("host-litert-runner",),
}

_DONE = pytest.StashKey[bool]()
_COLLECTED = pytest.StashKey[list[object]]()


def build_command(key: str) -> list[str]:
    """The process that builds ``key``: the command a user runs to prepare it."""
    return [sys.executable, "-m", "benchlab_standin", "--prepare", "--only", key]


def needed_builds(nodeids: list[str]) -> tuple[str, ...]:
    """The builds the tests ``nodeids`` need, in :data:`BUILDS`' order."""
    modules = {nodeid.split("::", 1)[0] for nodeid in nodeids}
    wanted = {key for module in modules for key in NEEDS.get(module, ())}
    return tuple(key for key in BUILDS if key in wanted)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("build_limit_minutes", default="30",
                  help="the longest one build before the tests may take (tests/prebuild.py)")


def _build(key: str, limit_s: float, say: Callable[[str], None],
           ) -> tuple[int, list[str], bool]:
    """Run one build's process, relaying its lines; its exit status, its last lines, and
    whether it was killed at the limit."""
    proc = subprocess.Popen(build_command(key), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the build and every compiler it started
        except ProcessLookupError:
            pass

    timer = threading.Timer(limit_s, kill)
    timer.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip())
            say(lines[-1])
        status = proc.wait()
    finally:
        timer.cancel()
    return status, lines[-20:], killed.is_set()


#: The project's own Python, compiled before the tests (:func:`compile_bytecode`).
SOURCES = ("src", "standin/src", "tests", "bench")


def compile_bytecode(root: Path) -> int:
    """Write the bytecode of the project's own modules; how many files it compiled.

    An editable install leaves them uncompiled, and where ``PYTHONDONTWRITEBYTECODE`` is set
    (as in this project's VMs) no process writes them: each of the run's 2,000-odd Python
    processes (runners, exports, commands) compiled every benchlab module it imported, up to
    0.15 s of CPU each. Files already compiled are left as they are."""
    import compileall
    import io
    from contextlib import redirect_stdout

    before = sum(1 for folder in SOURCES for _ in (root / folder).rglob("*.pyc"))
    with redirect_stdout(io.StringIO()):  # it lists what it could not compile: a test's fixture
        for folder in SOURCES:
            if (root / folder).is_dir():
                compileall.compile_dir(root / folder, quiet=2, workers=1)
    return sum(1 for folder in SOURCES for _ in (root / folder).rglob("*.pyc")) - before


def run_builds(config: pytest.Config, nodeids: list[str]) -> None:
    """Run the builds the tests need, once per run, saying each one's progress and time."""
    if config.stash.get(_DONE, False):
        return
    config.stash[_DONE] = True
    began, cpu_before = time.monotonic(), suite_budget.cpu_seconds()
    compiled = compile_bytecode(Path(str(config.rootpath)))
    cpu_after = suite_budget.cpu_seconds()
    # In this process: its CPU counts as a build's, apart from the tests' cost.
    suite_budget.record_build(config, wall_s=time.monotonic() - began,
                              cpu_s=cpu_after[0] - cpu_before[0])
    keys = needed_builds(nodeids)
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None and compiled:
        terminal.write_line(f"prebuild: compiled {compiled} of the project's modules to bytecode "
                            f"in {time.monotonic() - began:.1f} s")
    if not keys:
        return

    def say(text: str) -> None:
        if terminal is not None:
            terminal.write_line(f"prebuild: {text}")

    limit_s = float(config.getini("build_limit_minutes")) * 60
    if terminal is not None:
        terminal.section("builds before the tests", sep="-")
    began, cpu_before = time.monotonic(), suite_budget.cpu_seconds()[1]
    for key in keys:
        status, tail, killed = _build(key, limit_s, say)
        if killed:
            pytest.exit(f"the build {BUILDS[key].name!r} ran past its limit of "
                        f"{limit_s / 60:g} min (build_limit_minutes) and was stopped",
                        returncode=pytest.ExitCode.TESTS_FAILED)
        if status not in (0, CANNOT_BUILD_HERE):
            pytest.exit(f"the build {BUILDS[key].name!r} the tests need failed "
                        f"(exit {status}):\n" + "\n".join(tail),
                        returncode=pytest.ExitCode.TESTS_FAILED)
    wall = time.monotonic() - began
    cpu = suite_budget.cpu_seconds()[1] - cpu_before
    say(f"done in {wall:.0f} s ({cpu:.0f} s of CPU, apart from the tests' cost)")
    suite_budget.record_build(config, wall_s=wall, cpu_s=cpu)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    config = node.config  # type: ignore[attr-defined]
    # Once every worker has collected (a worker still importing beside a build would slow
    # both), before the first test is handed out.
    seen = config.stash.setdefault(_COLLECTED, [])
    seen.append(node)
    if len(seen) >= len(config.getoption("tx") or ()):
        run_builds(config, list(ids))


def pytest_collection_finish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput") or session.config.getoption("numprocesses", None):
        return  # a worker, or the controller (which collects nothing): see above
    run_builds(session.config, [item.nodeid for item in session.items])


def prepared(key: str, cache_root: Path | None = None) -> PreparedTool:
    """In a fixture: build ``key``, which the run prepared before its tests (so: found in
    its cache). Skips saying why where it cannot be built here; fails when it had to be built
    now, inside a test."""
    build = BUILDS[key]
    why = build.unavailable()
    if why:
        pytest.skip(f"{build.name} cannot be built here: {why}")
    try:
        done = build.make(cache_root, lambda text: None)
    except (RuntimeError, InfrastructureError) as exc:
        pytest.fail(f"{build.name} failed to build: {exc}")
    if done.built_now:
        pytest.fail(f"{build.name} was built inside a test ({done.seconds:.0f} s), not before "
                    f"the tests: add the module to NEEDS in tests/prebuild.py")
    return done

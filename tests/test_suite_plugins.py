"""exclusive.py and suite_budget.py, the plugins that let the suite run in parallel workers
and hold it to a budget, checked on generated tests in pytest runs of their own (as
test_required_deps.py does), with and without pytest-xdist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Tests that note when they are inside: a plain test leaves a file for as long as it runs, an
# exclusive one too; each checks what it finds. The two plain tests in test_a.py and test_b.py
# wait for each other, so a parallel run provably runs them side by side (no timing involved:
# each waits for the other's file to appear). xdist hands each worker a run of consecutive tests
# first, two each here: test_plain_a and test_plain_x to one, test_plain_b and test_plain_c to
# the other.
_INSIDE = '''\
import os, time
from pathlib import Path
import pytest

ROOM = Path(os.environ["ROOM"])

def enter(name):
    assert not (ROOM / "exclusive").exists(), f"{name} started beside the exclusive test"
    (ROOM / name).write_text("")

def leave(name):
    assert not (ROOM / "exclusive").exists(), f"{name} ran beside the exclusive test"
    (ROOM / name).unlink()

def meet(name, other):
    (ROOM / f"met-{name}").write_text("")
    deadline = time.monotonic() + 60
    while not (ROOM / f"met-{other}").exists():
        assert time.monotonic() < deadline, f"{name} never ran beside {other}"
        time.sleep(0.01)
'''

_TESTS = {
    "test_a.py": _INSIDE + '''
def test_plain_a():
    enter("a"); meet("a", "b"); time.sleep(0.3); leave("a")

def test_plain_x():
    enter("x"); time.sleep(0.3); leave("x")

@pytest.mark.exclusive
def test_alone():
    inside = sorted(p.name for p in ROOM.iterdir() if not p.name.startswith("met-"))
    assert inside == [], f"other tests inside: {inside}"
    (ROOM / "exclusive").write_text("")
    time.sleep(0.5)
    (ROOM / "exclusive").unlink()
''',
    "test_b.py": _INSIDE + '''
def test_plain_b():
    enter("b"); meet("b", "a"); time.sleep(0.3); leave("b")

def test_plain_c():
    enter("c"); time.sleep(0.3); leave("c")
''',
}

_BUDGETED = '''\
import subprocess, sys

def test_starts_two():
    for _ in range(2):
        subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_starts_one_more():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
'''


def _pytest(project: Path, *args: str, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "ROOM": str(project / "room"), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=180, check=False)


def _project(tmp_path: Path, ini: str, tests: dict[str, str]) -> Path:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    exclusive: needs the whole machine\n" + ini)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["exclusive", "suite_budget"]\n')
    (tmp_path / "room").mkdir()
    for name, text in tests.items():
        (tmp_path / name).write_text(text)
    return tmp_path


XDIST = ("-p", "xdist.plugin", "-n", "2")


def test_an_exclusive_test_runs_alone_while_the_others_run_side_by_side(tmp_path: Path) -> None:
    project = _project(tmp_path, "", _TESTS)
    done = _pytest(project, *XDIST)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout


def test_exclusive_tests_go_last_in_any_order(tmp_path: Path) -> None:
    project = _project(tmp_path, "", {"test_a.py": _TESTS["test_a.py"].replace(
        'meet("a", "b"); ', ""), "test_b.py": _TESTS["test_b.py"].replace('meet("b", "a"); ', "")})
    for args in ((), ("-p", "random_order.plugin", "--random-order-seed=3")):
        done = _pytest(project, "--collect-only", *args)
        assert done.returncode == 0, done.stdout + done.stderr
        collected = [line for line in done.stdout.splitlines() if "::" in line]
        assert len(collected) == 5 and collected[-1].endswith("test_alone"), collected
    # Without xdist there is nothing to wait for: the same tests pass in one process.
    done = _pytest(project)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("parallel", [(), XDIST], ids=["one process", "xdist workers"])
def test_a_run_over_its_process_budget_fails_naming_the_tests(
        tmp_path: Path, parallel: tuple[str, ...]) -> None:
    project = _project(tmp_path, "process_budget =\n    other 2\n", {"test_p.py": _BUDGETED})
    done = _pytest(project, *parallel)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert "processes started: other 3/2" in done.stdout
    assert "3 other processes, over the budget of 2: the run fails" in done.stdout
    assert "test_p.py::test_starts_two (2), test_p.py::test_starts_one_more (1)" in done.stdout

    (project / "pytest.ini").write_text((project / "pytest.ini").read_text().replace(
        "other 2", "other 3"))
    done = _pytest(project, *parallel)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "processes started: other 3/3" in done.stdout


def test_a_budget_line_that_names_no_kind_is_refused_at_start(tmp_path: Path) -> None:
    project = _project(tmp_path, "process_budget =\n    exports 2\n", {"test_p.py": _BUDGETED})
    done = _pytest(project)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "process_budget: 'exports 2' is not '<kind> <count>'" in done.stderr


# Tests that start a child process burning CPU until its own count passes half a second; each
# writes the CPU seconds it counted for itself into ROOM as it ends.
_BURNING = '''\
import os, subprocess, sys
from pathlib import Path

BURN = """
import resource
def cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime
while cpu() < 0.5:
    pass
print(cpu())
"""

def burn(name):
    done = subprocess.run([sys.executable, "-c", BURN], capture_output=True, text=True,
                          check=True)
    (Path(os.environ["ROOM"]) / name).write_text(done.stdout)

def test_one():
    burn("one")

def test_two():
    burn("two")
'''

# Writes what the summary printed as the run's CPU seconds, after it (pytest_unconfigure).
_CPU_WRITTEN = '''
import os
from pathlib import Path
import suite_budget

def pytest_unconfigure(config):
    cpu = suite_budget.run_cpu_seconds(config)
    if cpu is not None and not hasattr(config, "workerinput"):
        (Path(os.environ["ROOM"]) / "cpu").write_text("%r %r" % cpu)
'''


@pytest.mark.parametrize("parallel", [(), XDIST], ids=["one process", "xdist workers"])
def test_the_cpu_time_counts_the_processes_that_the_tests_started(
        tmp_path: Path, parallel: tuple[str, ...]) -> None:
    project = _project(tmp_path, "", {"test_burn.py": _BURNING})
    with (project / "conftest.py").open("a") as conftest:
        conftest.write(_CPU_WRITTEN)
    done = _pytest(project, *parallel)
    assert done.returncode == 0, done.stdout + done.stderr
    room = project / "room"
    burned = float((room / "one").read_text()) + float((room / "two").read_text())
    own, children = map(float, (room / "cpu").read_text().split())
    # Under xdist the burners are the workers' children: they reach the controller's count only
    # through workers that ended and were waited for before the summary.
    assert children >= burned >= 1.0, (own, children, burned)
    assert (f"CPU time {(own + children) / 60:.1f} min ({own + children:.0f} s: pytest "
            f"{own:.0f} s, its child processes {children:.0f} s)") in done.stdout, done.stdout


def test_the_time_lines_put_the_cpu_time_beside_the_wall_time() -> None:
    from suite_budget import time_lines

    assert time_lines(600.0, (60.0, 1140.0), 2) == [
        "wall time 10.0 min",
        "CPU time 20.0 min (1200 s: pytest 60 s, its child processes 1140 s), 2.0 of 2 cores "
        "busy on average"]
    assert time_lines(1200.0, (30.0, 1410.0), 4)[1] == (
        "CPU time 24.0 min (1440 s: pytest 30 s, its child processes 1410 s), 1.2 of 4 "
        "cores busy on average")


@pytest.mark.parametrize("parallel", [(), XDIST], ids=["one process", "xdist workers"])
def test_a_run_over_its_cost_budget_fails_and_says_its_cost(
        tmp_path: Path, parallel: tuple[str, ...]) -> None:
    # The reference calibration equals this machine's order of magnitude; a budget of a
    # hundredth of a reference minute is passed by two half-second burners, a thousand is not.
    ini = "calibration_reference_s = 0.1\ncost_budget_minutes = 0.01\n"
    project = _project(tmp_path, ini, {"test_burn.py": _BURNING})
    done = _pytest(project, *parallel)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert "OVER the budget of 0.01, the run fails" in done.stdout, done.stdout
    (project / "pytest.ini").write_text((project / "pytest.ini").read_text().replace(
        "cost_budget_minutes = 0.01", "cost_budget_minutes = 1000"))
    done = _pytest(project, *parallel)
    assert done.returncode == 0, done.stdout + done.stderr
    cost_line = next(line for line in done.stdout.splitlines() if line.startswith("cost "))
    assert cost_line.endswith("within the budget of 1000"), cost_line
    # The cost is the tests' CPU minutes scaled by the two calibrations it names.
    minutes = float(cost_line.split()[1])
    cpu_s = float(cost_line.split("the tests' ")[1].split()[0])
    here_ms, reference_ms = (float(part.split(" ms")[0].split()[-1])
                             for part in cost_line.split("took ")[1].split("machine's "))
    assert cpu_s >= 1.0
    assert minutes == pytest.approx(cpu_s / 60 * reference_ms / here_ms, abs=0.01), cost_line


def test_the_calibration_times_the_same_work_each_round() -> None:
    from calibration import calibration_seconds, calibration_workload

    assert calibration_workload() == calibration_workload()
    first, second = calibration_seconds(rounds=3), calibration_seconds(rounds=3)
    assert 0 < first and 0 < second
    # The fastest of three rounds, twice: the same work, whatever else the machine does
    # (CPU time, not wall time); a factor of two leaves room for a busy neighbour.
    assert 0.5 < first / second < 2.0


# A suite of two modules whose first test takes its worker down with it.
_DYING = {
    "test_dies.py": "import os\n\ndef test_dies():\n    os._exit(3)\n\n"
                    "def test_after_the_death():\n    pass\n",
    "test_lives.py": "def test_lives_1():\n    pass\n\ndef test_lives_2():\n    pass\n",
}


def test_a_dying_worker_fails_its_test_and_the_run_ends(tmp_path: Path) -> None:
    import tomllib

    # The suite's own options (pyproject.toml), so this is the scheduling the suite runs.
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    addopts = pyproject["tool"]["pytest"]["ini_options"]["addopts"]
    addopts = addopts.replace("-n auto", "-n 2")
    project = _project(tmp_path, f"addopts = -p xdist.plugin {addopts}\n", _DYING)
    # Without the suite's --max-worker-restart=0, pytest-xdist 3.8 replaces the worker and,
    # handing out whole modules, can wait for ever (its issues 784, 1323, 1378): the timeout
    # of _pytest() would end this test instead.
    done = _pytest(project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED test_dies.py::test_dies" in done.stdout, done.stdout


# A fake build for prebuild.py: its process (what build_command gives) leaves a file, says
# what it does, fails when BREAK_BUILD says so, or hangs when HANG_BUILD does; in a test,
# prepared("fake") finds the file (a cache hit) or makes it (a build inside a test).
_FAKE_BUILD_SCRIPT = """
import os, sys, time
from pathlib import Path
room = Path(os.environ["ROOM"])
ran = sorted(p.name for p in room.iterdir() if p.name.startswith("ran-"))
assert not ran, f"tests ran before the build: {ran}"
print("compiling the fake tool", flush=True)
if os.environ.get("HANG_BUILD"):
    time.sleep(600)
if os.environ.get("BREAK_BUILD"):
    print("the fake compiler failed: error at line 42", flush=True)
    sys.exit(1)
(room / "built").write_text("")
print("the fake tool: built in 0 s", flush=True)
"""

_FAKE_BUILD = """
import os, sys
from pathlib import Path

import prebuild
from benchlab.devicetools import PreparedTool
from benchlab_standin.prepare import StandinBuild

ROOM = Path(os.environ["ROOM"])

def make(cache_root, progress):
    built_now = not (ROOM / "built").exists()
    (ROOM / "built").write_text("")
    return PreparedTool("the fake tool", ROOM / "built", built_now, 0.0)

prebuild.BUILDS = {"fake": StandinBuild("fake", "the fake tool", lambda: None, make)}
prebuild.NEEDS = {"test_needs.py": ("fake",)}
prebuild.build_command = lambda key: [sys.executable, str(ROOM.parent / "fake_build.py")]
"""

_USERS = """
import os
from pathlib import Path
from prebuild import prepared

ROOM = Path(os.environ["ROOM"])

def test_{name}():
    assert prepared("fake").path.exists()
    (ROOM / "ran-{name}").write_text("")
"""


def _prebuild_project(tmp_path: Path, *modules: str, ini: str = "") -> Path:
    tmp_path.mkdir(exist_ok=True)
    project = _project(tmp_path, ini, {f"{m}.py": _USERS.format(name=m) for m in modules})
    (project / "conftest.py").write_text(
        'pytest_plugins = ["exclusive", "suite_budget", "prebuild"]\n' + _FAKE_BUILD)
    (project / "fake_build.py").write_text(_FAKE_BUILD_SCRIPT)
    return project


def _ran(project: Path) -> list[str]:
    return sorted(p.name for p in (project / "room").iterdir() if p.name.startswith("ran-"))


@pytest.mark.parametrize("parallel", [(), XDIST], ids=["one process", "xdist workers"])
def test_a_build_runs_once_before_any_test_and_a_failed_one_ends_the_run(
        tmp_path: Path, parallel: tuple[str, ...]) -> None:
    project = _prebuild_project(tmp_path, "test_needs", "test_other")
    done = _pytest(project, *parallel)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "prebuild: compiling the fake tool" in done.stdout
    assert "prebuild: the fake tool: built in 0 s" in done.stdout
    assert "builds before the tests (tests/prebuild.py)" in done.stdout
    assert _ran(project) == ["ran-test_needs", "ran-test_other"]

    broken = _prebuild_project(tmp_path / "broken", "test_needs", "test_other")
    done = _pytest(broken, *parallel, env={"BREAK_BUILD": "1"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the build 'the fake tool' the tests need failed (exit 1)" in done.stdout
    assert "the fake compiler failed: error at line 42" in done.stdout
    assert _ran(broken) == []


def test_a_build_past_its_limit_is_stopped_and_ends_the_run(tmp_path: Path) -> None:
    project = _prebuild_project(tmp_path, "test_needs", ini="build_limit_minutes = 0.05\n")
    done = _pytest(project, env={"HANG_BUILD": "1"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ran past its limit of 0.05 min (build_limit_minutes) and was stopped" in done.stdout
    assert _ran(project) == []


def test_a_build_a_test_needs_but_the_run_did_not_prepare_fails_that_test(
        tmp_path: Path) -> None:
    project = _prebuild_project(tmp_path, "test_unlisted")
    done = _pytest(project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the fake tool was built inside a test" in done.stdout
    assert "add the module to NEEDS in tests/prebuild.py" in done.stdout

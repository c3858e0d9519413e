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


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "ROOM": str(project / "room")}
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

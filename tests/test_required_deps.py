"""required_deps.py: a skipped test that needs PostgreSQL or the browser fails the run, unless
``--allow-skip`` names the dependency. Checked on generated tests in a pytest of their own, so
the machine's own PostgreSQL and Chromium play no part."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_TESTS = """\
import pytest

@pytest.mark.postgres
def test_needs_postgres():
    pytest.skip("initdb is not installed")

@pytest.mark.browser
def test_needs_the_browser():
    pytest.skip("Chromium is not installed")

@pytest.fixture
def pg_server():
    pytest.skip("no server binaries here")

def test_reaches_postgres_through_its_fixture(pg_server):
    pass

def test_skips_for_a_reason_of_its_own():
    pytest.skip("not on this platform")

@pytest.mark.postgres
@pytest.mark.xfail(reason="a known bug", strict=True)
def test_expected_to_fail():
    assert False

@pytest.mark.postgres
def test_runs_with_postgres():
    pass

@pytest.mark.llamacpp
def test_needs_llama_cpp():
    pytest.importorskip("a_module_that_is_not_there")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    postgres: needs PostgreSQL\n    browser: needs Chromium\n"
        "    llamacpp: needs llama-cpp-python\n")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["required_deps"]\n')
    (tmp_path / "test_generated.py").write_text(_TESTS)
    return tmp_path


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The plugin is imported from this folder, as tests/conftest.py imports it; no other
    # installed plugin is needed (and leaving them out keeps each run short).
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False)


# Under pytest-xdist the workers run the tests and the controller, which runs none, decides.
XDIST = ("-p", "xdist.plugin", "-n", "2")


@pytest.mark.parametrize("parallel", [(), XDIST], ids=["one process", "xdist workers"])
def test_a_skip_for_a_required_dependency_fails_the_run_naming_it(
        project: Path, parallel: tuple[str, ...]) -> None:
    done = _pytest(project, *parallel)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "tests skipped for a missing dependency: the run fails" in out
    assert "postgres: 2 test(s) skipped; they need PostgreSQL's server binaries" in out
    assert "initdb is not installed (test_generated.py::test_needs_postgres)" in out
    assert ("no server binaries here "
            "(test_generated.py::test_reaches_postgres_through_its_fixture)") in out
    assert "browser: 1 test(s) skipped; they need headless Chromium" in out
    assert "Chromium is not installed (test_generated.py::test_needs_the_browser)" in out
    assert "llamacpp: 1 test(s) skipped; they need llama-cpp-python" in out
    assert "--allow-skip=browser,llamacpp,postgres" in out
    section = out.split("tests skipped for a missing dependency")[1]
    # A skip of its own and an expected failure are not a missing dependency.
    assert "not on this platform" not in section and "a known bug" not in section


def test_allow_skip_lets_the_named_dependencies_skip(project: Path) -> None:
    done = _pytest(project, "--allow-skip=postgres,browser,llamacpp")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "missing dependency" not in done.stdout

    done = _pytest(project, "--allow-skip", "postgres", "--allow-skip", "llamacpp")
    assert done.returncode == 1, done.stdout + done.stderr
    section = done.stdout.split("tests skipped for a missing dependency")[1]
    assert "browser: 1 test(s) skipped" in section and "postgres:" not in section
    assert "llamacpp:" not in section
    assert "--allow-skip=browser" in section


def test_allow_skip_refuses_an_unknown_name(project: Path) -> None:
    done = _pytest(project, "--allow-skip=gpu")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "--allow-skip: unknown dependency gpu; known: postgres, browser, llamacpp" in done.stderr


def test_a_failing_run_keeps_its_own_exit_status(project: Path) -> None:
    (project / "test_broken.py").write_text("def test_broken():\n    assert 1 == 2\n")
    done = _pytest(project, "test_broken.py", "test_generated.py")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "tests skipped for a missing dependency" in done.stdout

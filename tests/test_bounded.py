"""tests/bounded.py: a program run past its limit is ended with every process it started, after
its own clean-up ran, and the test fails naming it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from bounded import GRACE_S, TEST_LIMIT_S, alive, run_bounded

# Starts a grandchild in a session of its own (as benchlab starts a benchmark's process and the
# lab its workers), writes its pid, turns SIGTERM into SystemExit (as the bench scripts do) and
# records that its clean-up ran (which leaves the grandchild running).
PROGRAM = """
import signal, subprocess, sys, time
from pathlib import Path
folder = Path(sys.argv[1])
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
child = subprocess.Popen(["sleep", "1000"], start_new_session=True)
(folder / "grandchild").write_text(str(child.pid))
print("started", flush=True)
try:
    time.sleep(1000)
finally:
    (folder / "cleaned").write_text("yes")
"""




def test_a_program_past_its_limit_is_ended_with_its_processes_after_its_clean_up(
        tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    with pytest.raises(AssertionError, match=r"(?s)ran past its 2 s.*started"):
        run_bounded([sys.executable, str(script), str(tmp_path)], limit_s=2)
    assert (tmp_path / "cleaned").read_text() == "yes"
    grandchild = int((tmp_path / "grandchild").read_text())
    deadline = time.monotonic() + 10
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild), "the program's own child outlived it"


def test_a_program_within_its_limit_returns_its_output_and_status() -> None:
    done = run_bounded([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"],
                       limit_s=60)
    assert (done.returncode, done.stdout) == (3, "out\n")


def test_a_limit_pytest_timeout_would_reach_first_is_refused() -> None:
    with pytest.raises(ValueError, match="pytest-timeout"):
        run_bounded(["true"], limit_s=TEST_LIMIT_S - GRACE_S + 1)

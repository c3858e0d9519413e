"""Bad input to the lab commands is one clear line and exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SPEC = Path(__file__).resolve().parents[2] / "examples" / "ab" / "spin.yaml"


def _lab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlab", "lab", *args],
                          capture_output=True, text=True, timeout=120)


def test_a_database_that_is_not_postgresql_is_named() -> None:
    done = _lab("status", "--db", "/tmp/results.db")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "a lab needs PostgreSQL" in done.stderr and "/tmp/results.db" in done.stderr


def test_a_malformed_pool_rule_fails_before_the_lab_is_opened() -> None:
    # Port 1 has no server: the rule's error must come first.
    done = _lab("submit", str(SPEC), "--db", "postgresql://nobody@127.0.0.1:1/x",
                "--pool", "cores>=many")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'cores>=many' compares with >=, which needs a number" in done.stderr


def test_no_database_at_all_says_how_to_give_one() -> None:
    done = _lab("submit", str(SPEC))
    assert done.returncode == 2 and "--db postgresql://" in done.stderr

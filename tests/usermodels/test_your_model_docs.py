"""docs/your-model.md's examples run as written: its ``mynet.py``, its commands (with this test's
cache and store, and a quick test so that the run takes seconds), its Python example."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "your-model.md"
QUICK = ["--iter", "3", "--warmup", "1", "--repeat", "1", "--min-time", "0"]
pytestmark = pytest.mark.slow


def _block(marker: str) -> str:
    """The fenced block right after ``<!-- marker -->``."""
    found = re.search(rf"<!-- {re.escape(marker)} -->\n```\w+\n(.*?)```", DOC.read_text(), re.S)
    assert found, marker
    return found.group(1)


def test_the_factory_example_and_its_commands_run_as_written(tmp_path: Path) -> None:
    (tmp_path / "mynet.py").write_text(_block("file: mynet.py"))
    commands = [line for line in _block("run").splitlines() if line.strip()]
    assert len(commands) == 2
    for line in commands:
        args = shlex.split(line)
        assert args[:2] == ["benchlab", "run"]
        done = subprocess.run([sys.executable, "-m", "benchlab", *args[1:], *QUICK,
                               "--db", str(tmp_path / "r.db"),
                               "--cache-dir", str(tmp_path / "cache")],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600,
                              check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        if "-f all" in line:  # what the page says: eight formats exported, nine cells
            assert "exporting 1 model(s), 8 format(s)" in done.stderr, done.stderr[-3000:]
            assert done.stdout.count("mynet ") >= 9, done.stdout
        else:  # the second command exports nothing
            assert "exporting" not in done.stderr, done.stderr[-3000:]
    assert (tmp_path / "mine.html").stat().st_size > 0


def test_the_python_example_runs_as_written(tmp_path: Path) -> None:
    code = _block("run python").replace(
        'frameworks=["pytorch", "onnxruntime"])',
        f'frameworks=["pytorch", "onnxruntime"], cache_dir={str(tmp_path / "cache")!r}, '
        f'db={str(tmp_path / "r.db")!r}, overrides=benchlab.TestOverrides(iter=3, warmup=1, '
        'repeat=1, min_time=0))')
    assert "cache_dir" in code  # the example still has the call this test adds settings to
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 5, lines  # eager, TorchScript, export; ONNX Runtime fp32 and int8
    assert all(re.search(r": p50 [\d.]+ \w+, SQNR \d+ dB$", line) for line in lines), lines

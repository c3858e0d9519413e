"""Bad files and a full disk: a clear error and its exit code, and nothing stored is lost."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.store import RunRecord, open_store

PROGRAM = """
import json, sys
for i in range(int(sys.argv[1])):
    line = {"type": "NET", "metric": "latency", "unit": "ms", "value": 1.0 + i * 1e-6}
    print("BENCHLAB_METRIC " + json.dumps(line))
"""


def benchlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlab", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def _spec(root: Path, location: str, tests: int = 1, lines: int = 10) -> Path:
    (root / "prog.py").write_text(PROGRAM)
    spec = {"model": {"name": "m", "format": "generic",
                      "files": {"program": {"location": location, "md5": None}}},
            "tests": [{"identifier": f"t{i}", "commands": [f"{{PYTHON}} {{files.program}} {lines}"]}
                      for i in range(tests)]}
    path = root / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def test_a_model_file_that_is_a_directory_fails_its_job_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    proc = benchlab("run", str(_spec(tmp_path, "adir")), "--db", "r.db", "-q", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "file 'program'" in proc.stdout + proc.stderr and "is not a regular file" in \
        proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_spec_path_that_is_a_directory_is_a_user_error(tmp_path: Path) -> None:
    proc = benchlab("run", str(tmp_path), "--db", "r.db", "-q", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {tmp_path}: cannot read the file: Is a directory"


def test_a_truncated_store_is_reported_and_left_as_it_was(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "prog.py")
    assert benchlab("run", str(spec), "--db", "r.db", "-q", cwd=tmp_path).returncode == 0
    db = tmp_path / "r.db"
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    for args in (("results", "list"), ("run", str(spec), "-q")):
        proc = benchlab(*args, "--db", "r.db", cwd=tmp_path)
        assert proc.returncode == 3, proc.stderr
        assert "database disk image is malformed" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert db.read_bytes() == data[: len(data) // 2]


def _runs(db: str) -> list[RunRecord]:
    store = open_store(db)
    try:
        return store.list_runs()
    finally:
        store.close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 400 KiB tmpfs (needs root, as CI has; skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_stops_the_sweep_keeps_what_is_stored_and_resume_finishes(
    tmp_path: Path, small_disk: Path
) -> None:
    spec = _spec(tmp_path, "prog.py", tests=6, lines=3000)
    db = str(small_disk / "r.db")
    full = benchlab("run", str(spec), "--db", db, "-q", cwd=tmp_path)
    assert full.returncode == 3, full.stderr
    assert "database or disk is full" in full.stderr and "--resume" in full.stderr
    assert "Traceback" not in full.stderr
    [run] = _runs(db)
    assert run.status == "interrupted" and 1 <= run.ok_count < 6
    stored = run.ok_count
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    resumed = benchlab("run", str(spec), "--db", db, "-q", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    [run] = _runs(db)
    assert run.status == "finished" and run.ok_count == 6 and stored < 6

"""The ``benchlab`` command as a user runs it: real processes, exit codes, what gets printed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from benchlab.schema.result import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "faipep" / "mlp_observer.json"


def benchlab(*args: str, check: bool = False, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh process, as a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchlab", *args], capture_output=True, text=True,
        timeout=300, **kwargs,  # type: ignore[call-overload]
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_faipep_example_keeps_every_sample(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    proc = benchlab("run", str(EXAMPLE), "--db", str(db), "-q", "--json-dir", str(tmp_path / "j"))
    assert proc.returncode == 0, proc.stderr
    assert "numpy_mlp" in proc.stdout and "generic" in proc.stdout
    (path,) = (tmp_path / "j").rglob("*.json")
    result = json.loads(path.read_text())
    keys = {s["type"] for s in result["samples"]}
    assert keys == {"NET", "matmul", "relu"}
    for op in keys:  # iter=50 in the spec: fifty samples of every key, none dropped
        assert sum(1 for s in result["samples"] if s["type"] == op) == 50
    assert result["schema_version"] == SCHEMA_VERSION


def test_bad_spec_names_file_and_field_without_traceback(tmp_path: Path) -> None:
    spec = json.loads(EXAMPLE.read_text())
    spec["tests"][0]["warmup"] = -1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spec))
    proc = benchlab("run", str(bad), "--db", str(tmp_path / "r.db"))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "tests[0].warmup" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_framework_is_a_user_error(tmp_path: Path) -> None:
    proc = benchlab("run", str(EXAMPLE), "-f", "nosuch", "--db", str(tmp_path / "r.db"))
    assert proc.returncode == 2 and "nosuch" in proc.stderr and "generic" in proc.stderr


def test_schema_prints_json_schema() -> None:
    proc = benchlab("schema", check=True)
    document = json.loads(proc.stdout)
    assert {"model", "tests"} <= set(document["properties"])


def test_the_cli_prints_whole_tables_in_a_bare_ci_environment() -> None:
    """A CI job's environment at its barest: a dumb terminal type, no colour, 60 columns and an
    ASCII locale (PYTHONUTF8=0 keeps Python from reading the C locale as UTF-8). The output is
    a pipe, so its table is not folded to 60 columns, and what ASCII lacks (box lines, →)
    comes out as ASCII or '?', never as a UnicodeEncodeError."""
    env = {**os.environ, "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": "60", "LC_ALL": "C",
           "LANG": "C", "PYTHONUTF8": "0"}
    for forcing in ("PYTHONIOENCODING", "FORCE_COLOR", "TTY_COMPATIBLE"):
        env.pop(forcing, None)  # each would make the pipe a terminal or UTF-8 again
    proc = benchlab("zoo", "list", env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.isascii(), proc.stdout
    mlp = [line for line in proc.stdout.splitlines() if line.startswith("| mlp ")]
    assert mlp and "regression" in mlp[0] and "16x512" in mlp[0], proc.stdout


def test_doctor_lists_frameworks_and_host(tmp_path: Path) -> None:
    proc = benchlab("doctor", "--db", str(tmp_path / "r.db"), check=True)
    for name in ("generic", "pytorch", "onnxruntime", "host"):
        assert name in proc.stdout
    assert "results store" in proc.stdout


def test_results_list_show_export(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    benchlab("run", str(EXAMPLE), "--db", db, "-q", "--iter", "5", check=True)
    listing = benchlab("results", "list", "--db", db, check=True)
    assert "finished" in listing.stdout
    shown = benchlab("results", "show", "latest", "--db", db, check=True)
    assert "numpy_mlp" in shown.stdout
    as_json = json.loads(benchlab("results", "show", "--json", "--db", db, check=True).stdout)
    assert as_json[0]["identity"]["framework"] == "generic"
    benchlab("results", "export", str(tmp_path / "s.csv"), "--db", db, check=True)
    benchlab("results", "export", str(tmp_path / "raw.parquet"), "--samples", "--db", db,
             check=True)
    summary = pd.read_csv(tmp_path / "s.csv")
    assert set(summary["metric_key"]) == {"NET latency", "matmul latency", "relu latency"}
    raw = pd.read_parquet(tmp_path / "raw.parquet")
    assert len(raw) == 15 and raw["value"].dtype == float
    history = benchlab("results", "history", "numpy_mlp", "generic", "--db", db, check=True)
    assert "0" in history.stdout


def _count_results(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("select count(*) from results").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    log = tmp_path / "executions.log"
    script = tmp_path / "job.py"
    script.write_text(
        "import sys, time\n"
        f"open({str(log)!r}, 'a').write(sys.argv[1] + '\\n')\n"
        "time.sleep(0.4)\n"
        "print('PyTorchObserver {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\","
        "\"value\":1.5}')\n"
    )
    spec = {
        "model": {"name": "slow", "format": "script", "files": {"job": {
            "location": str(script), "md5": None}}},
        "tests": [{"identifier": f"t{i}", "commands": [f"{{PYTHON}} {{files.job}} t{i}"]}
                  for i in range(6)],
    }
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(spec))
    db = tmp_path / "r.db"
    sweep = subprocess.Popen(
        [sys.executable, "-m", "benchlab", "run", str(path), "--db", str(db), "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while _count_results(db) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(sweep.pid, signal.SIGKILL)
    sweep.wait()
    done_before = _count_results(db)
    assert 2 <= done_before < 6

    resumed = benchlab("run", str(path), "--db", str(db), "-q", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select job_key, status, run_id from results").fetchall()
        runs = conn.execute("select status from runs").fetchall()
    assert len(rows) == 6 and len({r[0] for r in rows}) == 6  # nothing lost, nothing twice
    assert {r[1] for r in rows} == {"ok"} and len({r[2] for r in rows}) == 1
    assert runs == [("finished",)]
    executions = log.read_text().split()
    # Jobs finished before the kill never ran again; only the one in flight may have.
    assert len(executions) <= 7 and sorted(set(executions)) == [f"t{i}" for i in range(6)]
    nothing_left = benchlab("run", str(path), "--db", str(db), "-q", "--resume")
    assert nothing_left.returncode == 2 and "nothing to resume" in nothing_left.stderr


def test_a_failed_job_makes_the_exit_code_1(tmp_path: Path) -> None:
    spec = tmp_path / "fails.json"
    spec.write_text(json.dumps({
        "model": {"name": "x", "format": "script", "files": {}},
        "tests": [{"identifier": "t", "commands": ["echo 'oops' >&2; exit 3"]}],
    }))
    proc = benchlab("run", str(spec), "--db", str(tmp_path / "r.db"), "-q")
    assert proc.returncode == 1
    assert "exited with status 3: oops" in proc.stdout and "1 of 1 jobs failed" in proc.stderr

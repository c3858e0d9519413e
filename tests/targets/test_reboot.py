"""Reboot policy on the stand-in phone (real adb client and server): before the run, after
failed jobs in a row, after an uptime; each reboot recorded on the next result, whose device
state shows the fresh uptime."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bounded import run_bounded

import benchlab
from benchlab.errors import UsageError
from benchlab.schema.result import Status
from benchlab.targets.reboot import RebootPolicy
from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import AdbServer

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_bounded([sys.executable, "-m", "benchlab", *args], limit_s=540)


METRIC = 'echo \'BENCHLAB_METRIC {"type":"NET","metric":"latency","unit":"ms","value":1.5}\''


def _spec(tmp_path: Path, commands: dict[str, str]) -> Path:
    """A generic spec with one test per (identifier, command), run in that order."""
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({
        "model": {"name": "shell", "format": "generic"},
        "tests": [{"identifier": name, "repeat": 1, "timeout": 60, "commands": [command]}
                  for name, command in commands.items()],
    }))
    return path


def test_the_policy_rejects_nonsense() -> None:
    with pytest.raises(UsageError, match="at least 1"):
        RebootPolicy(after_failures=0)
    with pytest.raises(UsageError, match="above 0"):
        RebootPolicy(max_uptime_s=0)
    assert not RebootPolicy().active and RebootPolicy(before_run=True).active


def test_a_target_that_cannot_reboot_is_refused_before_anything_runs(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"ok": METRIC})
    with pytest.raises(UsageError, match="cannot reboot"):
        benchlab.run(spec, db=tmp_path / "r.db", cache_dir=tmp_path / "c",
                     reboot=RebootPolicy(before_run=True))
    out = _cli("run", str(spec), "--db", str(tmp_path / "r.db"), "--reboot-after-failures", "2",
               "-q")
    assert out.returncode == 2, out.stderr
    assert "cannot reboot" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_failures_in_a_row_reboot_the_phone_before_the_next_job(
    tmp_path: Path, phone: tuple[StandinPhone, AdbServer]
) -> None:
    standin, server = phone
    spec = _spec(tmp_path, {"a_fails": "exit 3", "b_fails": "exit 4", "c_ok": METRIC,
                            "d_fails": "exit 5"})
    boots = standin.boot_count
    results = {r.identity.test_identifier: r for r in benchlab.run(
        spec, target=f"adb:server_port={server.port}", db=tmp_path / "r.db",
        cache_dir=tmp_path / "c", reboot=RebootPolicy(after_failures=2, timeout_s=120))}
    assert [results[k].status for k in ("a_fails", "b_fails", "c_ok", "d_fails")] == [
        Status.FAILED, Status.FAILED, Status.OK, Status.FAILED]
    # One reboot, between b and c; d fails once more, which is not two in a row.
    assert standin.boot_count == boots + 1
    reboot = results["c_ok"].details["reboot"]
    assert reboot["reason"] == "2 failed job(s) in a row"
    assert reboot["seconds"] > 0
    assert all("reboot" not in results[k].details for k in ("a_fails", "b_fails", "d_fails"))
    # The device state shows it: without a fresh boot, the uptime before c could not be
    # less than the uptime after b plus the time the reboot took.
    up_after_b = results["b_fails"].environment["state_after"]["uptime_s"]
    up_before_c = results["c_ok"].environment["state_before"]["uptime_s"]
    assert reboot["uptime_before_s"] == up_after_b
    assert up_before_c < up_after_b + reboot["seconds"]


@pytest.mark.slow
def test_before_the_run_and_after_an_uptime(
    tmp_path: Path, phone: tuple[StandinPhone, AdbServer]
) -> None:
    standin, server = phone
    spec = _spec(tmp_path, {"first": f"sleep 1; {METRIC}", "second": METRIC})
    boots = standin.boot_count
    target = f"adb:server_port={server.port}"
    # The CLI form: reboot before the run, and whenever the phone has been up over 0.36 s.
    out = _cli("run", str(spec), "--target", target, "--db", str(tmp_path / "r.db"),
               "--cache-dir", str(tmp_path / "c"), "--reboot", "--reboot-after-uptime", "0.0001",
               "-q")
    assert out.returncode == 0, out.stderr
    with benchlab.open_store(tmp_path / "r.db") as store:
        results = {r.identity.test_identifier: r for r in store.results("latest")}
    first, second = results["first"].details["reboot"], results["second"].details["reboot"]
    assert first["reason"] == "asked for before the run" and first["uptime_before_s"] is None
    assert second["reason"].startswith("up ") and "over the 0.36 s limit" in second["reason"]
    assert standin.boot_count == boots + 2

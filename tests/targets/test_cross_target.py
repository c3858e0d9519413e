"""One spec on the host, an ssh board (loopback sshd) and a phone (the stand-in adbd).

These are end-to-end: the real ``ssh``/``sshd`` and the real ``adb`` client and server, with
benchlab's own API and CLI on top. They check that results have one shape everywhere, that the
device state is recorded around every job, that a hung on-device process is killed at the
timeout, and that a native tool (a scripted ``benchmark_model``) runs on a phone with no Python.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import benchlab
from benchlab.cli.commands import app
from benchlab.harness.doctor import diagnose
from benchlab.targets.environment import device_summary
from benchlab.harness.overrides import TestOverrides as Overrides
from benchlab.schema.result import Status
from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import AdbServer
from benchlab_standin.board import LoopbackBoard

pytestmark = pytest.mark.slow

NATIVE_SAMPLE = Path(__file__).parents[1] / "frameworks/data/native/benchmark_model_profile.txt"

BENCH_PROGRAM = r"""#!/bin/sh
# A generic benchmark: times a busy loop with date(1) and prints benchlab metric lines.
n=$1; i=0
while [ $i -lt $n ]; do
  s=$(date +%s%N); j=0
  while [ $j -lt 3000 ]; do j=$((j+1)); done
  e=$(date +%s%N)
  echo "BENCHLAB_METRIC {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\",\"value\":$(( (e-s)/1000 ))e-3}"
  i=$((i+1))
done
# Phones also get a line through logcat, as apps that cannot print to a terminal do.
if command -v log >/dev/null 2>&1; then
  log -t benchlab 'BENCHLAB_METRIC {"detail": {"via_logcat": true}}'
fi
"""


def _spec(tmp_path: Path, commands: list[str], timeout: float = 120.0) -> Path:
    program = tmp_path / "bench.sh"
    program.write_text(BENCH_PROGRAM)
    spec = {
        "model": {"name": "shellbench", "format": "generic",
                  "files": {"program": {"location": "bench.sh", "md5": None}}},
        "tests": [{"identifier": "loop", "repeat": 2, "timeout": timeout,
                   "commands": commands}],
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def _ssh_target(board: LoopbackBoard) -> str:
    return f"{board.target_text},python={sys.executable}"


def _targets(board: LoopbackBoard, server: AdbServer) -> dict[str, str]:
    return {"host": "host", "ssh": _ssh_target(board), "adb": f"adb:server_port={server.port}"}


def test_one_spec_gives_results_of_one_shape_on_host_ssh_and_adb(
    tmp_path: Path, board: LoopbackBoard, phone: tuple[StandinPhone, AdbServer]
) -> None:
    spec = _spec(tmp_path, ["sh {files.program} 6"])
    results = {
        name: list(benchlab.run(spec, target=target, db=tmp_path / "results.db",
                                cache_dir=tmp_path / "cache"))[0]
        for name, target in _targets(board, phone[1]).items()
    }
    shapes = set()
    for name, result in results.items():
        assert result.status is Status.OK, (name, result.error, result.stderr_tail)
        assert result.identity.target == name
        assert len(result.samples_of("NET latency")) == 12  # 6 iterations × 2 processes
        env = result.environment
        for when in ("state_before", "state_after"):
            assert env[when]["complete"] is True, (name, when, env[when])
        shapes.add((
            tuple(sorted(result.to_dict())),
            tuple(sorted(env["state_before"])),
            tuple(sorted(env["state_after"])),
            tuple(sorted(result.summaries)),
        ))
    assert len(shapes) == 1, shapes

    android = results["adb"]
    assert android.environment["model"] == "Standin Phone"
    assert android.environment["soc_model"] == "SM8350"
    assert [c["cpus"] for c in android.environment["clusters"]] == ["0-3", "4-6", "7"]
    before = android.environment["state_before"]
    assert before["battery"]["charging"] is True
    assert len(before["temperatures_c"]) >= 4
    assert android.details["via_logcat"] is True  # read from logcat, not stdout
    assert "via_logcat" not in results["host"].details
    assert results["ssh"].environment["target"] == "ssh"


def test_a_hung_on_device_process_is_killed_at_the_timeout(
    tmp_path: Path, phone: tuple[StandinPhone, AdbServer]
) -> None:
    standin, server = phone
    spec = _spec(tmp_path, ["echo $$ > /data/local/tmp/hung.pid; sleep 300"], timeout=3)
    started = time.monotonic()
    result = list(benchlab.run(spec, target=f"adb:server_port={server.port}",
                               db=tmp_path / "results.db", cache_dir=tmp_path / "cache"))[0]
    assert result.status is Status.TIMEOUT
    assert "timed out after 3 s" in (result.error or "")
    assert time.monotonic() - started < 60
    # The pid file lives in the phone's sandbox: the process it names must be gone.
    pid = int((standin.root / "data/local/tmp/hung.pid").read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or \
        Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_benchmark_model_runs_natively_on_a_phone_without_python(
    tmp_path: Path, phone: tuple[StandinPhone, AdbServer]
) -> None:
    tool = tmp_path / "benchmark_model"
    # A stand-in for the real binary: checks its flags, then prints a documented report.
    tool.write_text(
        "#!/bin/sh\ncase \"$*\" in *--graph=*.tflite*) ;; *) echo bad args >&2; exit 2;; esac\n"
        f"cat <<'REPORT'\n{NATIVE_SAMPLE.read_text()}\nREPORT\n"
    )
    (tmp_path / "m.tflite").write_bytes(b"TFL3" + os.urandom(64))
    spec = {
        "model": {"name": "native", "format": "tflite",
                  "files": {"tflite": {"location": "m.tflite", "md5": None}}},
        "tests": [{"identifier": "t", "iter": 50, "profile_ops": True, "inputs": {}}],
    }
    path = tmp_path / "native.json"
    path.write_text(json.dumps(spec))
    result = list(benchlab.run(
        path, target=f"adb:server_port={phone[1].port}", frameworks=[f"tflite:binary={tool}"],
        db=tmp_path / "results.db", cache_dir=tmp_path / "cache",
    ))[0]
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.samples_of("NET latency") == [pytest.approx(5.4479)]
    assert result.details["latency_samples"] == "process_mean"
    assert result.details["tool"] == "benchmark_model"
    assert any(s.type == "CONV_2D" for s in result.samples)


def test_energy_is_unavailable_with_the_reason_unless_a_meter_can_read(
    tmp_path: Path, phone: tuple[StandinPhone, AdbServer]
) -> None:
    standin, server = phone
    spec = _spec(tmp_path, ["sh {files.program} 200"])
    overrides = Overrides(repeat=1)

    def energy(target: str) -> dict:
        result = list(benchlab.run(spec, target=target, energy="auto", overrides=overrides,
                                   db=tmp_path / "results.db", cache_dir=tmp_path / "cache"))[0]
        assert result.status is Status.OK, result.error
        return result.details["energy"]

    host = energy("host")
    assert host["status"] == "unavailable" and host["joules_per_inference"] is None
    assert "rapl" in host["reason"]
    plugged = energy(f"adb:server_port={server.port}")
    assert plugged["status"] == "unavailable" and "charging" in plugged["reason"]
    standin.set_charging(False)
    try:
        unplugged = energy(f"adb:server_port={server.port}")
    finally:
        standin.set_charging(True)
    assert unplugged["status"] == "ok", unplugged
    assert unplugged["window"] == "command"
    assert unplugged["joules_per_inference"] is not None
    assert unplugged["meter"] == "android-battery"


def test_doctor_lists_the_standin_phone_and_the_loopback_board(
    tmp_path: Path, board: LoopbackBoard, phone: tuple[StandinPhone, AdbServer]
) -> None:
    targets = _targets(board, phone[1])
    diagnosis = diagnose(str(tmp_path / "doctor.db"), [targets["ssh"], targets["adb"]])
    by_name = {p.name: p for p in diagnosis.plugins if p.kind == "target"}
    android = by_name[f"adb {phone[0].serial}"]
    assert android.ok and android.version == "13"
    summary = device_summary(android.device)
    assert summary.startswith("Benchlab Standin Phone · SoC QTI SM8350 · arm64-v8a · Android 13")
    assert "4×1.80 GHz + 3×2.40 GHz + 1×2.85 GHz" in summary
    assert "battery 80% Charging" in summary
    loopback = by_name["ssh"]
    assert loopback.ok and loopback.device["cpu_count"] == os.cpu_count()
    assert "Debian" in device_summary(loopback.device)

    result = CliRunner().invoke(
        app, ["doctor", "--db", str(tmp_path / "doctor.db"),
              "--target", targets["ssh"], "--target", targets["adb"]],
    )
    assert result.exit_code == 0, result.output
    assert phone[0].serial in result.output and "Standin" in result.output
    ssh_row = next(line for line in result.output.splitlines() if "│ ssh" in line)
    assert "yes" in ssh_row


def test_the_gate_waits_for_a_hot_phone_and_flags_one_that_heats_up(
    tmp_path: Path, phone: tuple[StandinPhone, AdbServer]
) -> None:
    standin, server = phone
    standin.set_temperature(52.0)
    # ~6 s of busy shell work: the stand-in heats about 2 °C/s while a command runs.
    spec = _spec(tmp_path, ["end=$(( $(date +%s) + 6 )); while [ $(date +%s) -lt $end ]; do :; "
                            "done; sh {files.program} 3"])
    result = list(benchlab.run(
        spec, target=f"adb:server_port={server.port}", db=tmp_path / "results.db",
        cache_dir=tmp_path / "cache",
        overrides=Overrides(repeat=1, temperature_gate=45.0, gate_timeout=120.0),
    ))[0]
    assert result.status is Status.OK, result.error
    gate = result.details["temperature_gate"][0]
    assert gate["cooled"] is True and gate["start_c"] >= 45.0 > gate["end_c"]
    assert gate["waited_s"] > 0
    flags = {f["flag"]: f["detail"] for f in result.details["device_flags"]}
    assert "temperature_above_gate" in flags, result.environment["state_after"]


SLOW_OR_FAST = r"""#!/bin/sh
# Times a busy loop of $2 steps, $1 times: the side's size is its speed.
n=$1; k=$2; i=0
while [ $i -lt $n ]; do
  s=$(date +%s%N); j=0
  while [ $j -lt $k ]; do j=$((j+1)); done
  e=$(date +%s%N)
  echo "BENCHLAB_METRIC {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\",\"value\":$(( (e-s)/1000 ))e-3}"
  i=$((i+1))
done
"""


def test_compare_and_track_take_a_target_from_the_command_line(
        tmp_path: Path, board: LoopbackBoard) -> None:
    """An A/B on a board needs no lab: ``compare --target`` measures both sides there (a loop
    three times as long is a regression, exit 1) and stores them as that device's. The loops
    are long enough (tens of ms) that the two ``date`` forks around each one, slow on a loaded
    machine, cannot hide the difference. The same on a phone, with two ``.pte`` files on the
    emulated ARM phone's own runner: tests/targets/test_arm_phone.py."""
    program = tmp_path / "bench.sh"
    program.write_text(SLOW_OR_FAST)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "model": {"name": "loop", "format": "generic",
                  "files": {"program": {"location": "bench.sh", "md5": None}}},
        "tests": [{"identifier": "loop", "repeat": 1, "warmup": 0,
                   "commands": ["sh {files.program} 5 {program}"]}]}))
    db = tmp_path / "results.db"
    done = CliRunner().invoke(app, [
        "compare", str(spec), "--target", _ssh_target(board), "--control-program", "20000",
        "--treatment-program", "60000", "--pairs", "10", "--no-verify", "--db", str(db), "-q"])
    assert done.exit_code == 1, done.output  # the treatment's loop is three times as long
    assert "regression" in done.output
    with benchlab.open_store(db) as store:
        [run] = store.list_runs()
        results = store.results(run.uuid)
    assert {r.identity.target for r in results} == {"ssh"}
    assert {r.identity.variant for r in results} == {"control", "treatment"}
    # track takes it the same way: a device that is not there is named, nothing runs here.
    missing = "ssh:host=nowhere.invalid"
    refused = CliRunner().invoke(app, ["track", str(spec), "--repo", str(tmp_path),
                                       "--program", "x", "--target", missing, "--db", str(db)])
    assert refused.exit_code != 0
    assert "nowhere.invalid" in str(refused.exception) + refused.output

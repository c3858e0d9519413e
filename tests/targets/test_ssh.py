"""The ssh target against a real OpenSSH server on loopback."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from bounded import alive

from benchlab.energy.session import device_clock_offset
from benchlab.errors import UsageError
from benchlab_standin.board import LoopbackBoard
from benchlab.targets.base import RunRequest, Target
from benchlab.targets.ssh import SshTarget




def test_implements_the_target_protocol(ssh_target: SshTarget) -> None:
    assert isinstance(ssh_target, Target)


def test_exit_status_stdout_and_stderr_come_back_apart(ssh_target: SshTarget) -> None:
    result = ssh_target.run(RunRequest(argv="echo out; echo err >&2; printf tail; exit 3"))
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\ntail", "err\n")
    assert not result.timed_out


def test_argv_env_cwd_and_pinning_reach_the_remote_process(ssh_target: SshTarget) -> None:
    workdir = ssh_target.make_workdir("env")
    try:
        result = ssh_target.run(RunRequest(
            argv=["sh", "-c", 'echo "$GREETING"; pwd; grep Cpus_allowed_list /proc/self/status'],
            env={"GREETING": "a b'c"}, cwd=workdir, cpu_list="1",
        ))
        lines = result.stdout.splitlines()
        assert lines[0] == "a b'c"
        assert lines[1] == workdir
        assert lines[2].split()[-1] == "1"
    finally:
        ssh_target.remove_workdir(workdir)
    assert not Path(workdir).exists()


def test_a_hung_remote_process_tree_is_killed_at_the_timeout(
    ssh_target: SshTarget, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    # A parent that ignores TERM, with a child of its own: both must go.
    command = f"trap '' TERM; sleep 300 & echo $! > {pids}; echo $$ >> {pids}; wait"
    started = time.monotonic()
    result = ssh_target.run(RunRequest(argv=command, timeout=2))
    assert result.timed_out and result.returncode is None
    assert time.monotonic() - started < 30
    deadline = time.monotonic() + 10
    recorded = [int(p) for p in pids.read_text().split()]
    while any(alive(p) for p in recorded) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in recorded if alive(p)]


def test_push_and_pull_round_trip_a_binary_file(ssh_target: SshTarget, tmp_path: Path) -> None:
    payload = os.urandom(1 << 20)
    source = tmp_path / "model.bin"
    source.write_bytes(payload)
    workdir = ssh_target.make_workdir("files")
    try:
        remote = ssh_target.push(source, workdir, "renamed.bin")
        assert remote == f"{workdir}/renamed.bin"
        back = ssh_target.pull(remote, tmp_path / "back" / "model.bin")
        assert back.read_bytes() == payload
    finally:
        ssh_target.remove_workdir(workdir)


def test_commands_share_one_multiplexed_connection(
    ssh_target: SshTarget, board: LoopbackBoard
) -> None:
    ssh_target.run(RunRequest(argv="true"))
    check = subprocess.run(
        ["ssh", "-F", str(board.client_config), "-o", f"ControlPath={ssh_target._control_path}",
         "-O", "check", board.alias], capture_output=True, text=True, check=False,
    )
    assert check.returncode == 0, check.stderr
    ssh_target.close()
    assert not ssh_target._control_path.exists()


def test_describe_reports_identity_and_device_state(ssh_target: SshTarget) -> None:
    info = ssh_target.describe()
    assert info["target"] == "ssh"
    assert info["cpu_count"] == os.cpu_count()
    assert info["hostname"]
    state = info["state"]
    assert state["complete"] is True
    assert state["memory_total_mib"] > 0
    assert len(state["load_average"]) == 3
    assert ssh_target.availability().ok


def test_unreachable_board_is_unavailable_with_the_reason(board: LoopbackBoard) -> None:
    target = SshTarget(host="127.0.0.1", port=1, connect_timeout=3)
    available = target.availability()
    assert not available.ok
    assert "cannot reach 127.0.0.1" in available.reason


def test_missing_host_is_a_usage_error() -> None:
    assert "ssh:host=NAME" in SshTarget().availability().reason
    with pytest.raises(UsageError):
        SshTarget().run(RunRequest(argv="true"))


def test_a_sweep_on_an_unreachable_board_stops_before_any_job(tmp_path: Path) -> None:
    import benchlab
    from benchlab.errors import InfrastructureError

    with pytest.raises(InfrastructureError, match="target 'ssh' is not usable: cannot reach"):
        benchlab.run(models=["mlp"], target="ssh:host=127.0.0.1,port=1,connect_timeout=3",
                     db=tmp_path / "r.db", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # nothing was exported or fetched


def test_a_real_ssh_device_on_this_host_has_no_offset_beyond_its_bound(ssh_target: SshTarget) -> None:
    offset = device_clock_offset(ssh_target, rounds=3)
    assert offset is not None
    # Same machine, same clock: the true offset is 0, and the estimate's bound must hold.
    assert abs(offset.offset_s) <= offset.uncertainty_s + 1e-6
    assert offset.round_trip_s > 0

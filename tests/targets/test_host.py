"""Tests of the ``host`` target: real child processes, their output, limits and timeouts."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchlab.targets.base import CommandResult, RunRequest, Target
from benchlab.targets.host import HostTarget

PY = sys.executable


def _gone(pid: int, wait_s: float = 10.0) -> bool:
    """True once ``pid`` no longer runs: absent, or a zombie nobody reaped yet.

    A killed grandchild is re-parented to init, which reaps it when it gets round to it (some
    container inits never do), so a zombie counts as dead. Polls briefly because delivery of
    SIGKILL and exit are asynchronous.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        # The state follows the parenthesised command name, which may itself contain spaces.
        state = stat.rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _read_pid(path: Path) -> int:
    return int(path.read_text().strip())


@pytest.fixture
def host(tmp_path: Path) -> HostTarget:
    return HostTarget(workroot=tmp_path / "work")


def test_host_implements_the_target_protocol(host: HostTarget) -> None:
    assert isinstance(host, Target)
    assert host.availability().ok
    assert host.python_executable() == sys.executable


def test_exit_code_stdout_and_stderr_are_captured(host: HostTarget) -> None:
    code = "import sys; print('to out'); print('to err', file=sys.stderr); sys.exit(3)"
    result = host.run(RunRequest([PY, "-c", code], timeout=60))
    assert result.returncode == 3
    assert result.stdout == "to out\n"
    assert result.stderr == "to err\n"
    assert not result.timed_out
    assert not result.ok


def test_success_is_ok(host: HostTarget) -> None:
    result = host.run(RunRequest([PY, "-c", "pass"], timeout=60))
    assert result.returncode == 0 and result.ok


def test_undecodable_output_does_not_break_the_run(host: HostTarget) -> None:
    code = "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')"
    result = host.run(RunRequest([PY, "-c", code], timeout=60))
    assert result.ok
    assert result.stdout.startswith("ok ") and result.stdout.endswith(" end\n")


def test_env_additions_reach_the_child_only(host: HostTarget) -> None:
    assert "BENCHLAB_TEST_VAR" not in os.environ
    before = dict(os.environ)
    code = "import os; print(os.environ['BENCHLAB_TEST_VAR'], os.environ.get('PATH') is not None)"
    result = host.run(RunRequest([PY, "-c", code], env={"BENCHLAB_TEST_VAR": "hello"}, timeout=60))
    assert result.ok, result.stderr
    # The child sees the addition on top of the inherited environment (PATH survives) ...
    assert result.stdout.split() == ["hello", "True"]
    # ... and benchlab's own environment is left exactly as it was.
    assert dict(os.environ) == before


def test_cwd_is_where_the_command_runs(host: HostTarget, tmp_path: Path) -> None:
    where = tmp_path / "here"
    where.mkdir()
    result = host.run(RunRequest([PY, "-c", "import os; print(os.getcwd())"], cwd=str(where)))
    assert result.ok
    assert Path(result.stdout.strip()).resolve() == where.resolve()


def test_a_string_runs_through_the_shell(host: HostTarget, tmp_path: Path) -> None:
    result = host.run(RunRequest("echo one two | tr ' ' '\\n' | wc -l; exit 4", timeout=60))
    assert result.returncode == 4
    assert result.stdout.strip() == "2"


def test_a_list_is_not_interpreted_by_a_shell(host: HostTarget) -> None:
    # The same metacharacters as an argv element arrive verbatim.
    arg = "a; echo injected | $HOME"
    result = host.run(RunRequest([PY, "-c", "import sys; print(sys.argv[1])", arg], timeout=60))
    assert result.ok
    assert result.stdout == arg + "\n"


def test_a_missing_program_fails_the_command_without_raising(host: HostTarget) -> None:
    # A job whose binary is missing must become a failed result, not abort the sweep.
    result = host.run(RunRequest(["/nonexistent/benchlab-binary"], timeout=60))
    assert result.returncode not in (0, None)
    assert not result.ok and not result.timed_out
    assert "/nonexistent/benchlab-binary" in result.stderr


def test_a_missing_cwd_fails_the_command_without_raising(host: HostTarget, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    result = host.run(RunRequest([PY, "-c", "pass"], cwd=str(missing), timeout=60))
    assert result.returncode not in (0, None)
    assert str(missing) in result.stderr


def test_timeout_kills_the_whole_process_group(host: HostTarget, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    # sh starts a background grandchild, records its pid, and waits in the foreground.
    command = f"sleep 300 & echo $! > {pidfile}; echo started; sleep 300"
    result = host.run(RunRequest(command, timeout=3))
    assert result.timed_out
    assert not result.ok
    # Output printed before the timeout is kept for diagnosis.
    assert "started" in result.stdout
    assert _gone(_read_pid(pidfile))


def test_timeout_also_kills_a_grandchild_left_behind_by_an_exited_child(
    host: HostTarget, tmp_path: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    # The direct child exits at once; a grandchild still holds the output pipes open.
    script = textwrap.dedent(
        f"""
        import os, time
        if os.fork() == 0:
            with open({str(pidfile)!r}, "w") as f:
                f.write(str(os.getpid()))
            time.sleep(300)
            os._exit(0)
        """
    )
    result = host.run(RunRequest([PY, "-c", script], timeout=3))
    assert result.timed_out
    assert _gone(_read_pid(pidfile))


def test_a_process_ignoring_sigterm_is_killed(host: HostTarget) -> None:
    code = textwrap.dedent(
        """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ignoring TERM", flush=True)
        time.sleep(300)
        """
    )
    result = host.run(RunRequest([PY, "-c", code], timeout=2))
    assert result.timed_out
    assert result.returncode == -9  # SIGKILL, after SIGTERM did nothing
    assert "ignoring TERM" in result.stdout


def test_a_grandchild_escaping_the_group_does_not_hang_run(
    host: HostTarget, tmp_path: Path
) -> None:
    pidfile = tmp_path / "daemon.pid"
    # The grandchild starts its own session, so killing the group cannot reach it, and it
    # keeps the output pipes open: run() must still return, and not leak the pipes.
    script = textwrap.dedent(
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            with open({str(pidfile)!r}, "w") as f:
                f.write(str(os.getpid()))
            time.sleep(300)
            os._exit(0)
        time.sleep(300)
        """
    )
    fds_before = len(os.listdir("/proc/self/fd"))
    try:
        result = host.run(RunRequest([PY, "-c", script], timeout=2))
        assert result.timed_out
        assert result.returncode == -9 or result.returncode == -15
        assert len(os.listdir("/proc/self/fd")) == fds_before
    finally:
        if pidfile.exists():
            try:
                os.kill(_read_pid(pidfile), 9)
            except ProcessLookupError:
                pass


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs at least 2 CPUs")
def test_cpu_list_pins_the_child_but_not_benchlab(host: HostTarget) -> None:
    parent_before = os.sched_getaffinity(0)
    cpu = max(parent_before)
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    result = host.run(RunRequest([PY, "-c", code], cpu_list=str(cpu), timeout=60))
    assert result.ok, result.stderr
    assert result.stdout.strip() == f"[{cpu}]"
    assert os.sched_getaffinity(0) == parent_before


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs at least 2 CPUs")
def test_cpu_list_reaches_grandchildren(host: HostTarget) -> None:
    cpu = min(os.sched_getaffinity(0))
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    # Through the shell: the pinned shell's child inherits the affinity.
    result = host.run(RunRequest(f"{PY} -c '{code}'", cpu_list=str(cpu), timeout=60))
    assert result.ok, result.stderr
    assert result.stdout.strip() == f"[{cpu}]"


def test_cpu_list_naming_an_unusable_cpu_fails_the_command(host: HostTarget) -> None:
    # CPU 4095 does not exist here; that is the spec's mistake, reported, not a crash.
    result = host.run(RunRequest([PY, "-c", "pass"], cpu_list="4095", timeout=60))
    assert result.returncode not in (0, None)
    assert "4095" in result.stderr


def test_memory_limit_makes_a_big_allocation_fail(host: HostTarget) -> None:
    code = "buf = bytearray(2 * 1024**3); print('allocated')"
    result = host.run(RunRequest([PY, "-c", code], memory_limit=300, timeout=60))
    assert result.returncode != 0
    assert "MemoryError" in result.stderr
    assert "allocated" not in result.stdout


def test_memory_limit_leaves_small_programs_alone(host: HostTarget) -> None:
    code = "buf = bytearray(16 * 1024**2); print(len(buf))"
    result = host.run(RunRequest([PY, "-c", code], memory_limit=300, timeout=60))
    assert result.ok, result.stderr
    assert result.stdout.strip() == str(16 * 1024**2)


def test_limits_do_not_leak_into_benchlab(host: HostTarget) -> None:
    import resource

    before = resource.getrlimit(resource.RLIMIT_AS)
    host.run(RunRequest([PY, "-c", "pass"], memory_limit=300, timeout=60))
    assert resource.getrlimit(resource.RLIMIT_AS) == before


def test_workdir_push_pull_remove(host: HostTarget, tmp_path: Path) -> None:
    workdir = Path(host.make_workdir("spec/test: 1"))
    assert workdir.is_dir()
    # Under the configured root, with the odd characters of the name made safe.
    assert workdir.parent == tmp_path / "work"
    assert "/" not in workdir.name and ":" not in workdir.name and " " not in workdir.name
    assert host.make_workdir("spec/test: 1") != str(workdir)  # fresh every time

    source = tmp_path / "model.bin"
    source.write_bytes(b"weights")
    # Without a name the file is used where it is.
    assert host.push(source, str(workdir)) == str(source)
    # With a name it appears in the workdir under that name, pointing at the original.
    pushed = Path(host.push(source, str(workdir), "input.bin"))
    assert pushed == workdir / "input.bin"
    assert pushed.is_symlink() and pushed.read_bytes() == b"weights"
    # Pushing again under the same name replaces the link.
    other = tmp_path / "other.bin"
    other.write_bytes(b"other")
    assert Path(host.push(other, str(workdir), "input.bin")).read_bytes() == b"other"

    # A command's output file comes back with pull.
    result = host.run(RunRequest("echo produced > out.txt", cwd=str(workdir), timeout=60))
    assert result.ok
    pulled = host.pull(str(workdir / "out.txt"), tmp_path / "back" / "out.txt")
    assert pulled.read_text() == "produced\n"

    host.remove_workdir(str(workdir))
    assert not workdir.exists()
    # The originals behind the links are untouched.
    assert source.read_bytes() == b"weights"
    host.remove_workdir(str(workdir))  # removing twice is harmless


def test_workdir_defaults_to_the_system_temp_dir() -> None:
    host = HostTarget()
    workdir = host.make_workdir("x")
    try:
        assert Path(workdir).is_dir()
        assert Path(workdir).name.startswith("benchlab-x-")
    finally:
        host.remove_workdir(workdir)


def test_describe_reports_this_machine(host: HostTarget) -> None:
    described = host.describe()
    assert described["cpu_count"] == os.cpu_count()
    assert described["python"] == sys.version.split()[0]
    # Device state comes from the probe every target runs, read once with the description.
    state = described["state"]
    assert state["complete"] and set(state["cpus"]) >= {f"cpu{i}" for i in
                                                        os.sched_getaffinity(0)}
    assert described["load_average"] == state["load_average"]
    assert described["temperatures_c"] == state["temperatures_c"]


def test_command_result_ok_requires_exit_zero_and_no_timeout() -> None:
    assert CommandResult(0, "", "", 0.1).ok
    assert not CommandResult(0, "", "", 0.1, timed_out=True).ok
    assert not CommandResult(1, "", "", 0.1).ok
    assert not CommandResult(None, "", "", 0.1).ok

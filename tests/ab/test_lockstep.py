"""Lock-step sessions with real processes, and the step protocol's helpers (Python and C).

The programs are examples/ab/spin.py and spin.c with large known slowdowns, and
tests/ab/step_program.py, whose reported times are fixed so a session's numbers are known
exactly. Nothing here asserts how fast anything runs.
"""

from __future__ import annotations

import importlib.resources
import math
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pytest
import yaml

from benchlab.ab.lockstep import lockstep_session
from benchlab.schema.comparison import Mode
from benchlab.ab.sides import Side, side_job
from benchlab.ab.sessions import Session, balanced_orders
from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import ModeUnavailable, TargetError
from benchlab.harness.planner import plan
from benchlab.harness.jobrun import Job
from benchlab.spec import load
from benchlab.protocol.step import include_dir
from benchlab.targets.host import HostTarget

ROOT = Path(__file__).resolve().parents[2]
SPIN = ROOT / "examples" / "ab" / "spin.py"
SPIN_C = ROOT / "examples" / "ab" / "spin.c"
STEP_PROGRAM = Path(__file__).with_name("step_program.py")
PY = sys.executable


def jobs_for(tmp_path: Path, *, commands: list[str] | None = None,
             timeout: float = 30.0) -> tuple[Job, Job]:
    """The (control, treatment) jobs of a one-test spec whose command runs ``{program}``.

    Both programs are pinned to one CPU (the test's ``cpu_list``): on a small shared VM two
    CPUs can run at different speeds for seconds, which no interleaving can cancel.
    """
    test = {"identifier": "default", "warmup": 2, "iter": 5, "timeout": timeout,
            "cpu_list": str(min(os.sched_getaffinity(0))),
            "commands": commands or ["{program} --warmup {warmup} --iter {iter}"]}
    spec = {"model": {"name": "spin", "format": "script"}, "tests": [test]}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    (job,) = plan(load(path), HostTarget(), device="test").jobs
    return side_job(job, Side("control"), "control"), side_job(job, Side("treatment"), "treatment")


def session(tmp_path: Path, control: str, treatment: str, *, index: int = 0, blocks: int = 12,
            warmup: int = 2, seed: int = 7, timeout: float = 30.0, solo: int = 0,
            park: bool = True) -> Session:
    """Session ``index`` as compare runs it: a balanced order, the first side alternating."""
    return lockstep_session(
        jobs_for(tmp_path), ("control", "treatment"),
        ({"program": control}, {"program": treatment}), HostTarget(),
        ArtifactCache(tmp_path / "cache"), order=balanced_orders(blocks, seed),
        started_first="ct"[index % 2], warmup=warmup, timeout=timeout, index=index,
        solo=solo, park=park)


def gone(pid: int) -> bool:
    """Whether a process no longer runs (a zombie nobody reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def fake(name: str, tmp_path: Path, *extra: str) -> str:
    return (f"{PY} {STEP_PROGRAM} --name {name} --log {tmp_path / 'steps.log'} "
            f"--pid-file {tmp_path / (name + '.pid')} " + " ".join(extra))


# -- sessions of spin.py ------------------------------------------------------------------------


def test_spin_against_itself_gives_balanced_sessions(tmp_path: Path) -> None:
    results = [session(tmp_path, f"{PY} {SPIN}", f"{PY} {SPIN}", blocks=20, seed=3, index=i)
               for i in range(3)]
    for index, result in enumerate(results):
        assert result.mode is Mode.LOCKSTEP and result.loaded_first == "ct"[index % 2]
        assert result.order == balanced_orders(20, 3) and result.order.count("c") == 10
        assert len(result.control) == len(result.treatment) == 20
        assert all(t > 0 for t in result.control + result.treatment)
    # A loose band, and over sessions: one fresh process in twenty or so runs a whole session
    # 20-30% off the others on this VM, which interleaving within a session cannot cancel.
    assert abs(statistics.median(r.estimate for r in results)) < math.log(1.5)


def test_spin_half_again_as_much_work_is_seen_as_about_50_percent_slower(tmp_path: Path) -> None:
    results = [session(tmp_path, f"{PY} {SPIN}", f"{PY} {SPIN} --slowdown 0.5", blocks=20,
                       index=i, seed=i) for i in range(5)]
    assert all(len(r.log_ratios) == 20 for r in results)
    assert statistics.median(r.estimate for r in results) > math.log(1.25)  # truth: log(1.5)


# -- order, start and warm-up, with exactly known times -----------------------------------------


@pytest.mark.parametrize("index", [0, 1])
def test_steps_run_in_the_drawn_order_and_start_alternates_with_the_index(
    tmp_path: Path, index: int
) -> None:
    result = session(tmp_path, fake("c", tmp_path, "--value-us 1500"),
                     fake("t", tmp_path, "--value-us 3000"), index=index, blocks=6, warmup=2,
                     seed=11)
    # Times are converted to ms and land on their own side.
    assert result.control == (1.5,) * 6 and result.treatment == (3.0,) * 6
    assert result.estimate == pytest.approx(math.log(2.0))
    first, second = ("c", "t") if index == 0 else ("t", "c")
    assert result.loaded_first == first
    log = (tmp_path / "steps.log").read_text().split("\n")[:-1]
    expected = [f"{first} ready", f"{second} ready"]
    expected += [f"{first} step 0", f"{second} step 0", f"{second} step 1", f"{first} step 1"]
    for block, letter in enumerate(result.order):
        for side in (letter, "t" if letter == "c" else "c"):
            expected.append(f"{side} step {block + 2}")
    assert log == expected
    assert result.order == balanced_orders(6, 11)


# -- the idle side parked, and each side alone -------------------------------------------------


@pytest.mark.parametrize("park, seen_ms", [(True, 1.0), (False, 2.0)])
def test_the_idle_side_is_parked_while_the_other_steps(
    tmp_path: Path, park: bool, seen_ms: float
) -> None:
    # Each side reports the other's process state at every one of its steps (step_program).
    sides = [fake(name, tmp_path, f"--peer-pid-file {tmp_path / (peer + '.pid')}")
             for name, peer in (("c", "t"), ("t", "c"))]
    result = session(tmp_path, *sides, blocks=8, warmup=1, park=park)
    assert result.control == result.treatment == (seen_ms,) * 8
    idle = "parked (SIGSTOP)" if park else "live"
    assert result.regime == {"control": {"idle": idle}, "treatment": {"idle": idle}}


@pytest.mark.parametrize("index", [0, 1])
def test_solo_steps_run_before_the_other_starts_and_after_it_exits(
    tmp_path: Path, index: int
) -> None:
    sides = [fake(name, tmp_path, f"--peer-pid-file {tmp_path / (peer + '.pid')}")
             for name, peer in (("c", "t"), ("t", "c"))]
    result = session(tmp_path, *sides, blocks=4, warmup=1, solo=3, index=index)
    first, second = ("control_solo", "treatment_solo")[::1 if index == 0 else -1]
    assert getattr(result, first) == (3.0,) * 3  # the other has not started
    assert getattr(result, second) == (4.0,) * 3  # the other has exited
    assert result.solo_median("c") is not None and result.solo_median("t") is not None
    log = (tmp_path / "steps.log").read_text().split("\n")[:-1]
    lead, other = ("c", "t") if index == 0 else ("t", "c")
    # ready, three untimed steps (as many as the solo ones) and three solo steps of the
    # first side before the other starts
    assert log[:8] == [f"{lead} ready", *(f"{lead} step {i}" for i in range(6)),
                       f"{other} ready"]


# -- programs that do not step ------------------------------------------------------------------


@pytest.mark.parametrize("command, seen", [
    (f"{PY} {STEP_PROGRAM} --mode own-loop", "metric line before"),
    ("true", "exited with status 0 before"),
])
def test_a_program_that_ignores_the_protocol_is_unavailable_at_once(
    tmp_path: Path, command: str, seen: str
) -> None:
    started = time.monotonic()
    with pytest.raises(ModeUnavailable, match="does not speak the step protocol") as caught:
        session(tmp_path, command, f"{PY} {SPIN}", timeout=60.0)
    assert seen in str(caught.value) and str(caught.value).startswith("control:")
    assert time.monotonic() - started < 30  # it did not wait for the 60 s timeout


def test_a_program_that_says_ready_but_runs_its_own_loop_is_found_out(tmp_path: Path) -> None:
    with pytest.raises(ModeUnavailable, match="latency line nobody asked for"):
        session(tmp_path, fake("c", tmp_path), fake("t", tmp_path, "--mode ready-then-loop"),
                blocks=12, warmup=2)


def test_a_silent_program_is_unavailable_at_its_timeout_and_killed(tmp_path: Path) -> None:
    with pytest.raises(ModeUnavailable, match="no 'BENCHLAB_STEP ready' line within 2 s"):
        session(tmp_path, f"{PY} {SPIN}", fake("t", tmp_path, "--mode silent"), timeout=2.0,
                index=0)
    pid = int((tmp_path / "t.pid").read_text())
    assert gone(pid)  # it ignored SIGTERM: SIGKILL ended it


def test_a_crash_after_ready_is_a_target_error_naming_the_side(tmp_path: Path) -> None:
    with pytest.raises(TargetError) as caught:
        session(tmp_path, fake("c", tmp_path), fake("t", tmp_path, "--crash-at 3"), warmup=0,
                blocks=6)
    message = str(caught.value)
    assert message.startswith("treatment:") and "status 3" in message
    assert "boom at step 3" in message and "step 3 of the lock-step session" in message
    for name in ("c", "t"):
        assert gone(int((tmp_path / f"{name}.pid").read_text()))


def test_other_targets_and_several_commands_are_unavailable(tmp_path: Path) -> None:
    class Remote(HostTarget):
        name = "ssh"

    def run(target: HostTarget, pair: tuple[Job, Job]) -> Session:
        return lockstep_session(pair, ("control", "treatment"), ({"program": "a"},
                                {"program": "b"}), target, ArtifactCache(tmp_path / "cache"),
                                order="ct")

    with pytest.raises(ModeUnavailable, match="host target only"):
        run(Remote(), jobs_for(tmp_path))
    pair = jobs_for(tmp_path, commands=["{program}", "{program} again"])
    with pytest.raises(ModeUnavailable, match="exactly one command"):
        run(HostTarget(), pair)
    workroot = Path(tempfile.gettempdir())
    assert not list(workroot.glob(f"benchlab-{pair[0].identity.key}-*"))  # removed again


# -- the C program and header -------------------------------------------------------------------


@pytest.fixture(scope="module")
def spin_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("spin") / "spin"
    subprocess.run([compiler, "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror",
                    f"-I{include_dir()}", str(SPIN_C), "-o", str(out)], check=True, timeout=120)
    return out


def test_the_c_program_runs_its_own_loop_without_the_step_variable(spin_binary: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "BENCHLAB_STEP"}
    out = subprocess.run([spin_binary, "--warmup", "1", "--iter", "3", "--work", "1000"],
                         capture_output=True, text=True, env=env, timeout=60, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == 3 and all(ln.startswith("BENCHLAB_METRIC {") for ln in lines)


def test_the_c_program_steps_in_lockstep(tmp_path: Path, spin_binary: Path) -> None:
    same = session(tmp_path, str(spin_binary), str(spin_binary), blocks=10)
    assert len(same.control) == 10 and same.order == balanced_orders(10, 7)
    slower = [session(tmp_path, str(spin_binary), f"{spin_binary} --slowdown 1.0", blocks=10,
                      index=i, seed=i) for i in range(3)]
    assert [s.loaded_first for s in slower] == ["c", "t", "c"]
    assert statistics.median(s.estimate for s in slower) > math.log(1.5)  # truth: log(2)


# -- the Python helper --------------------------------------------------------------------------

LOOP = ("from benchlab.protocol.step import steps\n"
        "for i in steps(3):\n"
        "    print('BENCHLAB_METRIC {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\","
        "\"value\":%d}' % (i + 1))\n")


def run_loop(stdin: str, step: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "BENCHLAB_STEP"}
    if step is not None:
        env["BENCHLAB_STEP"] = step
    proc = subprocess.run([PY, "-c", LOOP], input=stdin, capture_output=True, text=True,
                          env=env, timeout=60, check=True)
    return proc.stdout.splitlines()


def test_steps_is_range_outside_step_mode() -> None:
    for step in (None, "0", ""):
        lines = run_loop("a\n", step)
        assert len(lines) == 3 and "BENCHLAB_STEP ready" not in lines


def test_steps_yields_once_per_line_until_stop_or_eof() -> None:
    lines = run_loop("a\nb\nc\nd\n", "1")
    assert lines[0] == "BENCHLAB_STEP ready" and len(lines) == 5  # iterations is ignored
    assert lines[4].endswith('"value":4}')
    assert run_loop("a\n stop \nb\n", "1") == [lines[0], lines[1]]
    assert run_loop("", "1") == ["BENCHLAB_STEP ready"]


def test_steps_flushes_each_metric_line_before_waiting() -> None:
    env = {**os.environ, "BENCHLAB_STEP": "1"}
    proc = subprocess.Popen([PY, "-c", LOOP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"go\n")  # stdin stays open: only a flush can bring the line out
        received = b""
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while received.count(b"\n") < 2:
                assert selector.select(timeout=30), f"no line within 30 s; got {received!r}"
                chunk = os.read(proc.stdout.fileno(), 4096)
                assert chunk, f"the program ended; got {received!r}"
                received += chunk
        lines = received.decode().splitlines()
        assert lines[0] == "BENCHLAB_STEP ready" and lines[1].startswith("BENCHLAB_METRIC")
        proc.stdin.close()  # EOF ends the loop
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_copy_of_step_py_and_spin_py_work_without_benchlab(tmp_path: Path) -> None:
    shutil.copy(ROOT / "src" / "benchlab" / "protocol" / "step.py", tmp_path / "step.py")
    probe = ("import sys, step\n"
             "for i in step.steps(2): print('it', i)\n"
             "heavy = {'numpy', 'torch', 'benchlab'} & set(sys.modules)\n"
             "print('heavy', sorted(heavy))\n")
    (tmp_path / "probe.py").write_text(probe)
    env = {**os.environ, "BENCHLAB_STEP": "1"}
    # -S: no site-packages, so benchlab (an editable install) cannot be imported at all.
    out = subprocess.run([PY, "-S", str(tmp_path / "probe.py")], input="x\n", env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines() == ["BENCHLAB_STEP ready", "it 0", "heavy []"]
    # spin.py falls back to its own few lines when benchlab is not importable.
    out = subprocess.run([PY, "-S", str(SPIN), "--warmup", "0"], input="x\nx\nstop\n",
                         env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "BENCHLAB_STEP ready" and len(lines) == 3
    assert all(ln.startswith("PyTorchObserver {") for ln in lines[1:])


def test_the_c_header_is_package_data() -> None:
    header = importlib.resources.files("benchlab").joinpath("data/benchlab_step.h")
    assert header.is_file() and "benchlab_step_next" in header.read_text()
    assert (Path(include_dir()) / "benchlab_step.h").is_file()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "data/*.h" in pyproject["tool"]["setuptools"]["package-data"]["benchlab"]

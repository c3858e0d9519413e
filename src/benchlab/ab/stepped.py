"""One live program driven through the step protocol: started in its own process group,
read by two threads, asked for one step at a time, parked between steps, and killed with its
whole group at the end. :mod:`benchlab.ab.lockstep` runs two of them as one session.

Nothing waits without a deadline: the ready line and every step must come within the given
timeout. A program that does not speak the protocol raises
:class:`~benchlab.errors.ModeUnavailable`; one that crashes, hangs or prints garbage after
``ready`` raises :class:`~benchlab.errors.TargetError` (docs/ab.md, "The step protocol").
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from benchlab.errors import ModeUnavailable, TargetError
from benchlab.protocol.lines import parse_output
from benchlab.schema.result import LATENCY_KEY
from benchlab.protocol.step import READY, STOP
from benchlab.targets.host import child_setup
from benchlab.schema.units import convert

__all__ = ["StepCommand", "SteppedProgram"]

# A process group that ignores SIGTERM gets this long before SIGKILL.
_TERM_GRACE_S = 1.0
# The line that asks for one step (any line but "stop" does).
_STEP = "step"
_TAIL_LINES = 20


@dataclass(frozen=True, slots=True)
class StepCommand:
    """One side's command, ready to start: what ``target.run`` would have been given."""

    label: str
    argv: str | Sequence[str]
    env: Mapping[str, str]
    cwd: str
    cpu_list: str | None
    memory_limit: int | None


class _Timeout(Exception):
    """A deadline passed while waiting for a line."""


def _ended(code: int | None) -> str:
    """How a process ended, in words."""
    if code is None:
        return "it is still running"
    signum = -code if code < 0 else code - 128 if 128 < code < 160 else None
    if signum is not None:
        try:
            return f"it was killed by {signal.Signals(signum).name} (exit status {code})"
        except ValueError:
            pass
    return f"it exited with status {code}"


class SteppedProgram:
    """One live side: its process group, and the lines it printed, read by two threads."""

    def __init__(self, command: StepCommand) -> None:
        self.command = command
        self.label = command.label
        self.proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
        self._stdout_open = True
        self.stdout_tail: deque[str] = deque(maxlen=_TAIL_LINES)
        self.stderr_tail: deque[str] = deque(maxlen=2 * _TAIL_LINES)
        self.steps = 0
        self.parked = False

    # -- the process ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the command in its own session (process group), pinned and capped as the
        host target does it."""
        command = self.command
        try:
            self.proc = subprocess.Popen(
                command.argv, shell=isinstance(command.argv, str), cwd=command.cwd,
                env=dict(command.env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True,
                preexec_fn=child_setup(command.cpu_list, command.memory_limit),  # noqa: PLW1509
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ModeUnavailable(f"{self.label}: the command could not start: {exc}") from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        for name, stream in (("out", self.proc.stdout), ("err", self.proc.stderr)):
            threading.Thread(target=self._pump, args=(name, stream), daemon=True,
                             name=f"lockstep-{name}").start()

    def _pump(self, name: str, stream: IO[bytes]) -> None:
        try:
            for raw in iter(stream.readline, b""):
                self._lines.put((name, raw.decode("utf-8", "replace").rstrip("\r\n")))
        except (OSError, ValueError):
            pass
        finally:
            self._lines.put((name, None))
            stream.close()

    def park(self) -> None:
        """Stop the whole process group (SIGSTOP) while the other side steps: threads that
        spin when idle (ONNX Runtime's pools) would otherwise take CPU from it."""
        assert self.proc is not None
        _signal_group(self.proc.pid, signal.SIGSTOP)
        self.parked = True
        # SIGSTOP is delivered asynchronously: wait until the program has stopped, and every
        # process it started (a shell's command), so the other side's step never overlaps
        # their last moments.
        deadline = time.monotonic() + _TERM_GRACE_S
        while any(_process_state(pid) not in ("T", "t", "Z", "X", None)
                  for pid in _tree(self.proc.pid)):
            if time.monotonic() > deadline:
                break
            time.sleep(0.0001)

    def resume(self) -> None:
        """Continue a parked process group (SIGCONT); nothing when it is not parked."""
        if self.parked and self.proc is not None:
            _signal_group(self.proc.pid, signal.SIGCONT)
            self.parked = False

    def send(self, line: str) -> bool:
        """Write one line to the program's stdin; False when it no longer reads."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def status(self, wait: float) -> int | None:
        """The exit status, waiting up to ``wait`` seconds for it (None if still running)."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """End the program's whole process group: SIGTERM, a short grace, then SIGKILL."""
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGCONT)  # a parked group would not see SIGTERM
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=_TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        # Whatever is left of the group (the program itself, or children it left behind).
        _signal_group(proc.pid, signal.SIGKILL)
        try:
            proc.wait(timeout=_TERM_GRACE_S)
        except subprocess.TimeoutExpired:  # unkillable (stuck in the kernel): leave it
            pass
        # SIGKILL is delivered asynchronously: give the rest of the group a moment to go.
        deadline = time.monotonic() + _TERM_GRACE_S
        while _signal_group(proc.pid, 0) and time.monotonic() < deadline:
            time.sleep(0.01)

    # -- its output ----------------------------------------------------------------------------

    def next_line(self, deadline: float, on_stderr: Callable[[str], None] | None = None
                  ) -> str | None:
        """The next stdout line, or None once stdout is closed (the program ended); raises
        :class:`_Timeout` at ``deadline``. Stderr lines go to the tail (and ``on_stderr``)."""
        while self._stdout_open:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout
            try:
                name, line = self._lines.get(timeout=remaining)
            except queue.Empty:
                raise _Timeout from None
            if name == "err":
                if line is not None:
                    self.stderr_tail.append(line)
                    if on_stderr is not None:
                        on_stderr(line)
                continue
            if line is None:
                self._stdout_open = False
                break
            return line
        return None

    def seen(self) -> str:
        """The end of what the program printed, for a message."""
        out = [ln for ln in self.stdout_tail if ln.strip()][-3:]
        err = [ln for ln in self.stderr_tail if ln.strip()][-3:]
        parts = []
        if out:
            parts.append("stdout ended: " + " | ".join(_short(ln) for ln in out))
        if err:
            parts.append("stderr ended: " + " | ".join(_short(ln) for ln in err))
        return "; ".join(parts) if parts else "it printed nothing"

    def stderr_text(self) -> str:
        """The tail of stderr (stdout's when stderr is empty), for a failure's message."""
        return "\n".join(self.stderr_tail or self.stdout_tail)

    # -- the protocol --------------------------------------------------------------------------

    def wait_ready(self, timeout: float) -> None:
        """Wait for the ready line; ModeUnavailable when the program shows it does not step."""
        deadline = time.monotonic() + timeout

        def not_stepping(what: str) -> ModeUnavailable:
            return ModeUnavailable(
                f"{self.label}: the program does not speak the step protocol ({what}; "
                f"{self.seen()})")

        def check_stderr(line: str) -> None:
            if _is_metric_line(line):
                raise not_stepping("it printed a metric line on stderr before "
                                   f"'{READY}', so it runs its own loop")

        while True:
            try:
                line = self.next_line(deadline, check_stderr)
            except _Timeout:
                raise not_stepping(f"no '{READY}' line within {timeout:g} s") from None
            if line is None:
                raise not_stepping(f"{_ended(self.status(_TERM_GRACE_S))} before '{READY}'")
            if line.strip() == READY:
                return
            self.stdout_tail.append(line)
            if _is_metric_line(line):
                raise not_stepping(f"it printed a metric line before '{READY}', so it runs its "
                                   "own loop")

    def _check_unasked(self) -> None:
        """Read what the program printed since its last step without being asked: a latency
        line there means it runs its own loop after all (its ready line was not an answer)."""
        while self._stdout_open:
            try:
                name, line = self._lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                if name == "out":
                    self._stdout_open = False
                continue
            (self.stdout_tail if name == "out" else self.stderr_tail).append(line)
            if name == "out" and any(s.key == LATENCY_KEY for s in parse_output(line).samples):
                raise ModeUnavailable(
                    f"{self.label}: the program does not speak the step protocol (after step "
                    f"{self.steps} it printed a latency line nobody asked for, so it does not "
                    f"wait for steps; {self.seen()})")

    def step(self, timeout: float) -> float:
        """Run one step: the latency of that one iteration, in milliseconds."""
        self._check_unasked()
        self.steps += 1
        what = f"step {self.steps} of the lock-step session"
        deadline = time.monotonic() + timeout
        if not self.send(_STEP):
            raise self._crashed(what)
        while True:
            try:
                line = self.next_line(deadline)
            except _Timeout:
                raise TargetError(
                    f"{self.label}: no latency metric line within {timeout:g} s of {what}; its "
                    f"process group was killed ({self.seen()})") from None
            if line is None:
                raise self._crashed(what)
            self.stdout_tail.append(line)
            parsed = parse_output(line)
            if parsed.malformed:
                raise TargetError(f"{self.label}: {what} printed a malformed metric line: "
                                  f"{parsed.malformed[0]}")
            for sample in parsed.samples:
                if sample.key == LATENCY_KEY:
                    value = convert(sample.value, sample.unit, "ms")
                    if value is None:
                        raise TargetError(f"{self.label}: {what} printed its latency in "
                                          f"{sample.unit!r}, which is not a unit of time")
                    return value

    def _crashed(self, what: str) -> TargetError:
        code = self.status(_TERM_GRACE_S)
        tail = self.stderr_text()
        return TargetError(f"{self.label}: the program ended during {what}: {_ended(code)}"
                           + (f"; its output ended with:\n{tail}" if tail else ""))

    def stop(self, timeout: float) -> None:
        """Send ``stop`` (resuming the program first) and wait for a clean exit."""
        self.resume()
        self.send(STOP)
        self.finish(timeout)

    def finish(self, timeout: float) -> None:
        """After ``stop`` was sent: wait for a clean exit."""
        code = self.status(timeout)
        if code is None:
            raise TargetError(f"{self.label}: the program did not exit within {timeout:g} s "
                              f"of '{STOP}'; its process group was killed")
        if code != 0:
            tail = self.stderr_text()
            raise TargetError(f"{self.label}: after '{STOP}' {_ended(code)}"
                              + (f"; its output ended with:\n{tail}" if tail else ""))


def _short(line: str, limit: int = 160) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _is_metric_line(line: str) -> bool:
    parsed = parse_output(line)
    return bool(parsed.metric_lines or parsed.malformed)


def _process_state(pid: int) -> str | None:
    """The one-letter state of a process (``T`` stopped), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()[0].decode()


def _tree(pid: int) -> list[int]:
    """``pid`` and the processes it started, theirs too (from /proc's children lists)."""
    found, index = [pid], 0
    while index < len(found):
        parent = found[index]
        index += 1
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children", "rb") as handle:
                    found.extend(int(child) for child in handle.read().split())
            except (OSError, ValueError):
                continue
    return found


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True

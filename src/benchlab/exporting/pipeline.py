"""Export processes that can be paused: the zoo's exports, run beside a sweep's measurements.

A first run exports every model before it can measure it, and exporting is most of a fresh
run's time. :class:`PausableProcesses` lets exports and measurements take turns: the sweep
measures a model as soon as its export ends, and for that long every other export process is
stopped (``SIGSTOP`` on its process group), so no export competes with a measurement for the
CPU, its caches or the disk. They continue (``SIGCONT``) when the measurements end.

This module runs export processes and reports their progress; what to export and where the
files go is :mod:`benchlab.zoo`'s business.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchlab.errors import InfrastructureError
from benchlab.exporting.definition import ModelDefinition, resolve_onnx_resource
from benchlab.exporting.formats import EXPORT_PROGRESS_PREFIX

__all__ = ["ExportProgress", "PausableProcesses", "default_export_workers", "run_exporter"]

# One model's exports may include AOTInductor's C++ build; a hung converter still ends.
EXPORT_TIMEOUT_S = 3600.0


def default_export_workers() -> int:
    """How many export processes run at once: two where the machine has two cores or more.

    Exports never run during a measurement, so they may share the machine; more than two
    mostly trade memory (a torch export process takes 1-2 GiB) for little time.
    """
    return max(1, min(2, os.cpu_count() or 1))


class PausableProcesses:
    """Starts processes in their own process groups, and stops or continues them all at once.

    While paused, :meth:`popen` and :meth:`running` wait: no new process starts and no
    caller does its post-processing (copying files into the cache) until :meth:`resume`.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._paused = False
        self._closed = False
        self._groups: set[int] = set()

    @property
    def paused(self) -> bool:
        """Whether the processes are stopped now."""
        return self._paused

    def _wait_unpaused(self) -> None:
        while self._paused and not self._closed:
            self._condition.wait()
        if self._closed:
            raise InfrastructureError("the export was cancelled")

    @contextmanager
    def running(self) -> Iterator[None]:
        """Hold off a pause for the duration of the block (waiting for a resume first)."""
        with self._condition:
            self._wait_unpaused()
            yield

    def popen(self, argv: list[str], **options: Any) -> subprocess.Popen[str]:
        """Start ``argv`` (once not paused) in a new session, so its whole group can stop."""
        with self._condition:
            self._wait_unpaused()
            proc = subprocess.Popen(argv, start_new_session=True, **options)
            self._groups.add(proc.pid)
            return proc

    def done(self, proc: subprocess.Popen[str]) -> None:
        """Forget an ended process."""
        with self._condition:
            self._groups.discard(proc.pid)

    def _signal_all(self, signum: int) -> None:
        for group in list(self._groups):
            try:
                os.killpg(group, signum)
            except ProcessLookupError:  # ended between its last read and done()
                self._groups.discard(group)

    def pause(self) -> None:
        """Stop every live process group; hold new starts until :meth:`resume`."""
        with self._condition:
            self._paused = True
            self._signal_all(signal.SIGSTOP)

    def resume(self) -> None:
        """Continue the stopped processes and let waiting starts go on."""
        with self._condition:
            self._paused = False
            self._signal_all(signal.SIGCONT)
            self._condition.notify_all()

    def close(self) -> None:
        """Kill every live process group (a stopped process dies too); no new starts."""
        with self._condition:
            self._closed = True
            self._signal_all(signal.SIGKILL)
            self._condition.notify_all()


class ExportProgress:
    """Lines saying which model and format is exporting, and how long each took."""

    def __init__(self, progress: Callable[[str], None] | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def say(self, text: str) -> None:
        """One line, stamped with the seconds since the exports began."""
        if self.progress is not None:
            with self.lock:
                self.progress(f"[{time.monotonic() - self.started:4.0f} s] {text}")

    def event(self, model: str) -> Callable[[dict[str, Any]], None]:
        """The handler of one model's export events (format started, done or failed): the
        format's wall time, and its CPU time where a pause made them far apart."""
        def on_event(event: dict[str, Any]) -> None:
            fmt, what = event.get("format", "?"), event.get("event")
            if what == "start":
                self.say(f"exporting {model}: {fmt} …")
                return
            with self.lock:
                self.done += 1
                done = self.done
            verb = "failed after" if what == "failed" else "done in"
            wall, cpu = float(event.get("seconds") or 0), event.get("cpu_seconds")
            # Far more wall than CPU: it was paused while a model was measured.
            paused = f", {float(cpu):.1f} s of CPU" if cpu is not None and wall > 2 * cpu + 5 \
                else ""
            self.say(f"exported {model}: {fmt} {verb} {wall:.1f} s{paused} "
                     f"({done}/{self.total} formats)")
        return on_event


def run_exporter(model: ModelDefinition, formats: list[str], out_dir: Path,
                 processes: PausableProcesses,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 log: Path | None = None) -> dict[str, Any]:
    """Export ``formats`` of ``model`` in a fresh process; its progress lines go to
    ``on_event`` as they come, its report (the last stdout line) is returned. ``log`` keeps
    everything the process wrote on stderr (the converters' full errors, which a failure's
    one-line reason cuts)."""
    job = {
        "name": model.name, "entry": model.entry, "task": model.task,
        "onnx_resource_path": str(resolve_onnx_resource(model.onnx_resource))
        if model.onnx_resource else None,
        "input_shapes": [list(s) for s in model.input_shapes],
        "input_dtypes": list(model.dtypes), "formats": [f for f in formats if f != "reference"],
        "out_dir": str(out_dir), "seed": 0, "data": model.data,
    }
    proc = processes.popen([sys.executable, "-m", "benchlab.exporting.job", json.dumps(job)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tail: deque[str] = deque(maxlen=6)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
    # Appended: a staged run exports a model in two processes, and each keeps its output.
    kept = open(log, "a", encoding="utf-8") if log is not None else None  # noqa: SIM115
    if kept is not None:
        kept.write(f"== {time.strftime('%Y-%m-%d %H:%M:%S')} export of {model.name}: "
                   f"{', '.join(formats)}\n")
    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if kept is not None:
                kept.write(line)
            if line.startswith(EXPORT_PROGRESS_PREFIX):
                try:
                    event = json.loads(line[len(EXPORT_PROGRESS_PREFIX):])
                except ValueError:
                    continue
                if on_event is not None:
                    on_event(event)
            elif line.strip():
                tail.append(line.rstrip())

    killed: list[bool] = []

    def kill() -> None:
        killed.append(True)
        proc.kill()

    reader = threading.Thread(target=read_stderr, daemon=True)
    # The timeout counts paused time too; it is there for hung converters, not slow ones.
    timer = threading.Timer(EXPORT_TIMEOUT_S, kill)
    reader.start()
    timer.start()
    try:
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.wait()
    finally:
        timer.cancel()
        processes.done(proc)
        reader.join(timeout=10)
        if kept is not None:
            kept.close()
    if killed:
        raise InfrastructureError(f"exporting {model.name} took over {EXPORT_TIMEOUT_S:.0f} s")
    lines = out.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else None
    except ValueError:
        report = None
    if proc.returncode != 0 or not isinstance(report, dict):
        why = f"exporter exited {proc.returncode}: " + "\n".join(tail)
        return {"files": {}, "failed": {f: why for f in formats}, "metadata": {}, "seconds": {}}
    return report

"""Read the output of ExecuTorch's ``executor_runner`` and build its command line.

The format was read from pytorch/executorch ``examples/portable/executor_runner/
executor_runner.cpp``, the source of ``executor_runner`` and of the XNNPACK build
``xnn_executor_runner`` (same file, linked with the XNNPACK backend), in three generations
(release boundaries approximate):

* early 0.x (commit fefc4a2): ``Model file X is loaded.``, ``Method loaded.``, ``Model executed
  successfully.``, no time at all;
* the ``--num_executions`` generation (about 0.4 - 1.0): ``Model executed successfully N time(s)
  in X ms.``, the total over the N executions, so the mean is total / N;
* main in 2026 (commit 018a3a5): also ``Model loaded in X ms.`` (program + method load) and one
  ``Iteration i of N: X ms`` line per execution, read as real per-iteration samples.

Log lines come from ``runtime/platform/default/posix.cpp`` (``I 00:00:00.001234
executorch:executor_runner.cpp:123] message``, on stderr); outputs are printed by
``extension/evalue_util/print_evalue.cpp`` as ``Output 0: tensor(sizes=[1, 1000], [...])``
(``OutputX 0:`` in some releases).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from benchlab.schema.result import DetailKey, Metric
from benchlab.protocol.lines import ParsedOutput, ReportedSummary
from benchlab.frameworks.native.common import NUMBER
from benchlab.frameworks.native.common import SampleList as _Samples
from benchlab.frameworks.native.common import count_flag
from benchlab.frameworks.native.common import finite_float as _float

__all__ = ["TOOL", "executor_runner_argv", "parse_executor_runner"]

TOOL = "executor_runner"
"""The name recorded in ``details["tool"]``."""

_LEVEL = re.compile(r"^\s*([DIWEF]) (?:\d+:\d\d:\d\d\.\d+ )?executorch:")
_MODEL_FILE = re.compile(r"Model file (.+?) is loaded\.")
_METHOD = re.compile(r"Using method (\S+)")
_BUFFER = re.compile(r"Setting up (?:(?:CPU|device) )?planned buffer (\d+), size (\d+)")
_LOADED_IN = re.compile(rf"Model loaded in ({NUMBER}) ms", re.I)
_THREADS = re.compile(r"Resetting threadpool with num threads = (\d+)")
_ITERATION = re.compile(rf"Iteration (\d+) of (\d+): ({NUMBER}) ms", re.I)
_TOTAL = re.compile(rf"Model executed successfully (\d+) time\(s\) in ({NUMBER}) ms", re.I)
_DONE = re.compile(r"Model executed successfully\.")
_N_OUTPUTS = re.compile(r"(?:^|[\s\]])(\d+) outputs:")
_OUTPUT = re.compile(r"^OutputX? (\d+): (.*)$")
_SIZES = re.compile(r"^tensor\(sizes=\[([\d,\s]*)\]")
_ETDUMP = re.compile(r"ETDump written to file '(.+)'")
_ERROR_STAT = re.compile(rf"\b(mean_absolute_error|max_absolute_error|mean_relative_error"
                         rf"|max_relative_error):\s*({NUMBER})")
_TEST_RESULT = re.compile(r"Test_result: (PASS|FAIL)")


def _message(line: str) -> str:
    """The text after ExecuTorch's ``L hh:mm:ss.us executorch:file:line]`` header, if any."""
    if _LEVEL.match(line):
        end = line.find("] ")
        if end >= 0:
            return line[end + 2:].strip()
    return line.strip()


def parse_executor_runner(text: str, *, warmup_iterations: int = 0) -> ParsedOutput:
    """Parse one ``executor_runner`` process's output (stdout and stderr) into a ParsedOutput.

    Emits ``NET load_time`` (ms) where the runner prints ``Model loaded in X ms``. When it prints
    ``Iteration i of N: X ms`` lines, each becomes a ``NET latency`` sample
    (``details["latency_samples"] = "per_iteration"``) and iteration 1, the only cold one (the
    runner has no warm-up), is also ``NET first_inference``; ``warmup_iterations`` leaves that
    many leading iterations out of the latency samples. Otherwise ``Model executed successfully
    N time(s) in X ms`` gives one ``NET latency`` sample equal to X / N and a ``ReportedSummary``
    with that mean (``"process_mean"``; the mean then includes the cold first execution).
    ``details`` also carry the model path, method, threads, planned-buffer bytes, outputs and,
    with bundled IO, the error statistics. Unreadable lines are skipped.
    """
    if warmup_iterations < 0:
        raise ValueError(f"warmup_iterations must be >= 0, got {warmup_iterations!r}")
    samples = _Samples()
    summaries: list[ReportedSummary] = []
    details: dict[str, Any] = {DetailKey.TOOL: TOOL}
    infos: list[str] = []
    iterations: list[tuple[int, float]] = []
    totals: list[tuple[int, float]] = []
    buffers: dict[int, int] = {}
    outputs: list[dict[str, Any]] = []

    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        level = _LEVEL.match(line)
        message = _message(line)
        if level and level.group(1) in "EF":
            infos.append(message)
        if match := _ITERATION.search(message):
            value = _float(match.group(3))
            if value is not None:
                iterations.append((int(match.group(1)), value))
        elif match := _TOTAL.search(message):
            total = _float(match.group(2))
            if total is not None:
                totals.append((int(match.group(1)), total))
        elif _DONE.search(message):
            details["executed"] = True
        elif match := _LOADED_IN.search(message):
            samples.add("NET", Metric.LOAD_TIME, _float(match.group(1)), "ms")
        elif match := _MODEL_FILE.search(message):
            details["model_path"] = match.group(1)
        elif match := _METHOD.search(message):
            details["method"] = match.group(1)
        elif message.endswith("Method loaded."):
            details["method_loaded"] = True
        elif match := _BUFFER.search(message):
            buffers[int(match.group(1))] = int(match.group(2))
        elif match := _THREADS.search(message):
            details[DetailKey.THREADS] = int(match.group(1))
        elif match := _OUTPUT.match(message):
            outputs.append(_output(int(match.group(1)), match.group(2)))
        elif match := _N_OUTPUTS.search(message):
            details["num_outputs"] = int(match.group(1))
        elif match := _ETDUMP.search(message):
            details["etdump_path"] = match.group(1)
        elif match := _ERROR_STAT.search(message):
            value = _float(match.group(2))
            if value is not None:
                details.setdefault("bundleio_error_stats", {})[match.group(1)] = value
        elif match := _TEST_RESULT.search(message):
            details["bundleio_result"] = match.group(1)

    _emit_latency(samples, summaries, details, iterations, totals, warmup_iterations)
    if buffers:
        details["planned_buffers_bytes"] = [buffers[k] for k in sorted(buffers)]
    if outputs:
        details["outputs"] = outputs
    return ParsedOutput(samples=tuple(samples.items), summaries=tuple(summaries),
                        details=details, infos=tuple(dict.fromkeys(infos)))


def _output(index: int, text: str) -> dict[str, Any]:
    """One printed output: its tensor sizes when it is a tensor, else the start of its text."""
    sizes = _SIZES.match(text.strip())
    if sizes:
        dims = [int(d) for d in sizes.group(1).replace(" ", "").split(",") if d]
        return {"index": index, "sizes": dims}
    return {"index": index, "value": text.strip()[:80]}


def _emit_latency(
    samples: _Samples,
    summaries: list[ReportedSummary],
    details: dict[str, Any],
    iterations: list[tuple[int, float]],
    totals: list[tuple[int, float]],
    warmup: int,
) -> None:
    if iterations:
        details[DetailKey.LATENCY_SAMPLES] = "per_iteration"
        first = [ms for i, ms in iterations if i == 1]
        samples.add("NET", Metric.FIRST_INFERENCE, first[0] if first else None, "ms")
        for number, ms in iterations:
            if number > warmup:
                samples.add("NET", Metric.LATENCY, ms, "ms")
    elif totals:
        details[DetailKey.LATENCY_SAMPLES] = "process_mean"
        for count, total in totals:
            if count > 0:
                samples.add("NET", Metric.LATENCY, total / count, "ms")
                summaries.append(ReportedSummary("NET", Metric.LATENCY, "ms", count,
                                                 {"mean": total / count}))
    if totals:
        details["num_executions"], details["total_execution_ms"] = totals[-1]
    elif iterations:
        details["num_executions"] = len(iterations)


def executor_runner_argv(
    binary: str,
    model_path: str,
    *,
    iterations: int | None = None,
    threads: int | None = None,
    extra: Iterable[str] = (),
) -> list[str]:
    """The command line running ``executor_runner`` (or ``xnn_executor_runner``) on a ``.pte``.

    Flags are the runner's gflags: ``--model_path`` and ``--num_executions`` (default 1);
    ``threads`` sets ``--cpu_threads``, which only builds with the threadpool (XNNPACK) define;
    ``extra`` is appended as is (e.g. ``--etdump_path=...``, ``--print_output=none`` on main).
    The runner has no warm-up flag: ask for more executions and pass ``warmup_iterations`` to
    :func:`parse_executor_runner`. Raises ``ValueError`` for a count below 1.
    """
    argv = [str(binary), f"--model_path={model_path}"]
    for flag, value in (("num_executions", iterations), ("cpu_threads", threads)):
        if value is None:
            continue
        argv.append(f"--{flag}={count_flag(flag, value, 1)}")
    argv.extend(str(arg) for arg in extra)
    return argv

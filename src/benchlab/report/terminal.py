"""The terminal report: a rich table of a sweep's results and a progress bar while it runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Self

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from benchlab.report.matrix import Cell, cells_of
from benchlab.report.matrix import cell_of as _cell_of
from benchlab.schema.diagnosis import coverage_warning
from benchlab.report.explain import diagnosis_lines
from benchlab.report.tables import device_flags, format_ms, results_table, warning_tag
from benchlab.schema.result import LATENCY_KEY, DetailKey, EnvKey, Result, StopReason

__all__ = [
    "SweepProgress",
    "cell_line",
    "download_bar",
    "format_ms",
    "make_console",
    "emulation_line",
    "noise_line",
    "result_notes",
    "results_table",
    "skipped_lines",
    "warning_tag",
]


def make_console(stderr: bool = False) -> Console:
    """A console for the CLI; piped output (CI logs, files) gets a wide fixed width, which
    would otherwise be cut to 80 columns and fold every table."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=max(probe.width, 180))

def skipped_lines(skipped: Sequence[tuple[str, str]], summary: Sequence[str] = ()) -> list[str]:
    """The lines under the tables on what was not run: each ``(label, reason)`` of
    ``skipped``, then the ``summary`` lines (the frameworks a report does not list one by one,
    ``Results.skipped_summary``). Plain text, for the caller to escape."""
    return [*(f"skipped {label}: {reason}" for label, reason in skipped), *summary]


def noise_line(results: Sequence[Result]) -> str | None:
    """One line on how noisy the run was: the cells with latency warnings, by kind, how wide
    the intervals are, and the cells whose interval rests on one process. None without a
    latency summary."""
    latencies = [(r, s) for r in results if (s := r.summaries.get(LATENCY_KEY)) is not None]
    if not latencies:
        return None
    kinds: dict[str, int] = {}
    warned = 0
    for _, summary in latencies:
        tags = dict.fromkeys(warning_tag(w) for w in summary.warnings)
        warned += bool(tags)
        for tag in tags:
            kinds[tag] = kinds.get(tag, 0) + 1
    widths = sorted(s.ci_rel_halfwidth * 100 for _, s in latencies
                    if s.ci_rel_halfwidth != float("inf"))
    parts = [f"{warned} of {len(latencies)} cells with a noise warning"
             + (" (" + ", ".join(f"{n} {tag}" for tag, n in sorted(
                 kinds.items(), key=lambda kv: (-kv[1], kv[0]))) + ")" if kinds else "")]
    if widths:
        widest = max(latencies, key=lambda rs: rs[1].ci_rel_halfwidth)[0].identity.label
        parts.append(f"intervals ±{widths[len(widths) // 2]:.1f}% typical, "
                     f"±{widths[-1]:.1f}% widest ({widest})")
    single = sum(1 for _, s in latencies if not s.predicts_next_run)
    if single:
        parts.append(f"{single} cell(s) ran one process, so their interval does not predict "
                     "the next run")
    return "Noise: " + "; ".join(parts)


def emulation_line(results: Sequence[Result]) -> str | None:
    """One line naming the devices whose CPU is emulated (QEMU), or None when there are none:
    their latencies say nothing about any hardware, only their accuracy and counts do."""
    devices = sorted({r.identity.device_label for r in results
                      if r.environment.get(EnvKey.EMULATED)})
    if not devices:
        return None
    cells = sum(1 for r in results if r.environment.get(EnvKey.EMULATED))
    return (f"Emulated: {cells} of {len(results)} cells ran on an emulated CPU "
            f"({', '.join(devices)}): latency under emulation says nothing about the hardware; "
            "the accuracy it measured is the emulated core's own")


def result_notes(results: Sequence[Result], *, warnings: bool = True) -> list[str]:
    """Full-text footnotes, one per line: each failed job's error, each latency warning (with
    ``warnings``; :func:`noise_line` sums them up in one line), each metric whose unit its
    column cannot show."""
    notes: list[str] = []
    cells = cells_of(results)
    for result, cell in zip(results, cells):
        label = result.identity.label
        if result.error:
            notes.append(f"{label}: {result.status.value}: {result.error}")
        latency = result.summaries.get(LATENCY_KEY)
        for warning in latency.warnings if latency and warnings else ():
            notes.append(f"{label}: {warning}")
        notes += [f"{label}: {note}" for note in cell.unit_notes]
        stop = result.stop_reason
        if latency is not None and stop in (StopReason.TARGET_CI_REACHED,
                                            StopReason.TIME_BUDGET_EXHAUSTED):
            width = latency.ci_rel_halfwidth * 100
            processes = result.repetitions
            what = "target CI reached" if stop == StopReason.TARGET_CI_REACHED else (
                "time budget exhausted before the target CI")
            notes.append(f"{label}: {what}: median ±{width:.2f}% after {processes} processes, "
                         f"{latency.count} samples")
        for flag in device_flags(result):
            notes.append(f"{label}: device {flag['flag'].replace('_', ' ')}: {flag['detail']}")
        notes += [f"{label}: {line}" for line in diagnosis_lines(cell)]
        energy = result.energy
        if energy is not None:
            if energy.get("status") == "ok":
                joules = energy.get("joules_per_inference") or 0.0
                notes.append(f"{label}: energy {joules * 1e3:.3g} mJ/inference "
                             f"({energy.get('meter')}, window: {energy.get('window')})"
                             + (f"; {energy['warning']}" if energy.get("warning") else ""))
            else:
                notes.append(f"{label}: energy unavailable: {energy.get('reason')}")
    notes += _random_calibration_notes(results, cells)
    return notes


def _random_calibration_notes(results: Sequence[Result], cells: Sequence[Cell]) -> list[str]:
    """One line per user's model whose int8 cells calibrated on seeded random inputs: their
    error is the recipe's on noise, not on the data the model will see."""
    models = dict.fromkeys(
        r.identity.model_name for r, cell in zip(results, cells)
        if r.model_info.get("given") and r.model_info.get("inputs") == "random"
        and cell.precision == "int8")
    return [f"{model}: int8 calibrated on seeded random inputs says little about accuracy on "
            "real data: give your own with --inputs data.npz" for model in models]


def download_bar(console: Console | None = None) -> Callable[[str, int], Any]:
    """A :data:`benchlab.spec.artifacts.DownloadProgress` that draws a rich bar per download (on
    stderr unless ``console`` says otherwise), removed when the download ends."""

    @contextmanager
    def show(filename: str, total: int) -> Iterator[Callable[[int], None]]:
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                   TransferSpeedColumn(), TimeRemainingColumn())
        target = console if console is not None else Console(stderr=True)
        with Progress(*columns, console=target, transient=True) as bar:
            task = bar.add_task(escape(filename), total=total)
            yield lambda n: bar.advance(task, n)

    return show


def cell_line(result: Result) -> str:
    """One finished job as a line, printed as soon as it is measured (the table comes at the
    end): ``mobilenet_v2 @ onnxruntime: p50 5.21 ms ±0.8%, n=90``."""
    cell = _cell_of(result)
    parts = [escape(result.identity.label) + ":"]
    if cell.p50 is not None:
        parts.append(f"p50 {format_ms(cell.p50)} ms")
        if cell.ci_rel is not None:
            parts.append(f"±{cell.ci_rel * 100:.1f}%,")
        parts.append(f"n={len(cell.latencies)}")
    else:
        parts.append("measured")
    if cell.sqnr is not None:
        parts.append(f"SQNR {cell.sqnr:.1f} dB")
    warning = coverage_warning(cell.delegation) if cell.delegation else None
    if warning:
        parts.append(f"[yellow]⚠ {escape(warning)}[/]")
    raced = result.details.get(DetailKey.RACE)
    if raced:  # last: its words end with the ratio, which must not run into SQNR
        parts.append(f"· {result.repetitions} processes, {escape(str(raced))}")
    return " ".join(parts)


class SweepProgress:
    """A rich progress bar over a sweep's jobs; use as a context manager and a callback.

    It redraws only when a process starts or a job ends, never while a runner measures: a
    redrawing thread in the parent is a neighbour on the machine, and a neighbour busy a tenth
    of the time took the spread of MobileNetV2's processes on two-thread ONNX Runtime from 2.5%
    to 14.8% on a 2-vCPU VM (docs/statistics.md, "Where the spread between processes comes
    from").
    """

    def __init__(self, total: int, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            auto_refresh=False,
        )
        self._task = self._progress.add_task("sweep", total=total)
        self.failed = 0

    def __enter__(self) -> Self:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def expect(self, total: int) -> None:
        """Set how many jobs the sweep has, as far as is known (stages add jobs as they come)."""
        self._progress.update(self._task, total=total, refresh=True)

    def __call__(self, job: Any, result: Result | None) -> None:
        """Show the job starting, or advance when its result arrives."""
        if result is None:
            self._progress.update(self._task, description=escape(job.identity.label),
                                  refresh=True)
            return
        if not result.ok:
            self.failed += 1
            self._progress.console.print(
                f"[red]✗[/] {escape(job.identity.label)}: {result.status.value}: "
                f"{escape(result.error or '')}"
            )
        else:
            self._progress.console.print(f"[green]✓[/] {cell_line(result)}", highlight=False)
        self._progress.advance(self._task)
        self._progress.refresh()

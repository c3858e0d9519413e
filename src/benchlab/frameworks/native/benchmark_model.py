"""Read the output of LiteRT / TensorFlow Lite's ``benchmark_model`` and build its command line.

The format was read from the tool's source in google-ai-edge/LiteRT (commit 7d88950) and
tensorflow/tensorflow ``tensorflow/lite/tools/benchmark`` (commit 08df8c4, TF 2.1x), which print
the same text:

* ``tflite/tools/benchmark/benchmark_model.cc``: ``Initialized session in X ms.``, one
  ``Running benchmark for at least ...`` line and one ``count=... avg=... std=...`` line for the
  warm-up phase, then the same pair for the regular runs, then ``Inference timings in us: ...``
  and the memory lines (``BenchmarkLoggingListener::OnBenchmarkEnd``);
* ``tsl/util/stats_calculator.h`` (``Stat::OutputToStream``; ``count=N curr=X`` when every value
  was the same) and ``StatWithPercentiles``, which adds ``p5= median= p95=`` in newer releases;
* ``tsl/util/stats_calculator.cc`` and ``tflite/profiling/profile_summary_formatter.cc``: the
  tab-separated ``--enable_op_profiling=true`` tables (``Run Order``, ``Top by Computation Time``,
  ``Summary by node type``), also in their CSV form and in the older layout with a ``[start]``
  column and bracketed names shown in ``tensorflow/lite/tools/benchmark/README.md``;
* ``tensorflow/lite/tools/logging.h``: every log line starts with ``INFO:``/``WARN:``/``ERROR:``.

Times are printed in microseconds (``Initialized session`` in ms, the op tables in ms); memory in
"MB" that are really MiB (kilobytes / 1024), except the model file size, which is bytes / 1e6.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from benchlab.schema.result import DetailKey, Metric
from benchlab.protocol.lines import ParsedOutput, ReportedSummary
from benchlab.frameworks.native.common import NUMBER
from benchlab.frameworks.native.common import SampleList as _Samples
from benchlab.frameworks.native.common import count_flag
from benchlab.frameworks.native.common import finite_float as _float

__all__ = ["TOOL", "benchmark_model_argv", "parse_benchmark_model"]

TOOL = "benchmark_model"
"""The name recorded in ``details["tool"]``."""

# logcat (threadtime or brief) and the tool's own "INFO: " severity prefix.
_PREFIX = re.compile(
    r"^\s*(?:\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s+\d+\s+[VDIWEF]\s+[^:]*:\s?"
    r"|[VDIWEF]/[^(:]*\(\s*\d+\):\s?)?"
    r"(?:(?P<level>INFO|WARN|WARNING|ERROR|FATAL|VERBOSE|DEBUG):\s?)?"
)
_INIT = re.compile(rf"Initialized session in ({NUMBER})\s*ms", re.I)
_RUN_START = re.compile(rf"Running benchmark for at least (\d+) iterations and at least ({NUMBER})"
                        rf" seconds(?: but terminate if exceeding ({NUMBER}) seconds)?", re.I)
_KEY_VALUE = re.compile(rf"(\w+)=({NUMBER})", re.I)
_TIMINGS = re.compile(rf"Inference timings in us: Init: ({NUMBER}), First inference: ({NUMBER}), "
                      rf"Warmup \(avg\): ({NUMBER}), Inference \(avg\): ({NUMBER})", re.I)
_OLD_TIMINGS = re.compile(  # older releases (the README example)
    rf"Average inference timings in us: Warmup: ({NUMBER}), Init: ({NUMBER}), "
    rf"Inference: ({NUMBER})")
_MEMORY = re.compile(rf"Memory footprint delta from the start of the tool \(MB\): "
                     rf"init=({NUMBER}) overall=({NUMBER})", re.I)
_PEAK = re.compile(rf"Overall peak memory footprint \(MB\) via periodic monitoring: ({NUMBER})",
                   re.I)
_MODEL_SIZE = re.compile(rf"The input model file size \(MB\): ({NUMBER})", re.I)
_RSS = re.compile(r"^- VmRSS\s*: (\d+) MB")
_PARAM = re.compile(r"^([^\[\]=:]{2,80}): \[(.*)\]$")
_CREATED = re.compile(r"Created TensorFlow Lite (?:(.+?) )?delegate for (\w+)", re.I)
_APPLIED = re.compile(r"Explicitly applied (.+?) delegate, and the model graph will be (\w+)", re.I)
_REPLACED = re.compile(
    r"Replacing (\d+) out of (\d+) node\(s\) with delegate \(([^)]*)\) node, yielding (\d+)", re.I
)
_NODES = re.compile(r"Number of nodes executed: (\d+)")
_PROFILE_TAIL = re.compile(
    r"^(?:Number of nodes executed|Timings \(microseconds\)|Memory \(bytes\)|\d+ nodes observed)"
)
_TITLE = re.compile(r"^=+ (.+?) =+$")
_INIT_PROFILE = "Profiling Info for Benchmark Initialization:"
_RUN_PROFILE = "Operator-wise Profiling Info for Regular Benchmark Runs:"
_MB = 1e6 / 2**20  # the tool's model size "MB" are 10^6 bytes; benchlab reports MiB


def _stat(content: str) -> dict[str, float] | None:
    """The ``count=... first=... avg=...`` line as numbers (µs), completed when all were equal."""
    values = {k.lower(): _float(v) for k, v in _KEY_VALUE.findall(content)}
    stats = {k: v for k, v in values.items() if v is not None}
    if "count" not in stats:
        return None
    if "curr" in stats and "avg" not in stats and stats["count"] > 0:
        # "count=N curr=X(all same)": every run took X.
        for key in ("first", "min", "max", "avg", "p5", "median", "p95"):
            stats.setdefault(key, stats["curr"])
        stats.setdefault("std", 0.0)
    return stats


_STATISTICS = {"avg": "mean", "min": "min", "max": "max", "std": "std",
               "p5": "p5", "median": "p50", "p95": "p95"}


def _cells(line: str, csv: bool, width: int = 0) -> list[str]:
    """A table line's cells: tab-separated (the default layout) or ``, ``-separated (CSV, whose
    names have their commas turned into tabs by the tool)."""
    if not csv:
        cells = [c.strip() for c in line.split("\t")]
        return cells[1:] if cells and not cells[0] else cells
    return [c.strip() for c in line.split(", ", (width - 1) if width else -1)]


def _column(name: str) -> str:
    name = name.strip().strip("[]").strip().lower().replace("_", " ")
    return re.sub(r"\s+", " ", name)


def _row(header: Sequence[str], line: str, csv: bool) -> dict[str, Any] | None:
    cells = _cells(line, csv, len(header))
    if len(cells) < len(header) - 1:  # the name may be missing from a truncated line
        return None
    raw = dict(zip(header, cells, strict=False))  # a missing last name cell is allowed
    node_type = raw.get("node type", "")
    avg = _float(raw.get("avg ms", "").rstrip("%")) if raw.get("avg ms") else None
    if not node_type or avg is None:
        return None
    row: dict[str, Any] = {"node_type": node_type, "avg_ms": avg}
    for column, key in (("first", "first_ms"), ("%", "percent"), ("avg %", "percent"),
                        ("cdf%", "cdf_percent"), ("cdf %", "cdf_percent"), ("mem kb", "mem_kb")):
        if column in raw:
            value = _float(raw[column].rstrip("%"))
            if value is not None:
                row[key] = value
    for column, key in (("times called", "times_called"), ("count", "count")):
        if raw.get(column, "").isdigit():
            row[key] = int(raw[column])
    if "name" in header:
        name = raw.get("name", "")
        row["name"] = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    return row


class _Profile:
    """The op-profiling section of one benchmark: tables of the primary graph only.

    Subgraphs (called from WHILE/IF nodes) and "Delegate internal" ops are already counted in
    the primary graph's nodes that run them, so they are left out to avoid counting them twice.
    """

    def __init__(self) -> None:
        self.primary = True
        self.table: str | None = None
        self.header: list[str] | None = None
        self.csv = False
        self.tables: dict[str, list[dict[str, Any]]] = {}

    def feed(self, content: str, raw: str) -> None:
        if content.startswith(("Primary graph", "Subgraph (index", "Delegate internal")):
            self.primary = content.startswith("Primary graph")
            self.table = None
            return
        title = _TITLE.match(content)
        if title:
            self.table, self.header = title.group(1).strip(), None
            return
        if self.table is None or not self.primary:
            return
        if not content:
            if self.header is not None:
                self.table = None  # a blank line ends a table
            return
        if self.header is None:
            if "node type" in content.lower():
                self.csv = "\t" not in raw
                self.header = [_column(c) for c in _cells(raw.strip("\r\n"), self.csv)]
            return
        row = _row(self.header, raw.strip("\r\n"), self.csv)
        if row is not None:
            self.tables.setdefault(self.table, []).append(row)


def parse_benchmark_model(text: str) -> ParsedOutput:
    """Parse one ``benchmark_model`` process's stdout/stderr (or logcat) into a ParsedOutput.

    Emits, per benchmark in the output (normally one): ``NET load_time`` (ms, "Initialized
    session"), ``NET first_inference`` (ms), one ``NET latency`` sample equal to the regular runs'
    mean (ms; ``details["latency_samples"] = "process_mean"``) with a ``ReportedSummary`` of their
    count/mean/min/max/std (and p5/p50/p95 where printed), ``NET memory_load`` (the init footprint
    delta, MiB), ``NET memory_peak`` (MiB, with ``--report_peak_memory_footprint``) and
    ``NET model_size`` (MiB). With ``--enable_op_profiling=true``, one ``<node type> latency``
    sample per node type from "Summary by node type" (avg ms per run), and the run-order table
    as ``details["op_table"]``. Lines it cannot read are skipped.
    """
    samples = _Samples()
    summaries: list[ReportedSummary] = []
    details: dict[str, Any] = {DetailKey.TOOL: TOOL, DetailKey.LATENCY_SAMPLES: "process_mean"}
    infos: list[str] = []
    params: dict[str, str] = {}
    regular: list[dict[str, float]] = []
    timings: list[tuple[float | None, ...]] = []
    inits: list[float | None] = []
    starts = stats_seen = 0
    profile: _Profile | None = None
    profiles: list[_Profile] = []

    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        prefix = _PREFIX.match(line)
        level = prefix.group("level") if prefix else None
        content = line[prefix.end():].strip() if prefix else line.strip()
        if _RUN_PROFILE in content or _INIT_PROFILE in content:
            # Initialization events (ModifyGraphWithDelegate, AllocateTensors) are not ops: their
            # tables are read into a profile that is then dropped.
            profile = _Profile()
            if _RUN_PROFILE in content:
                profiles.append(profile)
            continue
        if profile is None and not level and _TITLE.match(content):
            profile = _Profile()  # older releases print the tables without a heading line
            profiles.append(profile)
        if profile is not None and not level:
            # The tables are one multi-line log message: only their first line has "INFO: ".
            profile.feed(content, line[prefix.end():] if prefix else line)
            if not content or _TITLE.match(content) or profile.table:
                continue
            if _PROFILE_TAIL.match(content):
                nodes = _NODES.match(content)
                if nodes and profile in profiles:
                    details["nodes_executed"] = int(nodes.group(1))
                continue
        elif level:
            profile = None
        if level in ("ERROR", "FATAL"):
            infos.append(content)
        if content.startswith("count="):
            stats = _stat(content)
            if stats is None:
                infos.append(f"unparsed statistics line: {content[:120]}")
                continue
            stats_seen += 1
            phase = starts if starts else stats_seen
            if phase % 2 == 1:
                details["warmup"] = {"count": int(stats["count"])} | {
                    k: stats[s] / 1000.0 for k, s in (("mean_ms", "avg"), ("first_ms", "first"))
                    if s in stats}
            else:
                regular.append(stats)
            continue
        if match := _RUN_START.search(content):
            starts += 1
            if starts % 2 == 0:
                details["min_runs"] = int(match.group(1))
                details["min_secs"] = _float(match.group(2))
                if match.group(3):
                    details["max_secs"] = _float(match.group(3))
        elif match := _INIT.search(content):
            inits.append(_float(match.group(1)))
        elif match := _TIMINGS.search(content):
            timings.append(tuple(_float(g) for g in match.groups()))
        elif match := _OLD_TIMINGS.search(content):
            warm, init, inference = (_float(g) for g in match.groups())
            timings.append((init, None, warm, inference))
        else:
            _read_fact(content, samples, details, params)

    _emit_timings(samples, summaries, details, inits, timings, regular)
    _emit_params(details, params)
    _emit_profiles(samples, details, profiles)
    return ParsedOutput(samples=tuple(samples.items), summaries=tuple(summaries),
                        details=details, infos=tuple(dict.fromkeys(infos)))


def _read_fact(content: str, samples: _Samples, details: dict[str, Any],
               params: dict[str, str]) -> None:
    """One line's memory, size, delegate or parameter fact, where it states one."""
    if match := _MEMORY.search(content):
        samples.add("NET", Metric.MEMORY_LOAD, _float(match.group(1)), "MiB")
        overall = _float(match.group(2))
        if overall is not None:
            details["memory_overall_mib"] = overall
    elif match := _PEAK.search(content):
        peak = _float(match.group(1))
        samples.add("NET", Metric.MEMORY_PEAK, peak if peak and peak > 0 else None, "MiB")
    elif match := _MODEL_SIZE.search(content):
        size = _float(match.group(1))
        samples.add("NET", Metric.MODEL_SIZE, None if size is None else size * _MB, "MiB")
    elif match := _RSS.match(content):
        details["vm_rss_mib"] = int(match.group(1))
    elif match := _CREATED.search(content):
        name = (match.group(1) or match.group(2)).strip()
        details.setdefault("delegates_created", []).append(name)
    elif match := _APPLIED.search(content):
        details.setdefault("delegates_applied", []).append(
            {"delegate": match.group(1), "coverage": match.group(2)})
    elif match := _REPLACED.search(content):
        details.setdefault("delegate_partitions", []).append({
            "delegate": match.group(3), "replaced_nodes": int(match.group(1)),
            "total_nodes": int(match.group(2)), "partitions": int(match.group(4))})
    elif match := _PARAM.match(content):
        params[match.group(1).strip()] = match.group(2)


def _emit_timings(
    samples: _Samples,
    summaries: list[ReportedSummary],
    details: dict[str, Any],
    inits: list[float | None],
    timings: list[tuple[float | None, ...]],
    regular: list[dict[str, float]],
) -> None:
    for value in inits:
        samples.add("NET", Metric.LOAD_TIME, value, "ms")
    if not inits:
        for init, *_ in timings:
            samples.add("NET", Metric.LOAD_TIME, None if init is None else init / 1000.0, "ms")
    for _, first, warm, _ in timings:
        samples.add("NET", Metric.FIRST_INFERENCE, None if first is None else first / 1000.0, "ms")
        if warm is not None:
            details.setdefault("warmup", {}).setdefault("mean_ms", warm / 1000.0)
    if not timings and "first_ms" in details.get("warmup", {}):
        samples.add("NET", Metric.FIRST_INFERENCE, details["warmup"]["first_ms"], "ms")
    means = [s["avg"] / 1000.0 for s in regular if "avg" in s and s["count"] > 0]
    if not means:
        means = [t[3] / 1000.0 for t in timings if t[3] is not None]
    for mean in means:
        samples.add("NET", Metric.LATENCY, mean, "ms")
    for stats in regular:
        values = {_STATISTICS[k]: stats[k] / 1000.0 for k in _STATISTICS if k in stats}
        if values and stats["count"] >= 1:
            summaries.append(ReportedSummary("NET", Metric.LATENCY, "ms", int(stats["count"]), values))
    if regular:
        details["num_runs"] = int(regular[-1]["count"])


def _emit_params(details: dict[str, Any], params: dict[str, str]) -> None:
    details.update({"params": params} if params else {})
    for key in ("Num threads", "#threads used for CPU inference"):
        if params.get(key, "").lstrip("-").isdigit():
            details[DetailKey.THREADS] = int(params[key])
    details.update({"graph": params["Graph"]} if params.get("Graph") else {})


def _emit_profiles(samples: _Samples, details: dict[str, Any], profiles: list[_Profile]) -> None:
    for profile in profiles:
        run_order = profile.tables.get("Run Order", [])
        by_type = profile.tables.get("Summary by node type")
        if by_type:
            per_type = {row["node_type"]: row["avg_ms"] for row in by_type}
            details["op_type_table"] = by_type
        else:  # truncated before the summary: add up the nodes of each type
            per_type = {}
            for row in run_order:
                per_type[row["node_type"]] = per_type.get(row["node_type"], 0.0) + row["avg_ms"]
        for node_type, avg_ms in per_type.items():
            samples.add(node_type, "latency", avg_ms, "ms")
        if run_order:
            details["op_table"] = run_order


def benchmark_model_argv(
    binary: str,
    model_path: str,
    *,
    threads: int | None = None,
    warmup: int | None = None,
    iterations: int | None = None,
    min_secs: float | None = None,
    profile_ops: bool = False,
    extra: Iterable[str] = (),
) -> list[str]:
    """The command line running ``benchmark_model`` on ``model_path``.

    Flags are the tool's own (``benchmark_model.cc``/``benchmark_tflite_model.cc``):
    ``--graph``, ``--num_threads``, ``--warmup_runs``, ``--num_runs``, ``--min_secs`` and
    ``--enable_op_profiling=true``; ``extra`` is appended as is (e.g. ``--use_gpu=true``,
    ``--report_peak_memory_footprint=true``). Note the counts are minimums: the tool keeps
    running until ``--min_secs`` (default 1 s; warm-up: ``--warmup_min_secs``, 0.5 s) has also
    passed, and stops at ``--max_secs`` (150 s). Pass ``min_secs=0`` for exactly ``iterations``.
    Raises ``ValueError`` for negative counts or durations.
    """
    argv = [str(binary), f"--graph={model_path}"]
    # num_threads=-1 is the tool's own default ("let the runtime decide"), so it is accepted.
    for flag, value, lowest in (("num_threads", threads, -1), ("warmup_runs", warmup, 0),
                                ("num_runs", iterations, 0)):
        if value is None:
            continue
        argv.append(f"--{flag}={count_flag(flag, value, lowest)}")
    if min_secs is not None:
        if not math.isfinite(min_secs) or min_secs < 0:
            raise ValueError(f"min_secs must be a non-negative number, got {min_secs!r}")
        argv.append(f"--min_secs={float(min_secs):g}")
    if profile_ops:
        argv.append("--enable_op_profiling=true")
    argv.extend(str(arg) for arg in extra)
    return argv

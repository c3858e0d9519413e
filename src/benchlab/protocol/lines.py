"""The metric line protocol: how a measuring program tells benchlab what it measured.

A program prints lines; benchlab keeps the ones that carry a known prefix and ignores the rest,
so ordinary logging can share stdout (or logcat) with measurements. The native form is::

    BENCHLAB_METRIC {"type":"NET","metric":"latency","unit":"ms","value":12.5}

followed by optional extra fields. Other payloads behind the same prefix:

* a pre-computed summary, for binaries that only print aggregates:
  ``{"type","metric","unit","num_runs","summary":{"p50":...,"mean":...}}``;
* free text: ``{"info": "text"}``, or ``{"type":..., "info_string": "text"}``;
* job-level facts that are not samples: ``{"detail": {"runtime_version": "1.17"}}``.

FAI-PEP's ``PyTorchObserver {json}`` and ``Caffe2Observer {json}`` lines are read as they are,
including their ``custom_output``/``table_name`` form and the legacy nested
``{<type>: {<metric>: {"value":..., "unit":...}}}`` form. Unlike FAI-PEP, every sample is kept:
its pytorch/caffe2 frameworks counted metric *lines* as runs and kept only the last ``iter`` of
them, so per-operator lines silently pushed whole-network samples out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from benchlab.schema.result import Sample, metric_key

__all__ = [
    "FAI_PEP_PREFIXES",
    "KNOWN_PREFIXES",
    "PREFIX",
    "ParsedOutput",
    "ReportedSummary",
    "format_detail",
    "format_info",
    "format_metric",
    "format_summary",
    "parse_output",
    "write_measurement",
]

PREFIX = "BENCHLAB_METRIC "
"""The prefix of benchlab's native metric lines (note the trailing space)."""

FAI_PEP_PREFIXES = ("PyTorchObserver ", "Caffe2Observer ")
"""Prefixes of FAI-PEP's observer lines, accepted unchanged."""

KNOWN_PREFIXES = (PREFIX, *FAI_PEP_PREFIXES)
"""Every prefix :func:`parse_output` recognises."""

_MAX_RAW = 200
_RESERVED = frozenset({"type", "metric", "unit", "value", "summary", "num_runs"})
_MEASURED = frozenset({"value", "summary", "info_string"})


@dataclass(frozen=True, slots=True)
class ReportedSummary:
    """Aggregates a program printed instead of raw samples (FAI-PEP's ``summary`` form).

    ``values`` maps the program's own statistic names (``p50``, ``mean``, ``MAD``...) to
    numbers; they cannot be recomputed, so they are kept apart from real samples.
    """

    type: str
    metric: str
    unit: str
    num_runs: int
    values: Mapping[str, float]

    @property
    def key(self) -> str:
        """The metric key, e.g. ``NET latency``."""
        return metric_key(self.type, self.metric)


@dataclass(frozen=True, slots=True)
class ParsedOutput:
    """What :func:`parse_output` found in a program's output.

    ``samples`` keep their order of appearance; each has ``repetition=0`` and ``index`` counting
    from 0 per ``type``/``metric``. ``malformed`` holds lines that carried a known prefix but
    could not be read (truncated to 200 characters). ``metric_lines`` counts the prefixed lines
    that were read successfully, of any form, so ``metric_lines + len(malformed)`` is the number
    of prefixed lines seen.
    """

    samples: tuple[Sample, ...] = ()
    summaries: tuple[ReportedSummary, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    infos: tuple[str, ...] = ()
    malformed: tuple[str, ...] = ()
    metric_lines: int = 0


def _dumps(obj: Mapping[str, Any]) -> str:
    # allow_nan=False: NaN/Infinity are not JSON and the parser rejects them anyway.
    return json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str)


def _finite(value: float, what: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return number


def format_metric(type_: str, metric: str, value: float, unit: str, **extra: Any) -> str:
    """One native metric line (no newline): ``BENCHLAB_METRIC {"type":...,"value":...}``.

    ``extra`` fields are added to the JSON object; they may not reuse the protocol's own keys.
    Raises ``ValueError`` for a non-finite value or a clashing extra key.
    """
    clash = _RESERVED.intersection(extra)
    if clash:
        raise ValueError(f"extra fields clash with protocol keys: {sorted(clash)}")
    payload: dict[str, Any] = {
        "type": type_,
        "metric": metric,
        "unit": unit,
        "value": _finite(value, "value"),
    }
    payload.update(extra)
    return PREFIX + _dumps(payload)


def format_summary(
    type_: str, metric: str, unit: str, num_runs: int, summary: Mapping[str, float]
) -> str:
    """One native summary line, for programs that only know aggregates of their runs."""
    values = {name: _finite(v, f"summary[{name!r}]") for name, v in summary.items()}
    payload = {
        "type": type_,
        "metric": metric,
        "unit": unit,
        "num_runs": int(num_runs),
        "summary": values,
    }
    return PREFIX + _dumps(payload)


def format_detail(**facts: Any) -> str:
    """One native detail line carrying job-level facts (runtime version, stop reason...).

    Values that JSON cannot hold are written as their ``str()``; a NaN or infinite float
    raises ``ValueError``.
    """
    return PREFIX + _dumps({"detail": facts})


def write_measurement(out: TextIO, lines: Iterable[str], details: Mapping[str, Any]) -> None:
    """A measured process's metric lines and, last, its one detail line, written at once and
    flushed: the runner's loop, generation, scenario and A/B pair all end this way."""
    out.write("\n".join([*lines, format_detail(**details)]) + "\n")
    out.flush()


def format_info(text: str) -> str:
    """One native info line carrying free text; newlines are escaped, so it stays one line."""
    return PREFIX + _dumps({"info": str(text)})


class _Malformed(Exception):
    """A prefixed line whose payload cannot be read."""


def _truncate(line: str) -> str:
    return line if len(line) <= _MAX_RAW else line[: _MAX_RAW - 3] + "..."


def _find_prefix(line: str, identifier: str | None) -> int | None:
    """Where the payload starts, or None when the line is not a metric line."""
    if identifier is not None and identifier not in line:
        return None
    best: int | None = None
    for prefix in KNOWN_PREFIXES:
        at = line.find(prefix)
        if at >= 0 and (best is None or at < best):
            best = at + len(prefix)
    if best is None and identifier is not None:
        # FAI-PEP's identifier may itself be the prefix of a custom observer line.
        best = line.find(identifier) + len(identifier)
    return best


def _decode(payload: str) -> Any:
    """The JSON object embedded in ``payload``, tolerating text around it."""
    start = payload.find("{")
    if start < 0:
        raise _Malformed("no JSON object after the prefix")
    try:
        obj, _ = json.JSONDecoder().raw_decode(payload, start)
        return obj
    except json.JSONDecodeError:
        pass
    # FAI-PEP took everything between the first '{' and the last '}'; try that too.
    end = payload.rfind("}")
    try:
        return json.loads(payload[start : end + 1])
    except json.JSONDecodeError as exc:
        raise _Malformed(f"bad JSON: {exc}") from None


def _number(raw: Any, what: str) -> float:
    # bool is an int subclass; "value": true is a bug in the printer, not 1.0.
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise _Malformed(f"{what} is not a number")
    try:
        number = float(raw)
    except ValueError:
        raise _Malformed(f"{what} is not a number") from None
    if not math.isfinite(number):
        raise _Malformed(f"{what} is not finite")
    return number


def _text(obj: Mapping[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or (not value and not allow_empty):
        raise _Malformed(f"missing or non-text {key!r}")
    return value


def _count(raw: Any) -> int:
    number = _number(raw, "num_runs")
    if number < 0 or number != int(number):
        raise _Malformed("num_runs is not a count")
    return int(number)


# An event is one thing a line contributed, applied only once the whole line was read, so a
# malformed line never leaves half of itself behind.
_Event = tuple[str, Any]


def _flat_events(obj: Mapping[str, Any]) -> list[_Event]:
    type_ = _text(obj, "type")
    events: list[_Event] = []
    if "info_string" in obj:
        info = obj["info_string"]
        if not isinstance(info, str):
            raise _Malformed("info_string is not text")
        metric = obj.get("metric")
        label = metric_key(type_, metric) if isinstance(metric, str) and metric else type_
        events.append(("info", f"{label}: {info}"))
        if "value" not in obj and "summary" not in obj:
            return events
    metric = _text(obj, "metric")
    unit = _text(obj, "unit", allow_empty=True)
    if "summary" in obj:
        raw = obj["summary"]
        if not isinstance(raw, Mapping) or not raw:
            raise _Malformed("summary is not a non-empty object")
        values = {str(k): _number(v, f"summary[{k!r}]") for k, v in raw.items()}
        if "num_runs" not in obj:
            raise _Malformed("summary without num_runs")
        num_runs = _count(obj["num_runs"])
        events.append(("summary", ReportedSummary(type_, metric, unit, num_runs, values)))
    if "value" in obj:
        events.append(("sample", (type_, metric, unit, _number(obj["value"], "value"))))
    if not events:
        raise _Malformed("no value, summary or info_string")
    return events


def _nested_events(obj: Mapping[str, Any]) -> list[_Event]:
    """FAI-PEP's legacy ``{<type>: {<metric>: {"value":..., "unit":...}}}`` form."""
    events: list[_Event] = []
    for type_, metrics in obj.items():
        if not isinstance(metrics, Mapping):
            continue  # FAI-PEP skipped non-object members too
        for metric, entry in metrics.items():
            if not isinstance(entry, Mapping):
                raise _Malformed(f"{type_}.{metric} is not an object")
            if "info_string" in entry:
                info = entry["info_string"]
                if not isinstance(info, str):
                    raise _Malformed("info_string is not text")
                events.append(("info", f"{metric_key(type_, metric)}: {info}"))
                continue
            if "value" not in entry:
                raise _Malformed(f"{type_}.{metric} has no value")
            unit = entry.get("unit", "")
            if not isinstance(unit, str):
                raise _Malformed(f"{type_}.{metric} unit is not text")
            value = _number(entry["value"], f"{type_}.{metric} value")
            events.append(("sample", (type_, metric, unit, value)))
    if not events:
        raise _Malformed("no recognised fields")
    return events


def _events(obj: Any) -> list[_Event]:
    if not isinstance(obj, dict):
        raise _Malformed("payload is not a JSON object")
    if "custom_output" in obj:
        table = obj.get("table_name", "Custom Output")
        return [("custom", (str(table), obj["custom_output"]))]
    if "detail" in obj:
        facts = obj["detail"]
        if not isinstance(facts, dict):
            raise _Malformed("detail is not an object")
        return [("detail", facts)]
    if "info" in obj and not _MEASURED.intersection(obj):
        text = obj["info"]
        if not isinstance(text, str):
            raise _Malformed("info is not text")
        label = obj.get("type")
        return [("info", f"{label}: {text}" if isinstance(label, str) and label else text)]
    if "type" in obj:
        return _flat_events(obj)
    return _nested_events(obj)


def _lines(text_or_lines: str | Iterable[str]) -> Iterable[str]:
    # split on '\n' only: str.splitlines also breaks on form feeds and U+2028, which may sit
    # inside a JSON string some program printed unescaped.
    source = text_or_lines.split("\n") if isinstance(text_or_lines, str) else text_or_lines
    for line in source:
        yield line.rstrip("\r\n")


def parse_output(
    text_or_lines: str | Iterable[str], *, identifier: str | None = None
) -> ParsedOutput:
    """Read every metric line in a program's output.

    Lines may carry the prefix anywhere (``I/tag( 123): PyTorchObserver {...}`` from logcat
    works) and text around the JSON object is ignored. With ``identifier``, as FAI-PEP's
    ``json_with_identifier`` converter does, only lines containing it are considered; when such
    a line has no known prefix, the JSON after the identifier is read, so a custom observer
    name works as a prefix. Lines without a prefix are ignored, never reported as malformed.
    """
    samples: list[Sample] = []
    summaries: list[ReportedSummary] = []
    details: dict[str, Any] = {}
    infos: dict[str, None] = {}  # an ordered set: per-op info_strings repeat every iteration
    malformed: list[str] = []
    counters: dict[tuple[str, str], int] = {}
    good = 0
    for line in _lines(text_or_lines):
        start = _find_prefix(line, identifier)
        if start is None:
            continue
        try:
            events = _events(_decode(line[start:]))
        except _Malformed:
            malformed.append(_truncate(line))
            continue
        good += 1
        for kind, payload in events:
            if kind == "sample":
                type_, metric, unit, value = payload
                index = counters.get((type_, metric), 0)
                counters[(type_, metric)] = index + 1
                samples.append(Sample(metric, value, unit, type_, 0, index))
            elif kind == "summary":
                summaries.append(payload)
            elif kind == "info":
                infos.setdefault(payload, None)
            elif kind == "detail":
                details.update(payload)
            else:
                table, output = payload
                details.setdefault("custom_output", {}).setdefault(table, []).append(output)
    return ParsedOutput(
        samples=tuple(samples),
        summaries=tuple(summaries),
        details=details,
        infos=tuple(infos),
        malformed=tuple(malformed),
        metric_lines=good,
    )

"""Read the stats line of ExecuTorch's LLM runners (``llama_main`` and the other
``extension/llm/runner`` users).

The format was read from pytorch/executorch ``extension/llm/runner/stats.h`` (commit cff6f4d,
2026: ``print_report`` and ``stats_to_json_string``), ``text_llm_runner.cpp`` and
``text_token_generator.h``, and from the runner's first form in ``examples/models/llama2/
runner/runner.cpp`` (v0.2 - v0.3, 2024). After each generation (never after ``--warmup``'s)
the runner prints on stdout::

    PyTorchObserver {"prompt_tokens":26,"generated_tokens":119,"model_load_start_ms":...,
    "model_load_end_ms":...,"inference_start_ms":...,"inference_end_ms":...,
    "prompt_eval_end_ms":...,"first_token_ms":...,"aggregate_sampling_time_ms":...,
    "SCALING_FACTOR_UNITS_PER_SECOND":1000}

(one line; wall-clock milliseconds since the epoch). 2024-08 added ``model_execution_start_ms``,
``model_execution_end_ms`` and ``aggregate_model_execution_time_ms``; 2026-03 put
``prefill_token_per_sec`` and ``decode_token_per_sec`` first (ostream doubles, 6 significant
digits); a CUDA build adds ``gpu_*`` fields. The human summary that follows (``Prompt Tokens:``,
``Model Load Time:``, ``Total inference time:``, ``Time to first generated token:``...) repeats
these numbers rounded and is not read. benchlab's :func:`~benchlab.protocol.lines.parse_output` reads
``PyTorchObserver`` lines as FAI-PEP's ``type``/``metric``/``value`` shape and calls this one
malformed, so a job running this tool must use :func:`parse_llm_runner` instead.

How the runner counts: the prefill's logits give the first new token; ``generated_tokens`` are
those produced after it (``text_token_generator`` returns ``pos - start_pos``, and the first form
``pos - num_prompt_tokens``), so a generation has ``generated_tokens + 1`` new tokens. Since
v0.4 ``first_token_ms`` and ``prompt_eval_end_ms`` are stamped together right after the
prefill's token; v0.2 - v0.3 stamped ``prompt_eval_end_ms`` there and ``first_token_ms`` one
decode step later. The earlier of the two, ``t1``, is the end of the prefill in every release.

benchlab's metrics, one ``NET`` sample per stats line (per generation), with ``t0`` =
``inference_start_ms`` and ``t2`` = ``inference_end_ms``:

* ``ttft`` = ``t1 - t0`` ms: includes the tokenizer's encoding of the prompt, as the runner's
  own "Time to first generated token" does;
* ``prefill_rate`` = ``prompt_tokens / (t1 - t0) * 1000`` (the runner's "Prompt evaluation"
  rate);
* ``tpot`` = ``(t2 - t1) / generated_tokens`` ms and ``decode_rate`` = ``generated_tokens /
  (t2 - t1) * 1000`` (the runner's "Generated N tokens" rate): ``generated_tokens`` already
  leaves out the first token, so it is not reduced by one;
* ``latency`` = ``t2 - t0`` ms;
* ``load_time`` = ``model_load_end_ms - model_load_start_ms`` once per distinct load (the
  runner keeps the stamps of its one load in every later line).

All stamps are whole milliseconds, so a short prefill reads to +-1 ms. No per-token times are
printed (no ``inter_token_latency``), nor any memory peak (the ``RSS after ...`` log lines are
points, not peaks, and are not read).
"""

from __future__ import annotations

import json
import math
from typing import Any

from benchlab.frameworks.native.common import SampleList as _Samples
from benchlab.protocol.lines import ParsedOutput
from benchlab.schema.result import DetailKey, Metric

__all__ = ["PREFIX", "TOOL", "parse_llm_runner"]

TOOL = "executorch_llm_runner"
"""The name recorded in ``details["tool"]``."""

PREFIX = "PyTorchObserver "
"""The prefix of the runner's stats line (shared with FAI-PEP's observer lines)."""

_MAX_RAW = 200
_FIELDS = ("prompt_tokens", "generated_tokens", "inference_start_ms", "inference_end_ms",
           "first_token_ms", "prompt_eval_end_ms")


def _int(obj: dict[str, Any], key: str) -> int | None:
    """``obj[key]`` as an int when it is a whole, finite, non-negative JSON number."""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


def _truncate(line: str) -> str:
    return line if len(line) <= _MAX_RAW else line[: _MAX_RAW - 3] + "..."


def _payload(line: str) -> dict[str, Any] | None:
    """The JSON object after the prefix, or None when it does not read as one."""
    start = line.find("{", line.find(PREFIX) + len(PREFIX))
    if start < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(line, start)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _add_generation(samples: _Samples, stats: dict[str, int]) -> None:
    t0, t2 = stats["inference_start_ms"], stats["inference_end_ms"]
    firsts = [stats[k] for k in ("first_token_ms", "prompt_eval_end_ms") if stats[k] >= t0 > 0]
    prompt, generated = stats["prompt_tokens"], stats["generated_tokens"]
    if t2 >= t0 > 0:
        samples.add("NET", Metric.LATENCY, float(t2 - t0), "ms")
    if not firsts or min(firsts) > t2:
        return
    t1 = min(firsts)
    samples.add("NET", Metric.TTFT, float(t1 - t0), "ms")
    if t1 > t0 and prompt > 0:
        samples.add("NET", Metric.PREFILL_RATE, prompt / (t1 - t0) * 1000.0, "tokens/s")
    if generated > 0:
        samples.add("NET", Metric.TPOT, (t2 - t1) / generated, "ms")
        if t2 > t1:
            samples.add("NET", Metric.DECODE_RATE, generated / (t2 - t1) * 1000.0, "tokens/s")


def parse_llm_runner(text: str) -> ParsedOutput:
    """Parse one ExecuTorch LLM runner process's output (stdout, stderr or logcat) into a
    ParsedOutput, from its ``PyTorchObserver {...}`` stats lines.

    Each stats line is one generation and gives one sample of each metric the module docstring
    lists (indexed in order). ``details``: ``tool``, ``prompt_tokens``, ``new_tokens``
    (``generated_tokens + 1``) and ``generated_tokens`` as the runner counts them, of the first
    generation, and ``generations``. ``metric_lines`` counts the stats lines read;
    ``PyTorchObserver`` lines that do not read as this runner's stats are in ``malformed``,
    except FAI-PEP's own ``type``/``metric`` lines, which belong to
    :func:`~benchlab.protocol.lines.parse_output` and are skipped. Nothing raises.
    """
    samples = _Samples()
    details: dict[str, Any] = {DetailKey.TOOL: TOOL}
    malformed: list[str] = []
    loads: list[tuple[int, int]] = []
    good = 0
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if PREFIX not in line:
            continue
        obj = _payload(line)
        if obj is not None and ("type" in obj or "metric" in obj):
            continue  # FAI-PEP's observer shape, not this runner's
        read = {key: _int(obj, key) for key in _FIELDS} if obj is not None else {}
        stats = {key: value for key, value in read.items() if value is not None}
        if obj is None or len(stats) < len(_FIELDS):
            malformed.append(_truncate(line))
            continue
        good += 1
        _add_generation(samples, stats)
        start, end = _int(obj, "model_load_start_ms"), _int(obj, "model_load_end_ms")
        if start and end is not None and end >= start and (start, end) not in loads:
            loads.append((start, end))
            samples.add("NET", Metric.LOAD_TIME, float(end - start), "ms")
        if good == 1:
            details["prompt_tokens"] = stats["prompt_tokens"]
            details["generated_tokens"] = stats["generated_tokens"]
            details["new_tokens"] = stats["generated_tokens"] + 1
    if good:
        details["generations"] = good
    return ParsedOutput(samples=tuple(samples.items), details=details,
                        malformed=tuple(malformed), metric_lines=good)

"""Read the console output of OpenVINO GenAI's ``llm_bench`` (``tools/llm_bench/benchmark.py``)
for text generation.

The format was read from openvinotoolkit/openvino.genai ``tools/llm_bench/`` at commit da1db86
(2026: ``llm_bench_utils/metrics_print.py``, ``memory_monitor.py``, ``ov_utils.py``,
``task/text_generation.py``, ``benchmark.py``) and at 42096011f (2024-10, the first ``tools/``
layout). Python logging writes ``[ INFO ] message`` on stdout. Per iteration and prompt, with
a prefix ``[N][P<prompt>]`` (``[N]`` alone before 2024-10-19, ``[N][C<turn>][P<prompt>]`` in
chat mode, ``[warm-up]`` for iteration 0)::

    [1][P0] Input token size: 24, Output size: 8, Infer count: 8, Tokenization Time: 1.41ms,
        Detokenization Time: 0.37ms, Generation Time: 0.21s, Latency: 26.4200 ms/token
    [1][P0] First token latency: 61.33 ms, other tokens latency: 21.26 ms/token, len of input
        tokens: 24 * 1          (2024: "First token latency: 52.31 ms/token, ..., len of tokens:
        128 * 1", the count of new tokens)
    [1][P0] Max rss memory cost: 1310.27MBytes, rss memory increase: ..., max system memory ...

and once: ``Model path=..., openvino runtime version: ..., genai version: ...``, ``Pipeline
initialization time: 1.87s``, with ``-mc`` ``Max RSS memory on compilation phase: X MiB, ...``,
and at the end ``<<< Warm-up iteration is excluded. >>>``, ``[Total] Iterations: N`` and per
prompt ``[Average] P[0] Input token size: ..., 1st token latency: ..., 2nd token latency: ...,
2nd tokens throughput: ... tokens/s`` (``Prompt[0]`` in 2024). With ``LOGLEVEL=DEBUG`` the tool
also logs ``latency of all tokens:`` then ``[i]seconds`` (4 decimals) per token, just before
that iteration's metrics. "MBytes" are MiB (bytes / 2**20 in 2024, the MiB monitor since).

benchlab's metrics, one ``NET`` sample per measured iteration and prompt; the warm-up
iteration is left out, as the tool's averages leave it out:

* ``ttft`` = "First token latency" (ms; GenAI's TTFT, from generate() to the first token, the
  prefill included; in chat mode the tool prints it per input token and it is multiplied back);
* ``tpot`` = "other tokens latency" (ms, the mean gap after the first token, per batch step);
* ``prefill_rate`` = input tokens / ttft * 1000 and ``decode_rate`` = batch / tpot * 1000 (the
  tool's "2nd tokens throughput");
* ``latency`` = "Generation Time" * 1000 (printed to 10 ms; since 2024-11 the prompt
  is tokenized before the timer, before that generate() took text and the time includes
  tokenization);
* ``inter_token_latency``: every gap of the DEBUG list (``[1]`` onwards), in ms, to 0.1 ms;
* ``memory_peak`` = "Max rss memory cost" (MiB, the process RSS peak over the iteration);
* ``load_time`` = "Pipeline initialization time" * 1000 (model read and compiled), once.

"Latency: X ms/token" (generation time over all new tokens, the first included) is not one of
benchlab's metrics and is not read. Unreadable lines are skipped; nothing raises.
"""

from __future__ import annotations

import re
from typing import Any

from benchlab.frameworks.native.common import NUMBER
from benchlab.frameworks.native.common import SampleList as _Samples
from benchlab.frameworks.native.common import finite_float as _float
from benchlab.protocol.lines import ParsedOutput
from benchlab.schema.result import DetailKey, Metric

__all__ = ["TOOL", "parse_llm_bench"]

TOOL = "llm_bench"
"""The name recorded in ``details["tool"]``."""

_LEVEL = re.compile(r"^\s*\[ (?:INFO|WARNING|DEBUG|ERROR|CRITICAL) \] ?")
_ITER = re.compile(r"^\[(warm-up|\d+)\](?:\[C(\d+)\])?(?:\[P(-?\d+)\])?\s+(.*)$")
_TOKEN_TIME = re.compile(rf"^\[(\d+)\]({NUMBER})\s*$")
_PER_ITERATION = {
    "input": re.compile(r"\bInput token size: (\d+)"),
    "output": re.compile(r"\bOutput size: (\d+)"),
    "gen_s": re.compile(rf"\bGeneration Time: ({NUMBER})\s*s\b"),
    "first_ms": re.compile(rf"\bFirst token latency: ({NUMBER}) ms(/)?"),
    "other_ms": re.compile(rf"\bother tokens latency: ({NUMBER}) ms/"),
    "batch": re.compile(r"\blen of (?:input )?tokens: \d+ \* (\d+)"),
    "rss_mib": re.compile(rf"\bMax rss memory cost: ({NUMBER})\s*MBytes"),
}
_INIT = re.compile(rf"Pipeline initialization time: ({NUMBER})\s*s\b")
_MODEL = re.compile(r"^Model path=([^,]+)(?:, openvino runtime version: ([^,\s]+))?"
                    r"(?:, genai version: ([^,\s]+))?")
_TOTAL = re.compile(r"^\[Total\] Iterations: (\d+)")
_COMPILE_RSS = re.compile(rf"^Max RSS memory [^:]*compil[^:]*:\s*({NUMBER})")
_AVERAGE = re.compile(rf"\[Average\] (?:P|C|Prompt)\[(\d+)\].*?1st token latency: ({NUMBER}|NA)"
                      rf".*?2nd token latency: ({NUMBER}|NA).*?2nd tokens throughput: "
                      rf"({NUMBER}|NA)")
_FREE_TEXT = ("Input text:", "Generated:")


def _optional(text: str) -> float | None:
    return None if text == "NA" else _float(text)


def parse_llm_bench(text: str) -> ParsedOutput:
    """Parse one ``llm_bench`` text-generation process's output into a ParsedOutput.

    Samples as the module docstring maps them, one per measured (iteration, prompt) pair in
    the order printed. ``details``: ``tool``, ``model_path``, ``openvino_version``,
    ``genai_version``, ``batch_size``, ``iterations`` (measured, warm-up excluded),
    ``warmup_iterations``, ``tool_iterations`` (the tool's ``[Total]`` count: iterations times
    prompts), ``prompt_tokens`` and ``new_tokens`` (of the first measured iteration),
    ``prompts`` (each prompt's sizes, when there are several), ``compile_max_rss_mib`` and
    ``tool_averages`` (the tool's own ``[Average]`` lines, to compare with).
    """
    records: list[dict[str, Any]] = []
    current: dict[tuple[str | None, ...], dict[str, Any]] = {}  # the latest record per prefix
    details: dict[str, Any] = {DetailKey.TOOL: TOOL}
    load_s: float | None = None
    averages: list[dict[str, Any]] = []
    pending: list[float] | None = None  # the DEBUG token list being read
    collecting = False
    for raw in text.split("\n"):
        message = _LEVEL.sub("", raw.rstrip("\r"), count=1).strip()
        if collecting and (match := _TOKEN_TIME.match(message)):
            if (value := _float(match.group(2))) is not None and pending is not None:
                pending.append(value)
            continue
        collecting = False
        if message.startswith("latency of all tokens"):
            collecting, pending = True, []
            continue
        if message.startswith("latency of all infers"):
            pending = None
            continue
        if match := _ITER.match(message):
            body = match.group(4)
            if body.startswith(_FREE_TEXT):
                continue
            found = {name: hit for name, pattern in _PER_ITERATION.items()
                     if (hit := pattern.search(body)) and _float(hit.group(1)) is not None}
            if not found:
                continue  # start/end stamps, MD5s, warnings
            key = (match.group(1), match.group(2), match.group(3))
            record = current.get(key)
            if record is None or any(name in record for name in found):
                # a new iteration (2024's "[1]" prefix is the same for every prompt)
                record = {"key": key, "chat": match.group(2) is not None}
                records.append(record)
                current[key] = record
            if pending is not None:
                record.setdefault("tokens_s", pending)
                pending = None
            for name, hit in found.items():
                record.setdefault(name, _float(hit.group(1)))
            if "first_ms" in found:
                record["first_per_token"] = found["first_ms"].group(2) is not None
        elif match := _INIT.search(message):
            load_s = _float(match.group(1)) if load_s is None else load_s
        elif match := _MODEL.match(message):
            for name, value in zip(("model_path", "openvino_version", "genai_version"),
                                   match.groups(), strict=True):
                if value:
                    details.setdefault(name, value.strip())
        elif match := _TOTAL.match(message):
            details["tool_iterations"] = int(match.group(1))
        elif match := _COMPILE_RSS.match(message):
            details.setdefault("compile_max_rss_mib", _float(match.group(1)))
        elif match := _AVERAGE.search(message):
            ttft, tpot, rate = (_optional(match.group(i)) for i in (2, 3, 4))
            averages.append({"prompt": int(match.group(1)), "ttft_ms": ttft, "tpot_ms": tpot,
                             "decode_rate": rate})

    samples = _Samples()
    if load_s is not None:
        samples.add("NET", Metric.LOAD_TIME, load_s * 1000.0, "ms")
    measured = [r for r in records if r["key"][0] not in ("warm-up", "0")]
    for record in measured:
        _emit(samples, record)
    details["warmup_iterations"] = len({r["key"][0] for r in records} & {"warm-up", "0"})
    details["iterations"] = len({r["key"][0] for r in measured})
    _facts(details, measured)
    if averages:
        details["tool_averages"] = averages
    return ParsedOutput(samples=tuple(samples.items), details=details)


def _emit(samples: _Samples, record: dict[str, Any]) -> None:
    """One measured iteration's samples."""
    batch = record.get("batch", 1.0) or 1.0
    inputs = record.get("input")
    ttft = record.get("first_ms")
    if ttft is not None and record["chat"] and record.get("first_per_token"):
        ttft = ttft * inputs if inputs else None  # chat mode prints ms per input token
    tpot = record.get("other_ms")
    samples.add("NET", Metric.TTFT, ttft, "ms")
    samples.add("NET", Metric.TPOT, tpot, "ms")
    if ttft and inputs:
        samples.add("NET", Metric.PREFILL_RATE, inputs / ttft * 1000.0, "tokens/s")
    if tpot:
        samples.add("NET", Metric.DECODE_RATE, batch / tpot * 1000.0, "tokens/s")
    gen_s = record.get("gen_s")
    samples.add("NET", Metric.LATENCY, None if gen_s is None else gen_s * 1000.0, "ms")
    for gap_s in record.get("tokens_s", [])[1:]:
        samples.add("NET", Metric.INTER_TOKEN_LATENCY, gap_s * 1000.0, "ms")
    samples.add("NET", Metric.MEMORY_PEAK, record.get("rss_mib"), "MiB")


def _facts(details: dict[str, Any], measured: list[dict[str, Any]]) -> None:
    """Token counts and batch size of the measured iterations, into ``details``: per prompt
    index, or per position within an iteration where the prefix has none (2024)."""
    prompts: dict[str, dict[str, int]] = {}
    seen: dict[str, int] = {}
    for record in measured:
        iteration, _, prompt = record["key"]
        if prompt is None:
            prompt = str(seen.get(iteration, 0))
            seen[iteration] = int(prompt) + 1
        sizes = {name: int(record[field]) for name, field in
                 (("prompt_tokens", "input"), ("new_tokens", "output")) if field in record}
        prompts.setdefault(prompt, sizes)
        if "batch" in record:
            details.setdefault("batch_size", int(record["batch"]))
    if prompts:
        details.update(next(iter(prompts.values())))
    if len(prompts) > 1:
        details["prompts"] = prompts

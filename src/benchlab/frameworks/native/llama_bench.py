"""Read llama.cpp's ``llama-bench`` output in its ``-o json`` and ``-o jsonl`` forms.

The format was read from ggml-org/llama.cpp ``tools/llama-bench/llama-bench.cpp`` (commit
050fc7f, 2026): ``json_printer`` writes ``[``, one object per test and ``]``; ``jsonl_printer``
one object per line. Each object holds the ``test::get_fields()`` fields (``build_commit``,
``build_number``, ``cpu_info``, ``gpu_info``, ``backends``, ``model_filename``, ``model_type``,
``model_size`` in bytes, ``model_n_params``, ``n_batch``, ``n_ubatch``, ``n_threads``, ``type_k``,
``type_v``, ``n_gpu_layers``, ``flash_attn``..., ``n_prompt``, ``n_gen``, ``n_depth``,
``test_time``, ``avg_ns``, ``stddev_ns``, ``avg_ts``, ``stddev_ts``), then ``samples_ns`` (the
wall time of each repetition, ns) and ``samples_ts`` (``1e9 * (n_prompt + n_gen) / ns`` each,
printed by an ostream at 6 significant digits, so a fast test reads ``1.02345e+06``). Builds
before ``-d`` have no ``n_depth`` (read as 0). Progress and error lines go to stderr; when both
streams come back together they sit between the objects and are skipped.

What a repetition times (``main``): after one untimed warm-up (unless ``--no-warmup``) and,
with ``-d N``, an untimed prefill of N tokens, a ``pp`` test (``n_prompt`` > 0, ``n_gen`` = 0)
decodes ``n_prompt`` random tokens in ``n_batch`` batches; a ``tg`` test (``n_gen`` > 0,
``n_prompt`` = 0) decodes ``n_gen`` tokens one at a time from a single start token; a ``pg``
test (``-pg``) does both back to back. No token is ever sampled (the next token is random).

benchlab's metrics, one ``NET`` sample per repetition:

* ``pp``: ``prefill_rate`` = ``n_prompt / ns * 1e9`` tokens/s (the tool's ``samples_ts``). No
  ``ttft``: nothing picks a first token, and the prompt is random tokens at the test's depth.
* ``tg``: ``decode_rate`` = ``n_gen / ns * 1e9`` tokens/s and ``tpot`` = ``1e-6 * ns / n_gen``
  ms. Unlike benchlab's definitions (tokens after the first, over their time) every one of
  the ``n_gen`` steps counts, none is a prefill's token and none includes sampling.
* ``pg``: ``latency`` = ``1e-6 * ns`` ms, prompt and generation together (its
  ``samples_ts`` mixes both kinds of token and has no benchlab meaning).
* ``model_size`` (MiB, from ``model_size`` bytes: the weights' tensors), once per ParsedOutput.

:func:`llama_bench_tests` gives one ParsedOutput per test; :func:`parse_llama_bench` merges
them for a job that ran one configuration, keeping only the first test of each kind (a sweep
over ``-p``, ``-n``, ``-d`` or ``-t`` would otherwise pool different workloads; the tests left
out are named in ``infos``). Objects that cannot be read, or are not llama-bench tests, are
kept in ``malformed`` (first line, 200 characters); nothing raises.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from benchlab.frameworks.native.common import SampleList as _Samples
from benchlab.protocol.lines import ParsedOutput
from benchlab.schema.result import DetailKey, Metric

__all__ = ["TOOL", "llama_bench_tests", "parse_llama_bench"]

TOOL = "llama-bench"
"""The name recorded in ``details["tool"]``."""

_OBJECT = re.compile(r"^[ \t]*\{", re.M)
_MAX_RAW = 200
#: Facts copied to ``details`` as they are, under the tool's own names.
_FACTS = ("build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename",
          "model_type", "model_n_params", "n_batch", "n_ubatch", "type_k", "type_v",
          "n_gpu_layers", "flash_attn", "use_mmap")


def _count(value: Any) -> int | None:
    """A non-negative JSON integer, or None (``true`` is not a count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _durations(value: Any) -> list[float] | None:
    """``samples_ns`` as positive finite numbers, or None when it is not a list of them."""
    if not isinstance(value, list):
        return None
    out: list[float] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            return None
        if not math.isfinite(item) or item <= 0:
            return None
        out.append(float(item))
    return out


def _truncate(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= _MAX_RAW else line[: _MAX_RAW - 3] + "..."


def _objects(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every JSON object that starts a line, in order, and the text of those that did not read."""
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        whole = [whole]
    if isinstance(whole, list):
        good = [item for item in whole if isinstance(item, dict)]
        bad = [_truncate(json.dumps(item)) for item in whole if not isinstance(item, dict)]
        return good, bad
    decoder = json.JSONDecoder()
    good, bad = [], []
    end = 0
    for match in _OBJECT.finditer(text):
        start = match.end() - 1
        if start < end:
            continue  # inside an object already read
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            bad.append(_truncate(text[start:]))
            continue
        good.append(obj)
    return good, bad


def _name(n_prompt: int, n_gen: int, n_depth: int) -> str:
    """The test's name as llama-bench's markdown table writes it (``pp512``, ``tg128 @ d4096``)."""
    parts = ([f"pp{n_prompt}"] if n_prompt else []) + ([f"tg{n_gen}"] if n_gen else [])
    return "+".join(parts) + (f" @ d{n_depth}" if n_depth else "")


def _test(obj: dict[str, Any]) -> ParsedOutput | None:
    """One test object's samples and facts, or None when it is not a llama-bench test."""
    n_prompt, n_gen = _count(obj.get("n_prompt")), _count(obj.get("n_gen"))
    n_depth = _count(obj.get("n_depth", 0))
    samples_ns = _durations(obj.get("samples_ns"))
    if n_prompt is None or n_gen is None or n_depth is None or samples_ns is None \
            or n_prompt + n_gen == 0:
        return None
    samples = _Samples()
    for ns in samples_ns:
        if n_gen == 0:
            samples.add("NET", Metric.PREFILL_RATE, n_prompt / ns * 1e9, "tokens/s")
        elif n_prompt == 0:
            samples.add("NET", Metric.DECODE_RATE, n_gen / ns * 1e9, "tokens/s")
            samples.add("NET", Metric.TPOT, ns * 1e-6 / n_gen, "ms")
        else:
            samples.add("NET", Metric.LATENCY, ns * 1e-6, "ms")
    size = _count(obj.get("model_size"))
    if size:
        samples.add("NET", Metric.MODEL_SIZE, size / 2**20, "MiB")
    details: dict[str, Any] = {DetailKey.TOOL: TOOL, "test": _name(n_prompt, n_gen, n_depth),
                               "context_depth": n_depth, "repetitions": len(samples_ns)}
    if n_prompt:
        details["prompt_tokens"] = n_prompt
    if n_gen:
        details["new_tokens"] = n_gen
    threads = _count(obj.get("n_threads"))
    if threads:
        details[DetailKey.THREADS] = threads
    for key in _FACTS:
        if isinstance(obj.get(key), (str, int, float)):
            details[key] = obj[key]
    for key in ("avg_ts", "stddev_ts"):  # the tool's own statistics, for comparison
        value = obj.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value):
            details[key] = float(value)
    return ParsedOutput(samples=tuple(samples.items), details=details)


def llama_bench_tests(text: str) -> list[ParsedOutput]:
    """One ParsedOutput per llama-bench test in ``text`` (``-o json`` or ``-o jsonl`` output,
    stderr lines allowed), in the tool's order; unreadable objects are dropped (see
    :func:`parse_llama_bench` for them)."""
    objects, _ = _objects(text)
    return [test for obj in objects if (test := _test(obj)) is not None]


def parse_llama_bench(text: str) -> ParsedOutput:
    """Parse one ``llama-bench`` process's JSON or JSON Lines output into a ParsedOutput.

    Samples of the first ``pp``, the first ``tg`` and the first ``pg`` test (see the module
    docstring for the mapping), each test's samples indexed from 0 per metric; one
    ``model_size`` sample. ``details`` carry the tool's facts from the first test (threads under
    :attr:`~benchlab.schema.result.DetailKey.THREADS`; ``prompt_tokens`` from the ``pp`` test,
    ``new_tokens`` from the ``tg`` test, ``context_depth``, ``repetitions``) and ``tests``: every
    test's name, ``avg_ts`` and ``stddev_ts``, kept or not. Tests left out are named in
    ``infos``; unreadable objects and JSON that is no llama-bench test are in ``malformed``.
    """
    objects, bad = _objects(text)
    malformed = list(bad)
    samples = _Samples()
    details: dict[str, Any] = {DetailKey.TOOL: TOOL}
    infos: list[str] = []
    tests: list[dict[str, Any]] = []
    kinds: set[str] = set()
    size_done = False
    for obj in objects:
        test = _test(obj)
        if test is None:
            malformed.append(_truncate(json.dumps(obj)))
            continue
        facts = dict(test.details)
        tests.append({key: facts[key] for key in ("test", "avg_ts", "stddev_ts") if key in facts})
        kind = "pg" if "prompt_tokens" in facts and "new_tokens" in facts \
            else "pp" if "prompt_tokens" in facts else "tg"
        if kind in kinds:
            infos.append(f"llama-bench test {facts['test']} left out: a job keeps the first "
                         f"{kind} test (llama_bench_tests reads each test)")
            continue
        kinds.add(kind)
        for sample in test.samples:
            if sample.metric == Metric.MODEL_SIZE:
                if size_done:
                    continue
                size_done = True
            samples.add(sample.type, sample.metric, sample.value, sample.unit)
        for key, value in facts.items():
            if key not in ("test", "avg_ts", "stddev_ts"):
                details.setdefault(key, value)
    if tests:
        details["tests"] = tests
    return ParsedOutput(samples=tuple(samples.items), details=details, infos=tuple(infos),
                        malformed=tuple(malformed), metric_lines=len(tests))

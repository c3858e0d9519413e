"""Parsers and command builders for native benchmark binaries run on phones and boards.

Each tool prints its own text, not benchlab's metric lines; these modules read it into a
:class:`benchlab.protocol.lines.ParsedOutput` with benchlab's metric names (``NET latency``,
``load_time``, ``first_inference``, ``memory_peak``...), and build the tools' command lines:

* :mod:`~benchlab.frameworks.native.benchmark_model`: LiteRT / TensorFlow Lite
  ``benchmark_model`` (with its ``--enable_op_profiling`` tables);
* :mod:`~benchlab.frameworks.native.executor_runner`: ExecuTorch ``executor_runner`` and
  ``xnn_executor_runner``;
* :mod:`~benchlab.frameworks.native.perf_test`: ``onnxruntime_perf_test`` and the JSON profile
  it writes with ``-p``;
* generation (docs/generative.md): :mod:`~benchlab.frameworks.native.llama_bench` (llama.cpp's
  ``llama-bench`` JSON), :mod:`~benchlab.frameworks.native.llm_runner` (ExecuTorch's LLM
  runner statistics line) and :mod:`~benchlab.frameworks.native.llm_bench` (OpenVINO GenAI's
  ``llm_bench``), each onto benchlab's generation metrics.

Tools that print only aggregates give one ``NET latency`` sample per process (their mean) plus
a :class:`~benchlab.protocol.lines.ReportedSummary`; ``details["latency_samples"]``
(:attr:`~benchlab.schema.result.DetailKey.LATENCY_SAMPLES`) says ``"process_mean"`` or, when a tool
printed every iteration, ``"per_iteration"``, and ``details["tool"]``
(:attr:`~benchlab.schema.result.DetailKey.TOOL`) names the tool.
"""

from __future__ import annotations

from benchlab.frameworks.native.benchmark_model import benchmark_model_argv, parse_benchmark_model
from benchlab.frameworks.native.executor_runner import executor_runner_argv, parse_executor_runner
from benchlab.frameworks.native.llama_bench import llama_bench_tests, parse_llama_bench
from benchlab.frameworks.native.llm_bench import parse_llm_bench
from benchlab.frameworks.native.llm_runner import parse_llm_runner
from benchlab.frameworks.native.perf_test import (
    ort_profile_op_means,
    parse_ort_profile,
    parse_perf_test,
    perf_test_argv,
)

__all__ = [
    "benchmark_model_argv",
    "executor_runner_argv",
    "llama_bench_tests",
    "ort_profile_op_means",
    "parse_benchmark_model",
    "parse_executor_runner",
    "parse_llama_bench",
    "parse_llm_bench",
    "parse_llm_runner",
    "parse_ort_profile",
    "parse_perf_test",
    "perf_test_argv",
]

"""Tests of the native-tool parsers and command builders in :mod:`benchlab.frameworks.native`.

The sample outputs in ``data/native/`` are reconstructed from the tools' print statements (each
text file says which source files at its top; those ``#`` lines double as foreign lines the
parsers must skip):

* ``benchmark_model_*.txt``: google-ai-edge/LiteRT ``tflite/tools/benchmark/benchmark_model.cc``,
  ``benchmark_tflite_model.cc``, ``tflite/profiling/profile_summary_formatter.cc`` and
  tensorflow ``third_party/xla/third_party/tsl/tsl/util/stats_calculator.{h,cc}``;
* ``executor_runner*.txt``: pytorch/executorch ``examples/portable/executor_runner/
  executor_runner.cpp`` (main, and the total-only generation) and
  ``runtime/platform/default/posix.cpp``;
* ``onnxruntime_perf_test.txt``: microsoft/onnxruntime ``onnxruntime/test/perftest/
  performance_runner.cc`` and ``ort_test_session.cc``;
* ``ort_profile.json``: the layout ``onnxruntime/core/common/profiler.cc`` writes (one warm-up
  run and two timed runs of a five-node model).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import benchlab.frameworks.native as native
from benchlab.frameworks.native import (
    benchmark_model_argv,
    executor_runner_argv,
    ort_profile_op_means,
    parse_benchmark_model,
    parse_executor_runner,
    parse_ort_profile,
    parse_perf_test,
    perf_test_argv,
)
from benchlab.protocol.lines import ParsedOutput

DATA = Path(__file__).parent / "data" / "native"


def read(name: str) -> str:
    return (DATA / name).read_text()


def values(parsed: ParsedOutput, metric: str, type_: str = "NET") -> list[float]:
    return [s.value for s in parsed.samples if s.metric == metric and s.type == type_]


def test_package_exports_are_sorted_and_documented() -> None:
    assert native.__all__ == sorted(native.__all__)
    for name in native.__all__:
        assert getattr(native, name).__doc__


# --- benchmark_model ---------------------------------------------------------------------------


def test_benchmark_model_plain_run() -> None:
    parsed = parse_benchmark_model(read("benchmark_model_plain.txt"))
    assert values(parsed, "latency") == [pytest.approx(14.7025)]  # regular runs, not warm-up
    assert values(parsed, "load_time") == [pytest.approx(41.25)]
    assert values(parsed, "first_inference") == [pytest.approx(21.873)]
    assert values(parsed, "memory_load") == [pytest.approx(31.2539)]
    assert values(parsed, "memory_peak") == [pytest.approx(45.125)]
    assert values(parsed, "model_size") == [pytest.approx(13.9785e6 / 2**20)]
    assert all(s.repetition == 0 and s.index == 0 for s in parsed.samples)
    (summary,) = parsed.summaries
    assert (summary.key, summary.unit, summary.num_runs) == ("NET latency", "ms", 68)
    assert summary.values == pytest.approx({
        "mean": 14.7025, "min": 14.422, "max": 15.873, "std": 0.231,
        "p5": 14.46, "p50": 14.65, "p95": 15.102,
    })
    details = parsed.details
    assert details["tool"] == "benchmark_model"
    assert details["latency_samples"] == "process_mean"
    assert details["warmup"] == {"count": 34, "mean_ms": pytest.approx(14.8336),
                                 "first_ms": pytest.approx(21.873)}
    assert details["num_runs"] == 68 and details["threads"] == 4
    assert details["graph"] == "/data/local/tmp/mobilenet_v2.tflite"
    assert details["delegates_created"] == ["XNNPACK"]
    assert details["delegate_partitions"] == [{"delegate": "TfLiteXNNPackDelegate",
                                               "replaced_nodes": 66, "total_nodes": 66,
                                               "partitions": 1}]
    assert details["memory_overall_mib"] == pytest.approx(38.6211)
    assert details["vm_rss_mib"] == 44
    assert (details["min_runs"], details["min_secs"], details["max_secs"]) == (50, 1.0, 150.0)
    assert "op_table" not in details


def test_benchmark_model_op_profiling() -> None:
    parsed = parse_benchmark_model(read("benchmark_model_profile.txt"))
    assert values(parsed, "latency") == [pytest.approx(5.4479)]
    per_type = {s.type: s.value for s in parsed.samples if s.type != "NET"}
    # "Summary by node type" of the regular runs only: the initialization tables
    # (ModifyGraphWithDelegate, AllocateTensors) are not operators.
    assert per_type == pytest.approx({
        "CONV_2D": 4.024, "DEPTHWISE_CONV_2D": 1.011, "FULLY_CONNECTED": 0.301,
        "AVERAGE_POOL_2D": 0.036, "SOFTMAX": 0.010, "RESHAPE": 0.002,
    })
    assert all(s.unit == "ms" and s.index == 0 for s in parsed.samples if s.metric == "latency")
    table = parsed.details["op_table"]
    assert len(table) == 10 == parsed.details["nodes_executed"]
    assert table[0] == {"node_type": "CONV_2D", "name": "MobilenetV2/Conv/Relu6",
                        "first_ms": 1.482, "avg_ms": 1.236, "percent": 22.897,
                        "cdf_percent": 22.897, "mem_kb": 0.0, "times_called": 1}
    assert table[-1]["name"] == "MobilenetV2/Predictions/Softmax"
    assert [row["node_type"] for row in parsed.details["op_type_table"]][:2] == [
        "CONV_2D", "DEPTHWISE_CONV_2D"]
    assert parsed.details["op_type_table"][0]["count"] == 4
    # The profiler's own "Timings (microseconds): count=..." line is not a benchmark phase.
    assert parsed.summaries[0].num_runs == 184
    assert parsed.details["warmup"]["count"] == 93
    assert values(parsed, "memory_load") == [pytest.approx(18.4297)]


OLD_LAYOUT = """\
Running benchmark for at least 1 iterations and at least 0.5 seconds
count=1 curr=120416

Running benchmark for at least 50 iterations and at least 1 seconds
count=50 first=101200 curr=99870 min=98455 max=104320 avg=100034 std=1210

============================== Run Order ==============================
\t             [node type]\t  [start]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]\t  [mem KB]\t\
[times called]\t[Name]
\t                 CONV_2D\t    0.000\t   61.020\t   60.118\t 60.100%\t 60.100%\t     0.000\t\
        1\t[model/conv1/Relu6]
\t                 SOFTMAX\t   61.100\t    0.031\t    0.030\t  0.030%\t 60.130%\t     0.000\t\
        1\t[model/probs]

Average inference timings in us: Warmup: 120416, Init: 25017, Inference: 100034
"""


def test_benchmark_model_older_layout_and_no_summary_table() -> None:
    parsed = parse_benchmark_model(OLD_LAYOUT)
    assert values(parsed, "latency") == [pytest.approx(100.034)]
    assert values(parsed, "load_time") == [pytest.approx(25.017)]
    assert parsed.details["warmup"]["count"] == 1
    # No "Summary by node type" table: the run-order rows are added up per type.
    per_type = {s.type: s.value for s in parsed.samples if s.type != "NET"}
    assert per_type == pytest.approx({"CONV_2D": 60.118, "SOFTMAX": 0.030})
    assert [row["name"] for row in parsed.details["op_table"]] == ["model/conv1/Relu6",
                                                                   "model/probs"]


def test_benchmark_model_csv_tables_and_all_same_runs() -> None:
    text = "\n".join([
        "INFO: Running benchmark for at least 1 iterations and at least 0.5 seconds but "
        "terminate if exceeding 150 seconds.",
        "INFO: count=1 curr=9000",
        "INFO: Running benchmark for at least 3 iterations and at least -1 seconds but "
        "terminate if exceeding 150 seconds.",
        "INFO: count=3 curr=8000(all same)",
        "INFO: Operator-wise Profiling Info for Regular Benchmark Runs:",
        "============================== Summary by node type ==============================",
        "node type, count, avg_ms, avg %, cdf %, mem KB, times called",
        "ADD, 2, 0.5, 62.5%, 62.5%, 0, 2",
        "MUL, 1, 0.3, 37.5%, 100%, 0, 1",
        "",
        "============================== Run Order ==============================",
        "node type, first, avg_ms, %, cdf%, mem KB, times called, name",
        "ADD, 0.3, 0.25, 31.25%, 31.25%, 0, 1, net/add\tfirst",  # a comma in a name became a tab
        "",
    ])
    parsed = parse_benchmark_model(text)
    (summary,) = parsed.summaries
    assert summary.num_runs == 3
    assert summary.values == {"mean": 8.0, "min": 8.0, "max": 8.0, "std": 0.0, "p5": 8.0,
                              "p50": 8.0, "p95": 8.0}
    assert values(parsed, "latency") == [8.0]
    assert values(parsed, "first_inference") == [9.0]  # from the warm-up phase
    assert {s.type: s.value for s in parsed.samples if s.type != "NET"} == {"ADD": 0.5, "MUL": 0.3}
    assert parsed.details["op_table"] == [{
        "node_type": "ADD", "first_ms": 0.3, "avg_ms": 0.25, "percent": 31.25,
        "cdf_percent": 31.25, "mem_kb": 0.0, "times_called": 1, "name": "net/add\tfirst"}]


def test_benchmark_model_logcat_lines() -> None:
    text = ("01-02 03:04:05.678  4242  4242 I tflite  : Initialized session in 12.5ms.\n"
            "I/tflite  ( 4242): Inference timings in us: Init: 12500, First inference: 30100, "
            "Warmup (avg): 2.1e+04, Inference (avg): 1.95e+04\n")
    parsed = parse_benchmark_model(text)
    assert values(parsed, "load_time") == [12.5]
    assert values(parsed, "first_inference") == [pytest.approx(30.1)]
    assert values(parsed, "latency") == [pytest.approx(19.5)]  # scientific notation is read
    assert parsed.details["warmup"] == {"mean_ms": pytest.approx(21.0)}


def test_benchmark_model_truncated_and_garbage() -> None:
    full = read("benchmark_model_profile.txt")
    cut = full[: full.rindex("Summary by node type") - 60]  # dies inside the profile output
    parsed = parse_benchmark_model(cut + "\n\x00\x7f garbage count=abc\nINFO: count=\n")
    assert values(parsed, "latency") == [pytest.approx(5.4479)]
    assert "CONV_2D" in {s.type for s in parsed.samples}  # added up from the run order
    assert "unparsed statistics line: count=" in parsed.infos
    # Killed during the regular runs: the warm-up is no latency sample.
    early = full[: full.index("INFO: count=184")]
    parsed = parse_benchmark_model(early)
    assert values(parsed, "latency") == [] and parsed.summaries == ()
    assert parsed.details["warmup"]["count"] == 93


def test_benchmark_model_failure_and_empty() -> None:
    parsed = parse_benchmark_model("INFO: STARTING!\nERROR: Failed to load model nope.tflite\n"
                                   "ERROR: Benchmarking failed.\n")
    assert parsed.samples == () and parsed.summaries == ()
    assert parsed.infos == ("Failed to load model nope.tflite", "Benchmarking failed.")
    empty = parse_benchmark_model("")
    assert empty.samples == () and empty.summaries == () and empty.infos == ()
    assert empty.details["tool"] == "benchmark_model"


def test_benchmark_model_argv() -> None:
    assert benchmark_model_argv("/data/local/tmp/benchmark_model", "/data/local/tmp/m.tflite") == [
        "/data/local/tmp/benchmark_model", "--graph=/data/local/tmp/m.tflite"]
    assert benchmark_model_argv(
        "bm", "m.tflite", threads=4, warmup=2, iterations=100, min_secs=0, profile_ops=True,
        extra=["--use_xnnpack=false"],
    ) == ["bm", "--graph=m.tflite", "--num_threads=4", "--warmup_runs=2", "--num_runs=100",
          "--min_secs=0", "--enable_op_profiling=true", "--use_xnnpack=false"]
    assert benchmark_model_argv("bm", "m", min_secs=2.5)[-1] == "--min_secs=2.5"
    for bad in ({"iterations": -1}, {"warmup": 1.5}, {"threads": True}, {"min_secs": -1.0},
                {"threads": -2}):
        with pytest.raises(ValueError):
            benchmark_model_argv("bm", "m", **bad)


# --- executor_runner ---------------------------------------------------------------------------


def test_executor_runner_per_iteration() -> None:
    parsed = parse_executor_runner(read("executor_runner.txt"))
    assert values(parsed, "latency") == pytest.approx([18.211, 12.104, 11.987, 12.052, 11.943])
    assert [s.index for s in parsed.samples if s.metric == "latency"] == [0, 1, 2, 3, 4]
    assert values(parsed, "first_inference") == [pytest.approx(18.211)]
    assert values(parsed, "load_time") == [pytest.approx(32.387)]
    assert parsed.summaries == ()
    details = parsed.details
    assert details["tool"] == "executor_runner"
    assert details["latency_samples"] == "per_iteration"
    assert details["num_executions"] == 5
    assert details["total_execution_ms"] == pytest.approx(66.297)
    assert details["threads"] == 4 and details["method"] == "forward"
    assert details["model_path"] == "/data/local/tmp/mv2_xnnpack_fp32.pte"
    assert details["planned_buffers_bytes"] == [3612672]
    assert details["num_outputs"] == 1
    assert details["outputs"] == [{"index": 0, "sizes": [1, 1000]}]


def test_executor_runner_warmup_iterations() -> None:
    parsed = parse_executor_runner(read("executor_runner.txt"), warmup_iterations=2)
    assert values(parsed, "latency") == pytest.approx([11.987, 12.052, 11.943])
    assert values(parsed, "first_inference") == [pytest.approx(18.211)]
    with pytest.raises(ValueError):
        parse_executor_runner("", warmup_iterations=-1)


def test_executor_runner_total_only() -> None:
    parsed = parse_executor_runner(read("executor_runner_total.txt"))
    assert values(parsed, "latency") == [pytest.approx(0.0245)]  # 0.245 ms / 10 executions
    (summary,) = parsed.summaries
    assert (summary.key, summary.num_runs, summary.values) == (
        "NET latency", 10, {"mean": pytest.approx(0.0245)})
    assert parsed.details["latency_samples"] == "process_mean"
    assert parsed.details["method_loaded"] is True
    assert parsed.details["outputs"] == [{"index": 0, "sizes": [1]}]
    assert values(parsed, "load_time") == [] and values(parsed, "first_inference") == []


def test_executor_runner_failures_truncation_and_empty() -> None:
    text = ("I 00:00:00.000611 executorch:executor_runner.cpp:225] Model file m.pte is loaded.\n"
            "E 00:00:00.000700 executorch:executor_runner.cpp:310] Execution of method forward "
            "failed with status 0x12\n"
            "I 00:00:00.000711 executorch:executor_runner.cpp:780] Iteration 1 of 5: nan ms\n"
            "I 00:00:00.000720 executorch:executor_runner.cpp:789] Model executed successfully 0 "
            "time(s) in 0.000000 ms.\n"
            "random junk ] Iteration x of y: ms\n")
    parsed = parse_executor_runner(text)
    assert parsed.samples == () and parsed.summaries == ()
    assert parsed.infos == ("Execution of method forward failed with status 0x12",)
    cut = read("executor_runner.txt").split("Iteration 3 of 5")[0]
    assert values(parse_executor_runner(cut), "latency") == pytest.approx([18.211, 12.104])
    empty = parse_executor_runner("")
    assert empty.samples == () and empty.details == {"tool": "executor_runner"}


def test_executor_runner_bundled_io() -> None:
    text = "\n".join([
        "I 00:00:00.002110 executorch:executor_runner.cpp:611] === Error stats for testset 0 ===",
        "I 00:00:00.002114 executorch:executor_runner.cpp:612]  mean_absolute_error: 0.000012",
        "I 00:00:00.002118 executorch:executor_runner.cpp:613]  max_absolute_error:  0.000061",
        "I 00:00:00.002130 executorch:executor_runner.cpp:628] TEST: BundleIO index[0] "
        "Test_result: PASS",
    ])
    details = parse_executor_runner(text).details
    assert details["bundleio_error_stats"] == pytest.approx(
        {"mean_absolute_error": 0.000012, "max_absolute_error": 0.000061})
    assert details["bundleio_result"] == "PASS"


def test_executor_runner_argv() -> None:
    assert executor_runner_argv("./xnn_executor_runner", "mv2.pte", iterations=20, threads=4,
                                extra=["--etdump_path=/tmp/e.etdp"]) == [
        "./xnn_executor_runner", "--model_path=mv2.pte", "--num_executions=20",
        "--cpu_threads=4", "--etdump_path=/tmp/e.etdp"]
    assert executor_runner_argv("er", "m.pte") == ["er", "--model_path=m.pte"]
    with pytest.raises(ValueError):
        executor_runner_argv("er", "m.pte", iterations=0)


# --- numbers in exponent form ------------------------------------------------------------------
# C++ streams print a double in its shortest form, which for a tiny or huge value is 1e-05 or
# 1.5E+03; each parser reads such a value whole (benchmark_app and litert-benchmark: in
# test_openvino.py and test_tflite.py, beside their recorded outputs).


def test_benchmark_model_reads_exponent_numbers() -> None:
    text = (read("benchmark_model_plain.txt")
            .replace("file size (MB): 13.9785", "file size (MB): 1.39785e+01")
            .replace("Initialized session in 41.25ms", "Initialized session in 4.125E+01ms")
            .replace("avg=14702.5 std=231", "avg=1.47025e+04 std=2.31e+02")
            .replace("Overall peak memory footprint (MB) via periodic monitoring: 45.125",
                     "Overall peak memory footprint (MB) via periodic monitoring: 4.5125e+01"))
    parsed = parse_benchmark_model(text)
    assert values(parsed, "model_size") == [pytest.approx(13.9785e6 / 2**20)]
    assert values(parsed, "load_time") == [pytest.approx(41.25)]
    assert values(parsed, "latency") == [pytest.approx(14.7025)]
    assert values(parsed, "memory_peak") == [pytest.approx(45.125)]
    assert parsed.summaries[0].values["std"] == pytest.approx(0.231)


def test_executor_runner_reads_exponent_numbers() -> None:
    text = (read("executor_runner.txt")
            .replace("Model loaded in 32.387000 ms", "Model loaded in 3.2387e+01 ms")
            .replace("Iteration 2 of 5: 12.104000 ms", "Iteration 2 of 5: 1e-05 ms")
            .replace("in 66.297000 ms", "in 6.6297E+01 ms"))
    parsed = parse_executor_runner(text)
    assert values(parsed, "load_time") == [pytest.approx(32.387)]
    assert values(parsed, "latency") == pytest.approx([18.211, 1e-05, 11.987, 12.052, 11.943])
    assert parsed.details["total_execution_ms"] == pytest.approx(66.297)


def test_perf_test_reads_exponent_numbers() -> None:
    text = (read("onnxruntime_perf_test.txt")
            .replace("Session creation time cost: 0.0843512 s",
                     "Session creation time cost: 8.43512e-02 s")
            .replace("Min Latency: 0.00588213 s", "Min Latency: 1e-05 s")
            .replace("P50 Latency: 0.00601126 s", "P50 Latency: 6.01126E-03 s")
            .replace("Average inference time cost: 6.06685 ms",
                     "Average inference time cost: 6.06685e+00 ms"))
    parsed = parse_perf_test(text)
    assert values(parsed, "load_time") == [pytest.approx(84.3512)]
    assert values(parsed, "latency") == [pytest.approx(6.06685)]
    (summary,) = parsed.summaries
    assert summary.values["min"] == pytest.approx(0.01)
    assert summary.values["p50"] == pytest.approx(6.01126)


# --- onnxruntime_perf_test ---------------------------------------------------------------------


def test_perf_test_output() -> None:
    parsed = parse_perf_test(read("onnxruntime_perf_test.txt"))
    assert values(parsed, "latency") == [pytest.approx(6.06685)]
    assert values(parsed, "load_time") == [pytest.approx(84.3512)]  # seconds -> ms
    assert values(parsed, "first_inference") == [11.0]
    assert values(parsed, "memory_peak") == [pytest.approx(73400320 / 2**20)]
    (summary,) = parsed.summaries
    assert (summary.key, summary.unit, summary.num_runs) == ("NET latency", "ms", 200)
    assert summary.values == pytest.approx({
        "mean": 6.06685, "min": 5.88213, "max": 8.12957, "p50": 6.01126, "p90": 6.24473,
        "p95": 6.41502, "p99": 7.33491, "p999": 8.12957,
    })
    details = parsed.details
    assert details["tool"] == "onnxruntime_perf_test"
    assert details["latency_samples"] == "process_mean"
    assert details["num_runs"] == 200 and details["threads"] == 4
    assert details["cpu_usage_percent"] == 96.0
    assert details["inferences_per_second"] == pytest.approx(164.401)
    assert details["total_inference_s"] == pytest.approx(1.21337)


def test_perf_test_old_format_truncated_and_failed() -> None:
    old = parse_perf_test("Total time cost:0.5\nTotal iterations:100\nAverage time cost:5 ms\n")
    assert values(old, "latency") == [5.0] and old.summaries[0].num_runs == 100
    cut = read("onnxruntime_perf_test.txt").split("Average inference time cost")[0]
    parsed = parse_perf_test(cut)  # mean from total / requests
    assert values(parsed, "latency") == [pytest.approx(1213.37 / 200)]
    failed = parse_perf_test("there is no test data for model mobilenet\nRun failed:failed to "
                             "initialize.\n\x00garbage\nP50 Latency: abc s\n")
    assert failed.samples == () and failed.summaries == ()
    assert failed.infos == ("there is no test data for model mobilenet",
                            "Run failed:failed to initialize.")
    empty = parse_perf_test("")
    assert empty.samples == () and empty.summaries == () and empty.infos == ()


def test_ort_profile_op_means() -> None:
    text = read("ort_profile.json")
    # All three runs, then without perf_test's warm-up run.
    assert ort_profile_op_means(text) == pytest.approx({
        "Conv": (310 + 500 + 205 + 397 + 201 + 403) / 3000, "Relu": (40 + 22 + 24) / 3000,
        "GlobalAveragePool": (30 + 12 + 14) / 3000, "Gemm": (95 + 61 + 63) / 3000})
    assert ort_profile_op_means(text, warmup_runs=1) == pytest.approx(
        {"Conv": 0.603, "Relu": 0.023, "GlobalAveragePool": 0.013, "Gemm": 0.062})
    assert ort_profile_op_means(text, warmup_runs=1, by="node") == pytest.approx(
        {"Conv_0": 0.203, "Relu_1": 0.023, "Conv_2": 0.400, "GlobalAveragePool_3": 0.013,
         "Gemm_4": 0.062})
    with pytest.raises(ValueError):
        ort_profile_op_means(text, by="provider")


def test_parse_ort_profile_samples_and_robustness() -> None:
    samples = parse_ort_profile(read("ort_profile.json"), warmup_runs=1)
    assert [(s.type, s.metric, s.unit, s.repetition, s.index) for s in samples] == [
        (op, "latency", "ms", 0, 0) for op in ("Conv", "Relu", "GlobalAveragePool", "Gemm")]
    assert samples[0].value == pytest.approx(0.603)
    # A file cut short by a killed process is read event by event.
    text = read("ort_profile.json")
    cut = parse_ort_profile(text[: text.rindex("Conv_2_kernel_time")], warmup_runs=0)
    assert {s.type for s in cut} == {"Conv", "Relu", "GlobalAveragePool", "Gemm"}
    # Without model_run events the k-th event of a node belongs to run k.
    no_runs = "\n".join(line for line in text.split("\n") if "model_run" not in line)
    assert ort_profile_op_means(no_runs, warmup_runs=1) == pytest.approx(
        ort_profile_op_means(text, warmup_runs=1))
    for bad in ("", "garbage", "{}", "[1, 2, {\"cat\": \"Node\"}]", "[{\"cat\": \"Node\", "
                "\"name\": \"x_kernel_time\", \"ts\": \"a\", \"dur\": true}]"):
        assert parse_ort_profile(bad) == []


def test_perf_test_argv() -> None:
    assert perf_test_argv("onnxruntime_perf_test", "m.onnx", iterations=200, threads=4,
                          execution_provider="xnnpack", profile_path="/tmp/prof",
                          extra=["-o", "99"]) == [
        "onnxruntime_perf_test", "-m", "times", "-r", "200", "-x", "4", "-e", "xnnpack",
        "-p", "/tmp/prof", "-I", "-o", "99", "m.onnx"]
    assert perf_test_argv("pt", "m.onnx", duration_s=10, generate_inputs=False) == [
        "pt", "-m", "duration", "-t", "10", "m.onnx"]
    for bad in ({"iterations": 0}, {"duration_s": 5, "iterations": 5}, {"threads": -1}):
        with pytest.raises(ValueError):
            perf_test_argv("pt", "m.onnx", **bad)

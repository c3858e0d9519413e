"""Tests of the generative (LLM) native-tool parsers: ``llama_bench``, ``llm_runner`` and
``llm_bench`` in :mod:`benchlab.frameworks.native`.

The recorded outputs in ``data/native/`` are reconstructed from the tools' printers; every
expected value below is worked out by hand from the numbers in those files:

* ``llama_bench_cpu.json`` (``-o json``, pp512, tg128 and pp512+tg128, 3 repetitions) and
  ``llama_bench_depth.jsonl`` (``-o jsonl --progress -d 0,512`` with stderr mixed in): ggml-org/
  llama.cpp ``tools/llama-bench/llama-bench.cpp`` (``json_printer``, ``jsonl_printer``,
  ``test::get_fields``);
* ``llama_bench_a53.json``: captured, not reconstructed: ``llama-bench -o json -p 16 -n 8 -r 3
  -t 2`` on llama_15m's Q4_0 file, as benchlab builds it for aarch64 (llama-cpp-python
  0.3.36's llama.cpp, commit 0c1e570), run under ``qemu-aarch64-static -cpu cortex-a53``;
* ``executorch_llm_runner.txt`` (main, 2026) and ``executorch_llm_runner_v03.txt`` (v0.3.0):
  pytorch/executorch ``extension/llm/runner/stats.h`` and ``text_llm_runner.cpp``, and
  ``examples/models/llama2/runner/runner.cpp`` at v0.3.0;
* ``openvino_llm_bench_genai.txt`` (2026, ``LOGLEVEL=DEBUG``, ``-mc 2``) and
  ``openvino_llm_bench_2024.txt`` (2024-10, two prompts): openvinotoolkit/openvino.genai
  ``tools/llm_bench`` (``metrics_print.py``, ``task/text_generation.py``, ``benchmark.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.frameworks.native.llama_bench import llama_bench_tests, parse_llama_bench
from benchlab.frameworks.native.llm_bench import parse_llm_bench
from benchlab.frameworks.native.llm_runner import parse_llm_runner
from benchlab.protocol.lines import ParsedOutput, parse_output
from benchlab.schema.result import Metric

DATA = Path(__file__).parent / "data" / "native"


def read(name: str) -> str:
    return (DATA / name).read_text()


def values(parsed: ParsedOutput, metric: str) -> list[float]:
    return [s.value for s in parsed.samples if s.metric == metric and s.type == "NET"]


def units(parsed: ParsedOutput) -> dict[str, str]:
    return {s.metric: s.unit for s in parsed.samples}


GARBAGE = ["", "   \n", "Segmentation fault (core dumped)\n", "[1, 2, 3]", "null", "{\"a\": 1}",
           "PyTorchObserver {\"prompt_tokens\": 3}", "{not json at all", "\x00\xff binary"]


def test_a_captured_llama_bench_run_on_the_emulated_a53_reads() -> None:
    parsed = parse_llama_bench(read("llama_bench_a53.json"))
    pp_ns = [321856769, 302096226, 304423510]
    assert values(parsed, "prefill_rate") == pytest.approx([16e9 / ns for ns in pp_ns])
    tg_ns = [223561076, 225741742, 225323842]
    assert values(parsed, "decode_rate") == pytest.approx([8e9 / ns for ns in tg_ns])
    assert values(parsed, "tpot") == pytest.approx([ns / 8e6 for ns in tg_ns])
    assert parsed.details["model_type"] == "llama ?B Q4_0"
    # llama-bench reads /proc/cpuinfo, which under QEMU's user mode is the host's: the reason
    # benchlab's own runner reads the hwcaps and MIDR_EL1 instead.
    assert parsed.details["cpu_info"] == "AMD EPYC"


@pytest.mark.parametrize("parse", [parse_llama_bench, parse_llm_runner, parse_llm_bench])
@pytest.mark.parametrize("text", GARBAGE)
def test_bad_input_gives_no_samples(parse, text: str) -> None:
    parsed = parse(text)
    assert parsed.samples == ()
    assert parsed.details["tool"]


# --- llama-bench -------------------------------------------------------------------------------


def test_llama_bench_json_maps_each_test_kind() -> None:
    parsed = parse_llama_bench(read("llama_bench_cpu.json"))
    # pp512: 512 tokens over each repetition's samples_ns.
    pp_ns = [853412077, 849873310, 851106452]
    assert values(parsed, "prefill_rate") == pytest.approx([512e9 / ns for ns in pp_ns])
    assert values(parsed, "prefill_rate")[0] == pytest.approx(599.9446, abs=1e-4)  # samples_ts
    # tg128: every one of the 128 single-token steps.
    tg_ns = [2871304518, 2859962207, 2866015934]
    assert values(parsed, "decode_rate") == pytest.approx([128e9 / ns for ns in tg_ns])
    assert values(parsed, "tpot") == pytest.approx([22.432066546875, 22.3434547421875,
                                                    22.390749484375])
    # pp512+tg128: the whole repetition, no split into ttft and tpot.
    assert values(parsed, "latency") == pytest.approx([3742.918644, 3731.55012,
                                                                  3738.027785])
    assert values(parsed, "ttft") == [] and values(parsed, "inter_token_latency") == []
    assert values(parsed, "model_size") == [pytest.approx(799862912 / 2**20)]
    assert units(parsed) == {"prefill_rate": "tokens/s", "decode_rate": "tokens/s", "tpot": "ms",
                             "latency": "ms", "model_size": "MiB"}
    assert [s.index for s in parsed.samples if s.metric == Metric.TPOT] == [0, 1, 2]
    details = parsed.details
    assert details["tool"] == "llama-bench"
    assert details["prompt_tokens"] == 512 and details["new_tokens"] == 128
    assert details["context_depth"] == 0
    assert details["threads"] == 8 and details["repetitions"] == 3
    assert details["build_commit"] == "050fc7f3" and details["model_n_params"] == 1235814432
    assert details["model_type"] == "llama 1B Q4_K - Medium" and details["type_k"] == "f16"
    assert [t["test"] for t in details["tests"]] == ["pp512", "tg128", "pp512+tg128"]
    assert details["tests"][1]["avg_ts"] == pytest.approx(44.665392)
    assert parsed.malformed == () and parsed.infos == () and parsed.metric_lines == 3


def test_llama_bench_jsonl_with_stderr_keeps_the_first_test_of_each_kind() -> None:
    text = read("llama_bench_depth.jsonl")
    parsed = parse_llama_bench(text)
    assert values(parsed, "prefill_rate") == pytest.approx([128e9 / 228114533, 128e9 / 226930811])
    assert values(parsed, "decode_rate") == pytest.approx([32e9 / 702551140, 32e9 / 699872305])
    assert values(parsed, "tpot") == pytest.approx([21.954723125, 21.87100953125])
    assert parsed.details["threads"] == 4 and parsed.details["context_depth"] == 0
    assert [t["test"] for t in parsed.details["tests"]] == [
        "pp128", "tg32", "pp128 @ d512", "tg32 @ d512"]
    assert len(parsed.infos) == 2 and "pp128 @ d512" in parsed.infos[0]
    assert parsed.malformed == ()  # the progress lines are not objects
    # Each test on its own, depth included.
    tests = llama_bench_tests(text)
    assert [t.details["test"] for t in tests] == ["pp128", "tg32", "pp128 @ d512", "tg32 @ d512"]
    deep = tests[3]
    assert deep.details["context_depth"] == 512
    assert values(deep, "decode_rate") == pytest.approx([32e9 / 768330417, 32e9 / 765014888])
    assert values(deep, "tpot") == pytest.approx([768.330417 / 32, 765.014888 / 32])


def test_llama_bench_reads_exponents_and_older_builds_without_depth() -> None:
    # A tiny model on a GPU: the ostream prints samples_ts and avg_ts in exponent form.
    line = ('{"build_commit": "b3e4f5a6", "model_size": 19988480, "n_threads": 16, '
            '"n_prompt": 512, "n_gen": 0, "avg_ns": 500120, "avg_ts": 1.023754e+06, '
            '"samples_ns": [ 500120, 1.0e+06 ], "samples_ts": [ 1.02375e+06, 512000 ]}')
    parsed = parse_llama_bench(line)
    assert values(parsed, "prefill_rate") == pytest.approx([512e9 / 500120, 512e3])
    assert parsed.details["tests"][0]["avg_ts"] == pytest.approx(1.023754e6)
    assert parsed.details["context_depth"] == 0  # no n_depth field before -d existed


def test_llama_bench_rejects_objects_that_are_not_tests() -> None:
    text = ('{"n_prompt": 512, "n_gen": 0, "samples_ns": [ 0 ]}\n'
            '{"n_prompt": true, "n_gen": 0, "samples_ns": [ 1000 ]}\n'
            '{"n_prompt": 0, "n_gen": 0, "samples_ns": [ 1000 ]}\n'
            '{"n_prompt": 16, "n_gen": 0, "samples_ns": [ 1000 ]\n')
    parsed = parse_llama_bench(text)
    assert parsed.samples == () and len(parsed.malformed) == 4 and parsed.metric_lines == 0
    truncated = parse_llama_bench(read("llama_bench_cpu.json")[:-500])  # killed mid-output
    assert values(truncated, "prefill_rate") != [] and values(truncated, "decode_rate") != []
    assert values(truncated, "latency") == [] and len(truncated.malformed) == 1


# --- ExecuTorch LLM runner ---------------------------------------------------------------------


def test_llm_runner_main_stats_line() -> None:
    parsed = parse_llm_runner(read("executorch_llm_runner.txt"))
    # t0 = 1787561646000, first token and prompt eval end = t0 + 74, end = t0 + 74 + 2570;
    # 26 prompt tokens, 119 tokens after the prefill's one.
    assert values(parsed, "ttft") == [74.0]
    assert values(parsed, "prefill_rate") == [pytest.approx(26 / 74 * 1000)]  # 351.35
    assert values(parsed, "tpot") == [pytest.approx(2570 / 119)]  # not / 118: see the docstring
    assert values(parsed, "decode_rate") == [pytest.approx(119 / 2570 * 1000)]  # 46.3035
    assert values(parsed, "latency") == [2644.0]
    assert values(parsed, "load_time") == [1241.0]
    assert units(parsed) == {"ttft": "ms", "prefill_rate": "tokens/s", "tpot": "ms",
                             "decode_rate": "tokens/s", "latency": "ms",
                             "load_time": "ms"}
    details = parsed.details
    assert details["tool"] == "executorch_llm_runner"
    assert (details["prompt_tokens"], details["generated_tokens"], details["new_tokens"]) == (
        26, 119, 120)
    assert details["generations"] == 1 and parsed.metric_lines == 1 and parsed.malformed == ()
    # The tool's own rates in the same line agree with ours.
    assert values(parsed, "decode_rate")[0] == pytest.approx(46.3035, abs=1e-4)


def test_llm_runner_v03_first_token_stamped_a_step_late() -> None:
    parsed = parse_llm_runner(read("executorch_llm_runner_v03.txt"))
    # prompt_eval_end = t0 + 61, first_token_ms = t0 + 92 (one decode step later), end = t0 +
    # 61 + 3776: the prefill ends at the earlier stamp.
    assert values(parsed, "ttft") == [61.0]
    assert values(parsed, "prefill_rate") == [pytest.approx(6 / 61 * 1000)]
    assert values(parsed, "tpot") == [pytest.approx(3776 / 121)]
    assert values(parsed, "decode_rate") == [pytest.approx(121 / 3776 * 1000)]  # 32.0445
    assert values(parsed, "latency") == [3837.0]
    assert values(parsed, "load_time") == [2292.0]
    assert parsed.details["new_tokens"] == 122


def test_llm_runner_one_sample_per_generation_and_one_load() -> None:
    line = ('I/ExecuTorch( 4242): PyTorchObserver {{"prompt_tokens":8,"generated_tokens":{g},'
            '"model_load_start_ms":1000,"model_load_end_ms":1900,"inference_start_ms":{t0},'
            '"inference_end_ms":{t2},"prompt_eval_end_ms":{t1},"first_token_ms":{t1},'
            '"aggregate_sampling_time_ms":3,"prefill_token_per_sec":1.6e+02,'
            '"SCALING_FACTOR_UNITS_PER_SECOND":1000}}')
    text = "\n".join([line.format(g=10, t0=5000, t1=5050, t2=5550),
                      "PyTorchObserver {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\","
                      "\"value\":1}",  # FAI-PEP's shape: not this tool's, skipped
                      line.format(g=0, t0=6000, t1=6040, t2=6040),
                      "PyTorchObserver {\"prompt_tokens\":8,\"generated_tokens\":\"ten\"}"])
    parsed = parse_llm_runner(text)
    assert values(parsed, "ttft") == [50.0, 40.0]
    assert values(parsed, "tpot") == [50.0]  # no decode in a generation that stopped at once
    assert values(parsed, "decode_rate") == [20.0]
    assert values(parsed, "prefill_rate") == [160.0, 200.0]
    assert values(parsed, "latency") == [550.0, 40.0]
    assert values(parsed, "load_time") == [900.0]  # the same load in both lines
    assert [s.index for s in parsed.samples if s.metric == "ttft"] == [0, 1]
    assert parsed.metric_lines == 2 and len(parsed.malformed) == 1
    assert parsed.details["generations"] == 2


def test_llm_runner_leaves_the_protocol_parser_alone() -> None:
    text = read("executorch_llm_runner.txt")
    assert parse_output(text).samples == ()  # the generic parser cannot read this shape
    fai_pep = 'PyTorchObserver {"type":"NET","metric":"latency","unit":"ms","value":12.5}'
    assert [s.value for s in parse_output(fai_pep).samples] == [12.5]
    assert parse_llm_runner(fai_pep).samples == () and parse_llm_runner(fai_pep).malformed == ()


# --- OpenVINO GenAI llm_bench ------------------------------------------------------------------


def test_llm_bench_genai_excludes_the_warm_up() -> None:
    parsed = parse_llm_bench(read("openvino_llm_bench_genai.txt"))
    assert values(parsed, "ttft") == [61.33, 61.91]  # not the warm-up's 142.04
    assert values(parsed, "tpot") == [21.26, 21.35]
    assert values(parsed, "prefill_rate") == pytest.approx([24 / 61.33e-3, 24 / 61.91e-3])
    assert values(parsed, "decode_rate") == pytest.approx([1000 / 21.26, 1000 / 21.35])
    assert values(parsed, "latency") == pytest.approx([210.0, 210.0])  # "0.21s"
    assert values(parsed, "memory_peak") == [1310.27, 1311.02]  # not the warm-up's 1301.55
    assert values(parsed, "load_time") == pytest.approx([1870.0])
    # The DEBUG token list: gaps [1]..[7] of each measured iteration, seconds to ms.
    assert values(parsed, "inter_token_latency") == pytest.approx(
        [21.2, 21.4, 21.2, 21.4, 21.1, 21.3, 21.3, 21.4, 21.3, 21.5, 21.3, 21.2, 21.5, 21.3])
    assert units(parsed)["memory_peak"] == "MiB" and units(parsed)["ttft"] == "ms"
    details = parsed.details
    assert details["tool"] == "llm_bench" and details["iterations"] == 2
    assert details["warmup_iterations"] == 1 and details["tool_iterations"] == 2
    assert (details["prompt_tokens"], details["new_tokens"], details["batch_size"]) == (24, 8, 1)
    assert details["genai_version"] == "2026.3.0.0-2713-8b2ac6e1a06"
    assert details["openvino_version"].startswith("2026.3.0")
    assert details["compile_max_rss_mib"] == 1236.48
    assert details["tool_averages"] == [{"prompt": 0, "ttft_ms": 61.62, "tpot_ms": 21.31,
                                         "decode_rate": 46.93}]
    # The tool's average is the mean of the samples kept.
    assert sum(values(parsed, "ttft")) / 2 == pytest.approx(61.62)


def test_llm_bench_2024_layout_two_prompts() -> None:
    parsed = parse_llm_bench(read("openvino_llm_bench_2024.txt"))
    # "[1]" is the same prefix for both prompts; iterations 1 and 2, prompts 0 and 1 each.
    assert values(parsed, "ttft") == [198.37, 1423.85, 197.92, 1419.66]
    assert values(parsed, "tpot") == [66.14, 67.02, 66.21, 66.95]
    assert values(parsed, "prefill_rate") == pytest.approx(
        [32 / 198.37e-3, 256 / 1423.85e-3, 32 / 197.92e-3, 256 / 1419.66e-3])
    assert values(parsed, "latency") == pytest.approx([8600.0, 9960.0, 8610.0, 9940.0])
    assert values(parsed, "memory_peak") == [4874.92, 4990.41, 4875.06, 4990.88]
    assert values(parsed, "load_time") == pytest.approx([3570.0])
    assert values(parsed, "inter_token_latency") == []  # no DEBUG list
    details = parsed.details
    assert details["prompts"] == {"0": {"prompt_tokens": 32, "new_tokens": 128},
                                  "1": {"prompt_tokens": 256, "new_tokens": 128}}
    assert details["iterations"] == 2 and details["tool_iterations"] == 4
    assert "genai_version" not in details
    assert [a["ttft_ms"] for a in details["tool_averages"]] == [198.14, 1421.76]


def test_llm_bench_chat_batches_and_exponents() -> None:
    text = "\n".join([
        "[ INFO ] Pipeline initialization time: 1.2e+01s",
        "[ INFO ] [1][C0][P0] Input token size: 50, Output size: 64, Infer count: 32, "
        "Generation Time: 1.5s, Latency: 46.8750 ms/2tokens",
        "[ INFO ] [1][C0][P0] First token latency: 2.00 ms/2tokens, other tokens latency: "
        "40.00 ms/2tokens, len of input tokens: 50 * 2",
        "[ INFO ] [2][C0][P0] First token latency: NA ms, other tokens latency: NA, "
        "len of input tokens: 50 * 2",
    ])
    parsed = parse_llm_bench(text)
    assert values(parsed, "load_time") == pytest.approx([12000.0])
    assert values(parsed, "ttft") == [100.0]  # chat mode prints ms per input token: 2.00 * 50
    assert values(parsed, "prefill_rate") == pytest.approx([500.0])
    assert values(parsed, "tpot") == [40.0]
    assert values(parsed, "decode_rate") == pytest.approx([50.0])  # 2 sequences per step
    assert values(parsed, "latency") == pytest.approx([1500.0])
    assert parsed.details["batch_size"] == 2 and parsed.details["iterations"] == 2

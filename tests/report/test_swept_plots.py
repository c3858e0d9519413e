"""A plot against a swept quantity is drawn only when the run swept it (two values or more):
one prompt length, one depth or one offered rate gives no plot whose axis runs from 127.9 to
128.1, and the section says which value the run used (issue 56 §5)."""

from __future__ import annotations

import re
from typing import Any

from benchlab.harness.jobrun import summarize_samples
from benchlab.report.generation import generation_rows
from benchlab.report.generation_html import generation_html
from benchlab.report.scenario import scenario_rows
from benchlab.report.scenario_html import scenario_html
from benchlab.schema.result import DetailKey, JobIdentity, Metric, Result, Sample, Status

DEPTH_PLOT = "decode speed against context depth"
PROMPT_PLOT = "time to first token against prompt length"


def _generation(prompt: int, depth: int, tpot: float, precision: str = "fp32") -> Result:
    samples = [Sample(metric, value, unit, repetition=k)
               for k in range(2)
               for metric, value, unit in (("ttft", prompt * 0.05 * (1 + depth / 512), "ms"),
                                           ("tpot", tpot * (1 + depth / 512), "ms"),
                                           ("decode_rate", 1e3 / tpot / (1 + depth / 512),
                                            "tokens/s"))]
    identity = JobIdentity(spec="zoo:llama_15m", model_name="llama_15m", model_hash="h",
                           test_identifier=f"generate[p{prompt} g8 d{depth}]",
                           framework="llamacpp", framework_config={"precision": precision},
                           target="host")
    return Result(identity=identity, status=Status.OK, samples=tuple(samples),
                  summaries=summarize_samples(samples),
                  details={DetailKey.PRECISION: precision, DetailKey.GENERATION: {
                      "prompt_tokens": prompt, "new_tokens": 8, "depth": depth}})


def _x_ticks(svg: str) -> list[str]:
    """The labels under a plot's x axis (text centred below it)."""
    return re.findall(r'<text x="[\d.]+" y="268.0" text-anchor="middle">([^<]*)</text>', svg)


def test_one_depth_and_one_prompt_length_draw_no_curve_and_say_which() -> None:
    # Two precisions of one runtime: two points at the one depth and the one prompt length.
    html = generation_html(generation_rows([_generation(128, 0, 1.0),
                                            _generation(128, 0, 0.3, precision="q4_0")]))
    assert DEPTH_PLOT not in html and PROMPT_PLOT not in html
    assert "every generation had prompt length 128 and context depth 0" in html
    assert "--prompt-tokens" in html and "--depth" in html
    assert "<svg" not in html  # nor any other plot stretched around one value


def test_two_depths_draw_the_depth_curves_and_name_the_one_prompt_length() -> None:
    rows = generation_rows([_generation(128, depth, tpot, precision)
                            for depth in (0, 512)
                            for precision, tpot in (("fp32", 1.0), ("q4_0", 0.3))])
    html = generation_html(rows)
    assert DEPTH_PLOT in html and PROMPT_PLOT not in html
    depth = html[html.index(DEPTH_PLOT):]
    depth = depth[:depth.index("</svg>")]
    # One line per precision, each from depth 0 to 512, not one zigzag through both.
    assert depth.count("<polyline") == 2
    assert "llamacpp fp32 p=128" in depth and "llamacpp q4_0 p=128" in depth
    assert _x_ticks(depth)[0] == "0" and "500" in _x_ticks(depth)
    assert "every generation had prompt length 128 (tokens)" in html


def test_two_prompt_lengths_draw_the_prompt_curve() -> None:
    html = generation_html(generation_rows([_generation(p, 0, 1.0) for p in (32, 128)]))
    assert PROMPT_PLOT in html and DEPTH_PLOT not in html
    prompt = html[html.index(PROMPT_PLOT):]
    ticks = _x_ticks(prompt[:prompt.index("</svg>")])
    assert "127.9" not in ticks and "128.1" not in ticks
    assert "every generation had context depth 0 (tokens)" in html


def _server(framework: str, rates: list[float]) -> Result:
    runs = [{"target_qps": q, "percentile_ms": 4.0 + q / 50, "valid": True} for q in rates]
    facts: dict[str, Any] = {"name": "server", "label": "server@15ms", "latency_bound_ms": 15.0,
                             "runs": runs, "why_invalid": "", "over_capacity": None}
    samples = [Sample(Metric.LATENCY, 2.0, "ms", repetition=0, index=k) for k in range(5)]
    samples += [Sample(Metric.SCENARIO_LATENCY, 12.0, "", repetition=0),
                Sample(Metric.SCENARIO_VALID, 1.0, "", repetition=0)]
    identity = JobIdentity(spec="zoo:mlp", model_name="mlp", model_hash="h", test_identifier="t",
                           framework=framework, framework_config={}, target="host")
    return Result(identity=identity, status=Status.OK, samples=tuple(samples),
                  summaries=summarize_samples(samples), details={DetailKey.SCENARIO: facts})


def test_a_server_at_one_given_rate_has_no_plot_against_offered_load() -> None:
    html = scenario_html(scenario_rows([_server("onnxruntime", [100.0]),
                                        _server("openvino", [100.0])]))
    assert "latency against offered load" not in html and "<svg" not in html
    assert "every LoadGen run offered 100 queries/s" in html


def test_a_server_search_plots_latency_against_offered_load() -> None:
    html = scenario_html(scenario_rows([_server("onnxruntime", [50.0, 100.0, 200.0])]))
    assert "latency against offered load" in html and html.count("<polyline") == 1
    assert "every LoadGen run offered" not in html

"""What reports show of load-scenario results: the terminal's scenario table and the HTML
section with its latency-against-load plot, on results made here with known figures (LoadGen
itself runs in tests/runner/test_scenario.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from benchlab.harness.jobrun import summarize_samples
from benchlab.report.matrix_html import write_matrix_html
from benchlab.report.scenario import scenario_rows, scenario_table
from benchlab.report.scenario_html import scenario_html
from benchlab.report.svg import CSS, PALETTE
from benchlab.schema.result import DetailKey, JobIdentity, Metric, Result, Sample, Status

from .browser import colour_pixels, screenshot


def _result(framework: str, facts: dict[str, Any], metrics: dict[Metric, float],
            valid: list[float]) -> Result:
    samples = [Sample(Metric.LATENCY, 2.0 + 0.1 * k, "ms", repetition=0, index=k)
               for k in range(20)]
    samples += [Sample(metric, value, "", repetition=0) for metric, value in metrics.items()]
    samples += [Sample(Metric.SCENARIO_VALID, v, "", repetition=k) for k, v in enumerate(valid)]
    identity = JobIdentity(spec="zoo:mlp", model_name="mlp", model_hash="h", test_identifier="t",
                           framework=framework, framework_config={}, target="host")
    return Result(identity=identity, status=Status.OK, samples=tuple(samples),
                  summaries=summarize_samples(samples), details={DetailKey.SCENARIO: facts})


def _search(framework: str, scale: float) -> Result:
    runs = [{"target_qps": q * scale, "percentile_ms": p, "valid": p <= 15}
            for q, p in ((50, 4.0), (100, 6.0), (200, 30.0), (150, 12.0), (175, 19.0))]
    facts = {"name": "server", "label": "server@15ms", "latency_bound_ms": 15.0, "runs": runs,
             "why_invalid": "", "over_capacity": None}
    return _result(framework, facts, {Metric.SCENARIO_LATENCY: 12.0,
                                      Metric.SERVER_QPS: 150 * scale,
                                      Metric.THROUGHPUT: 149 * scale}, [1.0])


def _single_stream_half_invalid() -> Result:
    facts = {"name": "single_stream", "label": "single_stream",
             "why_invalid": "early stopping could not state the percentile", "runs": [{}]}
    return _result("onnxruntime", facts, {Metric.SCENARIO_LATENCY: 2.5,
                                          Metric.EARLY_STOPPING_LATENCY: 2.7,
                                          Metric.THROUGHPUT: 400.0}, [1.0, 0.0])


def test_rows_read_the_scenario_metrics_and_loadgens_verdict() -> None:
    search, single = scenario_rows([_search("onnxruntime", 1.0), _single_stream_half_invalid()])
    assert (search.scenario, search.percentile, search.server_qps) == ("server@15ms", "p99",
                                                                      150.0)
    assert search.latency_bound_ms == 15.0 and len(search.runs) == 5
    assert (single.valid, single.processes, single.percentile) == (1, 2, "p90")
    assert single.early_stopping_ms == 2.7 and single.sample_p50_ms is not None


def test_the_terminal_table_says_which_runs_loadgen_judged_invalid_and_why() -> None:
    console = Console(width=250, record=True)
    console.print(scenario_table([_search("onnxruntime", 1.0), _single_stream_half_invalid()]))
    text = console.export_text()
    assert "server@15ms" in text and "valid" in text
    assert "1/2 valid: early stopping could not state the percentile" in text


def test_a_sweep_without_scenarios_has_no_scenario_table_or_section() -> None:
    assert scenario_table([]) is None and scenario_html([]) == ""


def test_html_draws_latency_against_offered_load_in_chromium(tmp_path: Path) -> None:
    results = [_search("onnxruntime", 1.0), _search("openvino", 1.4),
               _single_stream_half_invalid()]
    html = write_matrix_html(results, tmp_path / "report.html").read_text()
    section = html[html.index('id="scenarios"'):]
    section = section[:section.find("<h2", 10) if "<h2" in section[10:] else None]
    assert "latency against offered load" in section
    # One line per server job (not the single-stream one), a dot per LoadGen run, hollow
    # where invalid, and the bound.
    assert section.count("<polyline") == 2
    assert section.count("<circle") == 10 and section.count('fill="#fff"') == 4
    assert "bound 15 ms" in section
    alone = tmp_path / "section.html"
    alone.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{CSS}</style>"
                     f"</head><body><main>{scenario_html(scenario_rows(results))}"
                     "</main></body></html>")
    shot = screenshot(alone, tmp_path / "shot.png", (1000, 1400))
    for colour in (*PALETTE[:2], "#c62828"):
        assert colour_pixels(shot, colour, tolerance=40) > 50, colour

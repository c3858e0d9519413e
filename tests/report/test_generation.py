"""What reports show of generative results: the terminal's generation table and the HTML
section with its curves, on results made here with known figures (the runtimes themselves are
in tests/zoo/test_generative.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from benchlab.harness.jobrun import summarize_samples
from benchlab.report.generation import generation_rows, generation_table
from benchlab.report.generation_html import generation_html
from benchlab.report.svg import CSS, PALETTE
from benchlab.report.matrix_html import write_matrix_html
from benchlab.schema.result import DetailKey, JobIdentity, Result, Sample, Status

from .browser import colour_pixels, screenshot


def _result(framework: str, prompt: int, depth: int, tpot: float, ttft: float,
            precision: str = "fp32", agreement: float = 1.0) -> Result:
    samples = []
    for k in range(4):
        samples += [Sample("ttft", ttft, "ms", repetition=k // 2, index=k % 2),
                    Sample("tpot", tpot, "ms", repetition=k // 2, index=k % 2),
                    Sample("latency", ttft + 7 * tpot, "ms", repetition=k // 2, index=k % 2),
                    Sample("prefill_rate", prompt / ttft * 1e3, "tokens/s", repetition=k // 2,
                           index=k % 2),
                    Sample("decode_rate", 1e3 / tpot, "tokens/s", repetition=k // 2,
                           index=k % 2)]
        samples += [Sample("inter_token_latency", tpot * (0.9 + 0.2 * (i % 2)), "ms",
                           repetition=k // 2, index=(k % 2) * 7 + i) for i in range(7)]
    samples += [Sample("token_agreement", agreement, ""), Sample("first_divergence", 32, "tokens"),
                Sample("perplexity", 1234.5, ""), Sample("memory_peak", 200.0, "MiB")]
    identity = JobIdentity(spec="zoo:llama_15m", model_name="llama_15m", model_hash="h",
                           test_identifier=f"generate[p{prompt} g8 d{depth}]",
                           framework=framework, framework_config={}, target="host")
    return Result(identity=identity, status=Status.OK, samples=tuple(samples),
                  summaries=summarize_samples(samples),
                  details={DetailKey.PRECISION: precision, DetailKey.GENERATION: {
                      "prompt_tokens": prompt, "new_tokens": 8, "depth": depth,
                      "compare_tokens": 32}})


def _sweep() -> list[Result]:
    # Every series differs from every other, so no line hides another.
    slower = {"onnxruntime": 1.0, "openvino": 1.6}
    return [_result(framework, prompt, depth,
                    tpot=5.0 * slower[framework] * (1 + depth / 512) * (1 + prompt / 256),
                    ttft=prompt * 0.25 * slower[framework] * (1 + depth / 1024))
            for framework in ("onnxruntime", "openvino") for prompt in (16, 64)
            for depth in (0, 256, 512)]


def test_rows_read_the_generation_metrics_in_their_units() -> None:
    rows = generation_rows(_sweep())
    assert len(rows) == 12
    first = rows[0]
    assert (first.framework, first.workload) == ("onnxruntime", "p16 g8 d0")
    assert first.tpot == pytest.approx(5.3125) and first.ttft == pytest.approx(4.0)
    assert first.decode_rate == pytest.approx(1e3 / 5.3125)
    assert first.token_agreement == 1.0 and first.first_divergence == 32
    assert first.itl_p99 == pytest.approx(5.3125 * 1.1, rel=0.01)


def test_the_terminal_table_has_a_row_per_generative_result() -> None:
    console = Console(width=250, record=True)
    console.print(generation_table(_sweep()))
    text = console.export_text()
    # The model alone: its test is the workload, which the P G D column shows.
    assert "llama_15m/generate" not in text and "p16 g8 d0" in text
    assert text.count("onnxruntime") == 6 and "188.2" in text  # 1000 / 5.3125 tokens/s
    # ITL, prefill, memory and perplexity wait for --wide, and so do their legends.
    assert "ITL p90 ms" not in text and "ppl" not in text
    wide = Console(width=250, record=True)
    wide.print(generation_table(_sweep(), wide=True))
    every = wide.export_text()
    assert "ITL p90 ms" in every and "1234" in every and "ppl: perplexity" in every


def test_each_precision_of_a_runtime_is_its_own_dot_beside_accuracy() -> None:
    # The 4-bit trade is one plot: fp32 and int4 of one runtime and workload both on it.
    cells = [_result("llamacpp", 16, 0, tpot=1.0, ttft=4.0),
             _result("llamacpp", 16, 0, tpot=0.3, ttft=3.0, precision="q4_0", agreement=0.6)]
    html = generation_html(generation_rows(cells))
    assert "llamacpp fp32 p16 g8 d0" in html and "llamacpp q4_0 p16 g8 d0" in html


def test_a_forward_pass_sweep_has_no_generation_table() -> None:
    assert generation_table([]) is None


def test_html_draws_the_depth_and_prompt_curves_in_chromium(tmp_path: Path) -> None:
    page = write_matrix_html(_sweep(), tmp_path / "report.html")
    html = page.read_text()
    assert "decode speed against context depth" in html
    assert "time to first token against prompt length" in html
    section = html[html.index('id="generation"'):]
    section = section[:section.find("<h2", 10) if "<h2" in section[10:] else None]
    # Depth curves: one per runtime and prompt length (4); prompt curves: one per runtime
    # and depth (6).
    assert section.count("<polyline") == 10
    # The section alone, so that no other plot's colours count: each series' line and dots
    # are on screen in its colour.
    alone = tmp_path / "section.html"
    alone.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{CSS}</style>"
                     f"</head><body><main>{generation_html(generation_rows(_sweep()))}"
                     "</main></body></html>")
    shot = screenshot(alone, tmp_path / "shot.png", (1000, 3200))
    for colour in PALETTE[:4]:
        assert colour_pixels(shot, colour, tolerance=40) > 50, colour

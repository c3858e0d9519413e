"""The terminal tables at a person's terminal width: model, backend, p50, the interval and the
ratio to the fastest are never cut, at 80, 100, 160 and 250 columns and through a pipe."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.harness.jobrun import summarize_samples
from benchlab.report.tables import TABLE_PARTS, ratio_text, results_table
from benchlab.stats.runstats import PairedRatio
from benchlab.schema.result import JobIdentity, Result, Sample, Status
from benchlab.store import open_store

# The main job's cells: (model, framework, config, p50 ms, round factors for its processes).
CELLS = [
    ("efficientnet_lite0", "executorch", {"delegate": "xnnpack", "precision": "int8"}, 3.61),
    ("efficientnet_lite0", "executorch", {"delegate": "xnnpack", "precision": "fp32"}, 6.93),
    ("efficientnet_lite0", "onnxruntime", {}, 5.02),
    ("efficientnet_lite0", "onnxruntime", {"precision": "int8"}, 3.70),
    ("efficientnet_lite0", "openvino", {"precision": "f32"}, 6.11),
    ("efficientnet_lite0", "pytorch", {"mode": "eager"}, 35.47),
    ("efficientnet_lite0", "pytorch", {"mode": "torchscript"}, 21.30),
    ("efficientnet_lite0", "pytorch", {"mode": "export"}, 128.41),
    ("efficientnet_lite0", "tflite", {}, 4.44),
    ("minilm", "onnxruntime", {"precision": "int8"}, 1.234),
]


def _result(model: str, framework: str, config: dict, p50: float, processes: int = 5) -> Result:
    samples = []
    for rep in range(processes):
        level = p50 * (1 + 0.01 * ((rep * 3) % 5 - 2))
        samples += [Sample("latency", level * (1 + 0.002 * (i % 3)), "ms", repetition=rep,
                           index=i) for i in range(30)]
        samples += [Sample("load_time", 120.0, "ms", repetition=rep),
                    Sample("first_inference", p50 * 3, "ms", repetition=rep),
                    Sample("memory_peak", 812.0, "MiB", repetition=rep)]
    samples += [Sample("model_size", 13.5, "MiB"), Sample("sqnr", 38.2, "dB"),
                Sample("error_max_abs", 0.0123, "abs"), Sample("top1_agreement", 1.0, "ratio")]
    identity = JobIdentity(spec=f"zoo:{model}", model_name=model, model_hash="h",
                           test_identifier="default", framework=framework,
                           framework_config=config, target="host")
    return Result(identity=identity, status=Status.OK, samples=tuple(samples),
                  summaries=summarize_samples(samples),
                  details={"precision": config.get("precision", "fp32"), "repetitions": processes,
                           "job_stop_reason": "decided", "race": "decided"})


def _results() -> list[Result]:
    return [_result(*cell) for cell in CELLS]


def _render(results: list[Result], width: int) -> str:
    out = io.StringIO()
    console = Console(width=width, file=out, force_terminal=False, color_system=None)
    for part in TABLE_PARTS:
        table = results_table(results, title=f"{part} table", part=part)
        if table is not None:
            console.print(table)
    return out.getvalue()


def _latency_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if "×" in line or "≈" in line]


@pytest.mark.parametrize("width", [80, 100, 160, 250])
def test_p50_interval_and_ratio_are_whole_at_every_width(width: int) -> None:
    results = _results()
    text = _render(results, width)
    assert "…" not in "\n".join(_latency_rows(text))
    assert max(len(line) for line in text.splitlines()) <= width
    latency_part = text.split("cost table")[0]
    for result in results:
        summary = result.summaries["NET latency"]
        p50 = f"{summary.p50:.3f}" if summary.p50 < 10 else (
            f"{summary.p50:.2f}" if summary.p50 < 100 else f"{summary.p50:.1f}")
        assert p50 in latency_part, (width, p50)
        assert f"{summary.ci_rel_halfwidth * 100:.1f}%" in latency_part
    # Every cell's ratio to its model's fastest, with its interval, on one line each.
    assert "×1.00" in latency_part
    slow = [line for line in latency_part.splitlines() if "×9.8" in line or "×9.7" in line]
    assert slow and "[" in slow[0] and "]" in slow[0]
    if width >= 160:
        # The model and the backend stay on one line too (narrower, they fold, never cut).
        assert "efficientnet_lite0" in latency_part
        assert "executorch[xnnpack,int8]" in latency_part


def test_the_wide_table_holds_every_column() -> None:
    out = io.StringIO()
    Console(width=300, file=out, color_system=None).print(results_table(_results()))
    header = next(line for line in out.getvalue().splitlines() if "p50" in line)
    for column in ("p50", "p90", "±95%", "× fastest", "procs", "load", "first", "MiB", "size",
                   "err", "SQNR", "top1", "notes"):
        assert column in header


def test_ratio_text_says_decided_tie_or_open() -> None:
    assert ratio_text(PairedRatio(1.51, 1.18, 1.80, 0.95, 5)) == "×1.51 [1.18–1.80]"
    assert ratio_text(PairedRatio(1.004, 0.99, 1.02, 0.95, 5)) == "≈ [0.99–1.02]"
    assert ratio_text(PairedRatio(1.04, 0.95, 1.13, 0.95, 5)) == "×1.04? [0.95–1.13]"
    assert ratio_text(PairedRatio(1.0, None, None, 0.95, 0)) == "×1.00"


def test_through_a_pipe_the_numbers_are_whole(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with open_store(db) as store:
        run = store.start_run(fingerprint="f", description="", host="h")
        for result in _results():
            store.add_result(run.id, result)
        store.finish_run(run.id)
    shown = subprocess.run([sys.executable, "-m", "benchlab", "results", "show", "--db", str(db)],
                           capture_output=True, text=True, check=True).stdout
    assert "…" not in "\n".join(_latency_rows(shown))
    for result in _results():
        p50 = result.summaries["NET latency"].p50
        assert (f"{p50:.1f}" if p50 >= 100 else f"{p50:.2f}" if p50 >= 10 else f"{p50:.3f}") \
            in shown
    assert "×1.00" in shown and "cost" in shown and "accuracy" in shown

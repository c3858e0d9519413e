"""Load-scenario figures under MLPerf LoadGen, and benchlab's overhead against LoadGen's demo.

Two parts (docs/performance.md, "Load scenarios"):

* **figures**: ``benchlab.run`` of the zoo's MobileNetV2 on ONNX Runtime and OpenVINO (their
  default configurations) in three scenarios, one fresh process per cell (a LoadGen run is a
  measurement of its own): single-stream p90 with LoadGen's early-stopping estimate, the
  highest server QPS whose p99 meets 15 ms (benchlab's search), offline samples/s.
* **overhead**: benchlab's single-stream and offline cells on ONNX Runtime against a process
  that drives the same model the way LoadGen's own Python demos do
  (``loadgen/demos/py_demo_single_stream.py`` and ``py_demo_offline.py`` in
  mlcommons/inference): ``issue_query`` starts a thread that runs the query's samples and
  completes them, every sample's inputs bound beforehand. The same ONNX Runtime session
  settings (benchlab's backend makes the session on both sides), the same input sets (the
  model's reference sets), the same LoadGen settings. Rounds of fresh processes in ABBA
  order (``fidelity.abba``); per round LoadGen's p90 (single-stream) and samples/s
  (offline) of each side; the ratio benchlab / demo with its 95% interval
  (``fidelity.ratio_ci``; offline as time per sample, so above 1 means benchlab slower in
  both). Goal: the interval inside 0.97-1.03.

``--smoke`` runs a tiny version (the zoo's mlp, short runs, two rounds, the overhead part's
first benchlab cells reused as the figures' ONNX Runtime single-stream and offline cells) so CI
keeps it working.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402
from fidelity import abba, ratio_ci  # noqa: E402

NAME = "scenarios"
GOAL = (0.97, 1.03)
BOUND_MS = 15.0


def _exported(model: str, cache_dir: Path | None) -> tuple[str, str]:
    """The model's ONNX file and reference, from the artifact cache."""
    from benchlab.spec.artifacts import ArtifactCache, default_cache_dir
    from benchlab.zoo import export_models

    (export,) = export_models([model], ArtifactCache(cache_dir or default_cache_dir()))
    return str(export.files["onnx"][0]), str(export.files["reference"][0])


def figures(model: str, scenarios: dict[str, Any], cache_dir: Path | None,
            frameworks: list[str], measured: dict[str, Any] | None = None) -> list[dict]:
    """One row per (scenario, configuration): what the scenario table shows. ``measured``:
    scenario label → a result of ``frameworks[0]`` in it already measured, not run again."""
    import benchlab
    from benchlab.report.scenario import scenario_rows, validity

    rows = []
    for label, scenario in scenarios.items():
        have = [measured[label]] if measured and label in measured else []
        with tempfile.TemporaryDirectory() as tmp:
            results = have + list(benchlab.run(
                models=[model], frameworks=frameworks[len(have):], db=Path(tmp) / "r.db",
                cache_dir=cache_dir, overrides=benchlab.TestOverrides(repeat=1, warmup=5),
                scenario=scenario))
        for row, result in zip(scenario_rows(list(results)), results, strict=True):
            rows.append({"scenario": label, "framework": row.framework,
                         "precision": result.details.get("precision"),
                         "status": row.status, "latency_ms": row.latency_ms,
                         "early_stopping_ms": row.early_stopping_ms,
                         "server_qps": row.server_qps, "samples_per_s": row.throughput,
                         "sample_p50_ms": row.sample_p50_ms, "loadgen": validity(row),
                         "why": row.why, "runs": list(row.runs), "error": result.error})
    return rows


def benchlab_side(model: str, duration: float, cache_dir: Path | None,
                  results: dict[str, Any] | None = None) -> dict[str, float]:
    """One fresh runner process per scenario of benchlab's ONNX Runtime fp32 cell; the first
    result of each scenario is kept in ``results`` when given."""
    import benchlab
    from benchlab.schema.scenario import Scenario
    from benchlab.schema.result import Metric

    found = {}
    for name in ("single_stream", "offline"):
        with tempfile.TemporaryDirectory() as tmp:
            (result,) = benchlab.run(
                models=[model], frameworks=["onnxruntime:precision=fp32"],
                db=Path(tmp) / "r.db", cache_dir=cache_dir,
                overrides=benchlab.TestOverrides(repeat=1, warmup=5),
                scenario=Scenario(name, duration_s=duration))
        if result.error:
            raise RuntimeError(result.error)
        if results is not None:
            results.setdefault(name, result)
        metric = Metric.SCENARIO_LATENCY if name == "single_stream" else Metric.THROUGHPUT
        found[f"benchlab_{name}"] = result.summaries[metric.key].p50
    return found


def demo_side(onnx: str, reference: str, duration: float) -> dict[str, float]:
    """A fresh process driving the model as LoadGen's Python demos do (``--demo-side``)."""
    proc = subprocess.run([sys.executable, __file__, "--demo-side", onnx, reference,
                           str(duration)], capture_output=True, text=True, timeout=900,
                          check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def _demo(onnx: str, reference: str, duration: float) -> dict[str, float]:
    """The demo's system under test over benchlab's ONNX Runtime session: a thread per query,
    the samples' calls bound beforehand (the demos' samples are in RAM before the test)."""
    import os
    import threading
    import time

    import mlperf_loadgen as lg
    import numpy as np

    from benchlab.frameworks.onnxruntime.backend import OnnxRuntimeBackend
    from benchlab.runner.accuracy import load_reference
    from benchlab.runner.config import RunnerConfig
    from benchlab.runner.loadgen import read_detail_log
    from benchlab.schema.scenario import DEFAULT_QUERY_COUNTS

    backend = OnnxRuntimeBackend(RunnerConfig(backend="bench", model_path=onnx))
    backend.load()
    ref = load_reference(reference)
    sets = [dict(ref.inputs), *(dict(more) for more, _ in ref.more)]
    calls = [backend.prepare(s) for s in sets]
    warm = []
    for k in range(5):
        started = time.perf_counter_ns()
        calls[k % len(calls)]()
        warm.append((time.perf_counter_ns() - started) / 1e6)
    expected_ms = float(np.mean(warm[1:]))

    def work(samples: list[Any]) -> None:
        for sample in samples:
            calls[sample.index]()
            lg.QuerySamplesComplete([lg.QuerySampleResponse(sample.id, 0, 0)])

    def issue(samples: list[Any]) -> None:
        threading.Thread(target=work, args=(samples,)).start()

    found = {}
    for name, scenario in (("single_stream", lg.TestScenario.SingleStream),
                           ("offline", lg.TestScenario.Offline)):
        with tempfile.TemporaryDirectory() as out:
            settings = lg.TestSettings()
            settings.scenario = scenario
            settings.mode = lg.TestMode.PerformanceOnly
            settings.min_duration_ms = int(duration * 1000)
            settings.min_query_count = DEFAULT_QUERY_COUNTS[name]
            # benchlab's settings (runner/scenario.py): the warm-up's rate and a half.
            settings.single_stream_expected_latency_ns = int(expected_ms * 1e6 / 1.5)
            settings.offline_expected_qps = 1.5 * 1000.0 / expected_ms
            log = lg.LogSettings()
            log.log_output.outdir = out
            log.enable_trace = False
            sut = lg.ConstructSUT(issue, lambda: None)
            qsl = lg.ConstructQSL(len(sets), len(sets), lambda _: None, lambda _: None)
            lg.StartTestWithLogSettings(sut, qsl, settings, log)
            lg.DestroyQSL(qsl)
            lg.DestroySUT(sut)
            with open(os.path.join(out, "mlperf_log_detail.txt")) as file:
                detail = read_detail_log(file.read())
        found[f"demo_{name}"] = (float(detail["result_90.00_percentile_latency_ns"]) / 1e6
                                 if name == "single_stream"
                                 else float(detail["result_samples_per_second"]))
    return found


def main() -> int:
    """Measure, print and write ``bench/results/scenarios.json``."""
    if len(sys.argv) == 5 and sys.argv[1] == "--demo-side":
        print(json.dumps(_demo(sys.argv[2], sys.argv[3], float(sys.argv[4]))))
        return 0

    def options(parser: Any) -> None:
        parser.add_argument("--cache-dir", type=Path, default=None)
        parser.add_argument("--duration", type=float, default=5.0,
                            help="seconds of each LoadGen run (default 5)")

    args = parse_args(__doc__.splitlines()[0], repeats=8, repeats_help="ABBA rounds of the "
                      "overhead part", extra=options)
    from benchlab.schema.scenario import Scenario

    model = "mlp" if args.smoke else "mobilenet_v2"
    duration = 0.3 if args.smoke else args.duration
    scenarios = {"single_stream": Scenario("single_stream", duration_s=duration),
                 # The smoke's server runs once at a fixed rate: with its 100 queries early
                 # stopping states no p99, and a search would fall through seven rates.
                 "server@15ms": Scenario("server", duration_s=duration,
                                         latency_bound_ms=BOUND_MS,
                                         query_count=100 if args.smoke else None,
                                         target_qps=200 if args.smoke else None),
                 "offline": Scenario("offline", duration_s=duration)}
    # The smoke's cells: one configuration per runtime.
    frameworks = (["onnxruntime:precision=fp32", "openvino"] if args.smoke
                  else ["onnxruntime", "openvino"])
    # The smoke's overhead part runs first: its benchlab side's cells are the figures' ONNX
    # Runtime single-stream and offline cells (the same runs), which are not run twice.
    measured: dict[str, Any] | None = {} if args.smoke else None
    rows = [] if args.smoke else figures(model, scenarios, args.cache_dir, frameworks)
    onnx, reference = _exported(model, args.cache_dir)
    rounds = abba(2 if args.smoke else args.repeats,
                  lambda: benchlab_side(model, duration, args.cache_dir, measured),
                  lambda: demo_side(onnx, reference, duration))
    if args.smoke:
        rows = figures(model, scenarios, args.cache_dir, frameworks, measured)
    single = ratio_ci([r["benchlab_single_stream"] for r in rounds],
                      [r["demo_single_stream"] for r in rounds], goal=GOAL)
    offline = ratio_ci([1e3 / r["benchlab_offline"] for r in rounds],
                       [1e3 / r["demo_offline"] for r in rounds], goal=GOAL)
    print(f"{'scenario':<14} {'runtime':<12} {'prec':<5} {'latency ms':>10} {'ES ms':>8} "
          f"{'QPS':>7} {'samples/s':>9}  LoadGen")
    for row in rows:
        def show(key: str, spec: str) -> str:
            return "-" if row[key] is None else format(row[key], spec)
        print(f"{row['scenario']:<14} {row['framework']:<12} {str(row['precision']):<5} "
              f"{show('latency_ms', '10.3f')} {show('early_stopping_ms', '8.3f')} "
              f"{show('server_qps', '7.1f')} {show('samples_per_s', '9.1f')}  {row['loadgen']}"
              + (f" ({row['why']})" if row["why"] and row["loadgen"] != "valid" else "")
              + (f"  {row['error']}" if row["error"] else ""))
    for name, ci in (("single-stream p90", single), ("offline time/sample", offline)):
        print(f"{name:<20} benchlab/demo {ci['ratio']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}] "
              f"over {ci['rounds']} rounds: {ci['verdict']}")
    record = {"cells": rows, "single_stream_ratio": single, "offline_ratio": offline,
              "rounds": rounds, "goal": list(GOAL), "duration_s": duration}
    print(f"wrote {write_result(NAME, args, record)}")
    return 0 if rows and all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

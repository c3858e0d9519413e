"""Fidelity against native tools: benchlab's median latency vs the runtime's own benchmark tool.

Goal: for the same model, the same inputs and the same thread count, measured interleaved in
one run, benchlab's median divided by the native tool's is within 0.97-1.03.

Method, the same for every tool (one definition: :func:`abba` and :func:`ratio_ci`). A cell is
one model, one tool and one thread count. Its rounds are pairs of fresh processes started back
to back in ABBA order: benchlab first in even rounds, the tool first in odd ones, so the
process sequence is B T T B B T ... and slow drift of the machine hits both sides alike (the
design of benchlab's A/B comparisons, :mod:`benchlab.ab.pairs`). Each process gives one
figure, its median latency; each round one log-ratio d = log(benchlab / tool). The cell's
ratio is exp of the Hodges-Lehmann centre of the d's and its confidence interval exp of the
bounds of :func:`benchlab.ab.stats.hodges_lehmann` (signed-rank inversion, ``--level``, 95% by
default). The verdict compares the interval with the goal: **met** when it lies inside
0.97-1.03, **missed** when it lies wholly outside, **undecided** when it straddles an edge or
when there are too few rounds for any interval to reach the level (fewer than 6 at 95%).
Each cell's interval holds at its level on its own; across many cells one may miss by chance.

PyTorch: for each zoo model (:data:`benchlab.zoo.SMALL_MODELS`) and thread count, the two
processes of a round are:

* **benchlab**: the real runner, exactly as the harness starts it
  (``python -m benchlab.runner '<json>'``, the JSON built like
  :func:`benchlab.frameworks.base.runner_invocation` does, with its thread environment
  variables), eager mode, fixed iterations extended to ``--run-time`` seconds by ``min_time``.
  The figure is the median of its ``NET latency`` samples.
* **torch.utils.benchmark.Timer**: ``Timer(stmt="m(x)", num_threads=T).blocked_autorange()``
  in a child started as ``python bench/fidelity.py --timer-child '<json>'``, same factory,
  same synthesised input (:func:`benchlab.runner.loop.make_inputs`, seed 0). The headline
  reference runs it inside ``torch.inference_mode()``, like benchlab's backend, for
  ``--run-time`` seconds. The child then measures, for ``--diag-time`` seconds, diagnostics
  for when a ratio strays: the same Timer under ``torch.no_grad()`` and with autograd on (what
  a plain ``Timer("m(x)")`` measures), and the median of single calls timed one by one with
  ``perf_counter_ns`` under inference mode (benchlab's statistic, computed outside benchlab).

Known differences between the two figures, which the diagnostics separate:

* Timer's ``median`` is the median of *block means* (it times blocks of 10-1000 calls so its
  own overhead stays under 1e-4), benchlab's the median of single calls. For right-skewed
  latencies (preemption, frequency dips) a block mean sits above the single-call median, so
  benchlab/Timer can fall below 1 with neither being wrong: compare ``single/timer``.
* benchlab enters ``torch.inference_mode()`` around every call (about a microsecond); the
  Timer reference enters it once. Only visible for models in the tens of microseconds.
* A Timer run with autograd on records the graph of every call and is slower than either.

The cross-process ratio also carries process-to-process variation (allocation, thread
placement), which benchlab deliberately measures rather than hides; it is what widens the
intervals, and only more rounds on a quiet machine narrow them. With as many threads as the
machine has cores (2 on a 2-vCPU VM) and other work running, OpenMP's threads wait on each
other whenever one is descheduled and the figures are dominated by that oversubscription, not
by either tool: read the ``load1`` column.

Native tools, on the zoo's exported files (same file for both sides; only the formats they
need are exported, into a temporary cache). One uncounted benchlab process per cell first
finds how many iterations fill ``--run-time`` seconds; every process of the cell then runs
that many (5 warm-up iterations on both sides where the tool has the option):

* OpenVINO ``benchmark_app -m model.xml -d CPU -hint none -nstreams 1 -nthreads T -api sync
  -infer_precision f32 -niter N`` (its UI refuses ``-nstreams``/``-nthreads`` with a hint, so
  ``-hint none`` plus one stream is the latency configuration) against benchlab's ``openvino``
  framework (``precision=f32``, latency hint, T threads); the tool's ``Median`` line (two
  decimals, in us below 1 ms average latency and in ms above: under 0.5% rounding).
* LiteRT ``litert-benchmark --model model.tflite --num_threads T --num_runs N --result_json``
  (shipped in ai-edge-litert) against benchlab's ``tflite`` framework; ``latency.median_ms``.
  The tool runs LiteRT's CompiledModel API while benchlab (from Python) runs the Interpreter
  with XNNPACK and copies inputs each call, so a ratio above 1 is partly that API difference.

Every cell records its per-round figures (``per_round``) and its wall time (``wall_s``), so a
run can be re-analysed and its length predicted from a shorter one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

NAME = "fidelity"
BACKEND = "benchlab.frameworks.pytorch.backend:PyTorchBackend"
GOAL = (0.97, 1.03)
LEVEL = 0.95
CHILD_TIMEOUT_S = 300
TOOLS = ("pytorch", "openvino", "tflite")
# A full run's defaults, sized so that all 18 cells (3 models x 3 tools x 2 thread counts)
# take under 20 minutes (about 18 estimated) on a 2-vCPU VM: docs/performance.md section 2.
DEFAULT_ROUNDS = 12
DEFAULT_RUN_TIME_S = 0.5
SMOKE_RUN_TIME_S = 0.05
# The diagnostics of a Timer child take this many times --run-time unless --diag-time says.
DIAG_FACTOR = 2.5
# Fewest iterations a native-tool process runs, however fast the model.
MIN_NATIVE_ITERATIONS = 20


def _singles(call: Any, seconds: float, out: list[int]) -> None:
    """Time ``call`` one invocation at a time for ``seconds``, appending nanoseconds to ``out``."""
    clock = time.perf_counter_ns
    end = clock() + int(seconds * 1e9)
    while True:
        t0 = clock()
        call()
        t1 = clock()
        out.append(t1 - t0)
        if t1 >= end:
            break


def timer_child(raw: str) -> int:
    """In a fresh process: time one zoo model with torch.utils.benchmark.Timer, print JSON.

    First the headline reference, one ``blocked_autorange(min_run_time=run_time)`` under
    inference mode. Then the diagnostics, ``diag_time`` seconds in all, in short chunks that
    take turns (so the machine's slow phases spread over all of them): Timer under inference
    mode, no_grad and autograd,
    and single calls timed one at a time, under one outer inference mode or entering it per
    call exactly as ``PyTorchBackend.prepare``'s closure does.
    """
    import torch
    import torch.utils.benchmark as tb

    from benchlab.frameworks.pytorch.backend import build_from_entry
    from benchlab.runner.config import InputConfig
    from benchlab.runner.loop import make_inputs

    job = json.loads(raw)
    threads, run_time = int(job["threads"]), float(job["run_time"])
    diag_time = float(job.get("diag_time", DIAG_FACTOR * run_time))
    torch.set_num_threads(threads)  # as the runner's backend does, before building the model
    model = build_from_entry(job["entry"]).eval()
    specs = [InputConfig(**spec) for spec in job["inputs"]]
    # The same tensors benchlab's runner builds: make_inputs with seed 0, then from_numpy.
    args = [torch.from_numpy(a) for a in make_inputs(specs, job["seed"]).values()]
    # stmt "m(x)" as a user would write it; "m(*a)" only for a model with several inputs.
    stmt = "m(x)" if len(args) == 1 else "m(*a)"
    timer = tb.Timer(stmt=stmt, globals={"m": model, "x": args[0], "a": args}, num_threads=threads)

    def blocks(context: Any, seconds: float, out: list[float]) -> float:
        with context():
            measurement = timer.blocked_autorange(min_run_time=seconds)
        out.extend(measurement.times)
        return float(measurement.median)

    def once(seconds: float, out: list[int]) -> None:
        with torch.inference_mode():
            _singles(lambda: model(*args), seconds, out)

    def per_call() -> Any:
        with torch.inference_mode():
            return model(*args)

    headline = blocks(torch.inference_mode, run_time, [])
    pools: dict[str, list[Any]] = {k: [] for k in ("inf", "no_grad", "grad", "once", "per_call")}
    steps = {
        "inf": lambda s: blocks(torch.inference_mode, s, pools["inf"]),
        "no_grad": lambda s: blocks(torch.no_grad, s, pools["no_grad"]),
        "grad": lambda s: blocks(torch.enable_grad, s, pools["grad"]),
        "once": lambda s: once(s, pools["once"]),
        "per_call": lambda s: _singles(per_call, s, pools["per_call"]),
    }
    # diag_time seconds in all (two turns at least): turns of one chunk per diagnostic, in
    # rotating order.
    chunk = min(0.1, max(diag_time, 1e-3) / 10)
    order = list(steps)
    for turn in range(max(2, round(diag_time / len(order) / chunk))):
        shift = turn % len(order)
        for name in order[shift:] + order[:shift]:
            steps[name](chunk)
    ms = {
        k: statistics.median(v) * (1e3 if k in ("inf", "no_grad", "grad") else 1e-6)
        for k, v in pools.items()
    }
    result = {
        "timer_ms": headline * 1e3,
        "diag_timer_inference_mode_ms": ms["inf"],
        "diag_timer_no_grad_ms": ms["no_grad"],
        "diag_timer_grad_ms": ms["grad"],
        "diag_single_once_ms": ms["once"],
        "diag_single_per_call_ms": ms["per_call"],
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(result))
    return 0


def _run_child(argv: list[str], threads: int) -> str:
    from benchlab.frameworks.base import thread_env

    env = {**os.environ, **thread_env(threads)}
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=env,
        timeout=CHILD_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc.stdout


def benchlab_median(model: str, threads: int, run_time: float) -> float:
    """Median NET latency (ms) of one real runner process, started as the harness starts it."""
    from benchlab.protocol.lines import parse_output
    from benchlab.zoo import ZOO

    zoo = ZOO[model]
    config = {
        "backend": BACKEND,
        "model_path": None,
        "entry": zoo.entry,
        "inputs": [
            {"name": f"input{i}", "shape": list(s), "dtype": "float32"}
            for i, s in enumerate(zoo.input_shapes)
        ],
        "warmup": 5,
        "iterations": 30,
        "min_time": run_time,
        "max_time": None,
        "target_ci": None,
        "threads": threads,
        "profile_ops": False,
        "seed": 0,
        "options": {"mode": "eager"},
    }
    out = _run_child(
        [sys.executable, "-m", "benchlab.runner", json.dumps(config, sort_keys=True)], threads
    )
    parsed = parse_output(out)
    if parsed.details.get("threads") != threads:
        raise RuntimeError(f"runner used {parsed.details.get('threads')} threads, not {threads}")
    latencies = [s.value for s in parsed.samples if s.type == "NET" and s.metric == "latency"]
    return statistics.median(latencies)


def timer_figures(model: str, threads: int, run_time: float,
                  diag_time: float) -> dict[str, float]:
    """Timer medians (ms) and diagnostics from one fresh ``--timer-child`` process."""
    from benchlab.zoo import ZOO

    zoo = ZOO[model]
    job = {
        "entry": zoo.entry,
        "inputs": [
            {"name": f"input{i}", "shape": list(s), "dtype": "float32"}
            for i, s in enumerate(zoo.input_shapes)
        ],
        "threads": threads,
        "run_time": run_time,
        "diag_time": diag_time,
        "seed": 0,
    }
    out = _run_child([sys.executable, __file__, "--timer-child", json.dumps(job)], threads)
    result = json.loads(out.strip().splitlines()[-1])
    if result.pop("threads") != threads:
        raise RuntimeError(f"Timer child did not run with {threads} threads")
    return result


def _tool_bin(name: str) -> str | None:
    """A console script installed beside this Python (the venv's bin directory)."""
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else None


def _benchlab_native(spec: Any, framework: str, options: dict[str, Any], threads: int,
                     iterations: int, min_time: float = 0.0) -> tuple[float, int]:
    """Median latency (ms) and sample count of one runner process started exactly as the
    harness starts it: ``iterations`` timed calls, extended to ``min_time`` seconds."""
    from dataclasses import replace as dc_replace

    from benchlab.frameworks.base import JobContext
    from benchlab.plugins import load_framework
    from benchlab.protocol.lines import parse_output
    from benchlab.spec.types import FrameworkConfig

    adapter = load_framework(framework)
    test = dc_replace(spec.tests[0], warmup=5, iter=iterations, min_time=min_time, repeat=1,
                      threads=threads)
    files = {f"files.{k}": ref.location for k, ref in spec.model.files.items()}
    ctx = JobContext(spec=spec, test=test, config=FrameworkConfig(framework, options),
                     workdir=".", python=sys.executable, files=files, placeholders={})
    invocation = adapter.invocations(ctx)[-1]
    env = {**os.environ, **invocation.env}
    proc = subprocess.run(list(invocation.argv), capture_output=True, text=True, env=env,
                          timeout=CHILD_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"benchlab {framework} failed:\n{proc.stderr[-2000:]}")
    parsed = parse_output(proc.stdout)
    latencies = [s.value for s in parsed.samples if s.type == "NET" and s.metric == "latency"]
    return statistics.median(latencies), len(latencies)


def _openvino_tool(spec: Any, threads: int, iterations: int) -> float:
    import tempfile

    shape = ",".join(str(d) for d in spec.tests[0].inputs[0].shape)
    with tempfile.TemporaryDirectory() as tmp:
        # benchmark_app finds the weights beside the .xml; the cache keeps them apart.
        xml = Path(tmp) / "model.xml"
        xml.symlink_to(spec.model.files["openvino"].location)
        (Path(tmp) / "model.bin").symlink_to(spec.model.files["openvino_bin"].location)
        out = _run_child([_tool_bin("benchmark_app") or "benchmark_app", "-m", str(xml), "-d",
                          "CPU", "-hint", "none", "-nstreams", "1", "-nthreads", str(threads),
                          "-api", "sync", "-infer_precision", "f32", "-niter", str(iterations),
                          "-shape", f"[{shape}]"], threads)
    # "Median: 654.10 us" when the average latency is under 1 ms, else "Median: 1.02 ms".
    scale = {"ms": 1.0, "us": 1e-3, "s": 1e3}
    for line in out.splitlines():
        if "Median:" in line:
            value, unit = line.split("Median:")[1].split()[:2]
            if unit in scale:
                return float(value) * scale[unit]
    raise RuntimeError(f"benchmark_app printed no median in ms or us:\n{out[-2000:]}")


def _litert_tool(spec: Any, threads: int, iterations: int) -> float:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "r.json"
        _run_child([_tool_bin("litert-benchmark") or "litert-benchmark", "--model",
                    spec.model.files["tflite"].location, "--num_threads", str(threads),
                    "--num_runs", str(iterations), "--warmup_runs", "5", "--result_json",
                    str(report)], threads)
        return float(json.loads(report.read_text())["latency"]["median_ms"])


def abba(rounds: int, benchlab: Callable[[], dict[str, float]],
         tool: Callable[[], dict[str, float]]) -> list[dict[str, Any]]:
    """``rounds`` pairs of fresh processes started back to back, in ABBA order.

    benchlab goes first in even rounds and the tool in odd ones, so the sequence of processes
    is B T T B B T ... Each side returns its figures as a dict; a round is both dicts merged,
    with which side went first and the one-minute load average just before the round.
    """
    done = []
    for r in range(rounds):
        load = os.getloadavg()[0]
        if r % 2 == 0:
            bl = benchlab()
            tl = tool()
        else:
            tl = tool()
            bl = benchlab()
        done.append({"first": "benchlab" if r % 2 == 0 else "tool", "load1": load, **bl, **tl})
    return done


def min_rounds(level: float) -> int:
    """Fewest rounds for which a Hodges-Lehmann interval can reach ``level``.

    The widest interval, from the smallest to the largest log-ratio, misses the centre only
    when all n rounds fall on the same side of it, which happens with probability 2**(1 - n).
    """
    n = 1
    while 2.0 ** (1 - n) > 1.0 - level:
        n += 1
    return n


def ratio_ci(benchlab_ms: Sequence[float], tool_ms: Sequence[float], level: float = LEVEL,
             goal: tuple[float, float] = GOAL) -> dict[str, Any]:
    """benchlab/tool ratio of one cell with its confidence interval, from paired rounds.

    d = log(benchlab / tool) per round; the ratio is exp of the Hodges-Lehmann centre of the
    d's, the interval exp of its bounds at ``level``. ``coverage`` is the interval's real
    coverage: ``level``, or less with too few rounds (then the verdict is ``undecided``).
    The verdict is ``met`` when the interval lies inside ``goal``, ``missed`` when it lies
    wholly outside, ``undecided`` when it straddles an edge.
    """
    from benchlab.ab.stats import hodges_lehmann, log_ratios

    d = log_ratios(tool_ms, benchlab_ms)  # log(benchlab) - log(tool), one per round
    centre, low, high = hodges_lehmann(d, level)
    n = int(d.size)
    coverage = level if n >= min_rounds(level) else 1.0 - 2.0 ** (1 - n)
    lo, hi = math.exp(low), math.exp(high)
    if coverage < level:
        verdict = "undecided"
    elif goal[0] <= lo and hi <= goal[1]:
        verdict = "met"
    elif hi < goal[0] or lo > goal[1]:
        verdict = "missed"
    else:
        verdict = "undecided"
    return {"ratio": math.exp(centre), "low": lo, "high": hi, "level": level,
            "coverage": coverage, "rounds": n, "verdict": verdict}


def summarise(per_round: list[dict[str, Any]], tool_key: str, level: float) -> dict[str, Any]:
    """One cell's figures: min/median/max over rounds, the ratio with its interval, the rounds.

    ``ratio`` stays the min/median/max of the per-round ratios (a diagnostic of their spread);
    ``ratio_ci`` is the cell's figure and ``goal_met`` says whether its verdict is ``met``.
    """
    from _common import spread

    bl = [r["benchlab_ms"] for r in per_round]
    tl = [r[tool_key] for r in per_round]
    ci = ratio_ci(bl, tl, level)
    return {
        "benchlab_ms": spread(bl),
        tool_key: spread(tl),
        "ratio": spread([b / t for b, t in zip(bl, tl, strict=True)]),
        "ratio_ci": ci,
        "load1": spread([r["load1"] for r in per_round]),
        "goal_met": ci["verdict"] == "met",
        "per_round": per_round,
    }


def _header(level: float) -> str:
    return (f"{'cell':<24}{'benchlab':>10}{'tool':>10}{'ratio':>8}{f'{level:.0%} CI':>16}"
            f"{'n':>4}{'min':>7}{'max':>7}{'load1':>7}{'wall s':>8}  verdict")


def _row(name: str, entry: dict[str, Any], tool_key: str) -> str:
    ci, spread_ = entry["ratio_ci"], entry["ratio"]
    verdict = ci["verdict"]
    if ci["coverage"] < ci["level"]:
        verdict += f" (fewer than {min_rounds(ci['level'])} rounds)"
    interval = f"{ci['low']:.3f}-{ci['high']:.3f}"
    return (f"{name:<24}{entry['benchlab_ms']['median']:>10.3f}{entry[tool_key]['median']:>10.3f}"
            f"{ci['ratio']:>8.3f}{interval:>16}{ci['rounds']:>4}{spread_['min']:>7.3f}"
            f"{spread_['max']:>7.3f}{entry['load1']['median']:>7.2f}{entry['wall_s']:>8.1f}"
            f"  {verdict}")


# Diagnostic ratios: name -> (numerator, denominator) among one round's figures.
DIAGNOSTICS = {
    "single_over_blocks": ("diag_single_once_ms", "diag_timer_inference_mode_ms"),
    "per_call_over_once": ("diag_single_per_call_ms", "diag_single_once_ms"),
    "no_grad_over_inference": ("diag_timer_no_grad_ms", "diag_timer_inference_mode_ms"),
    "grad_over_inference": ("diag_timer_grad_ms", "diag_timer_inference_mode_ms"),
    "benchlab_over_child_singles": ("benchlab_ms", "diag_single_per_call_ms"),
}
# Their column headers in the printed table.
DIAG_HEADERS = ("single/blocks", "percall/once", "nograd/inf", "grad/inf", "bl/childsingle")


def pytorch_figures(models: Sequence[str], thread_counts: Sequence[int], rounds: int,
                    run_time: float, diag_time: float, level: float) -> dict[str, Any]:
    """benchlab's PyTorch runner vs torch.utils.benchmark.Timer, one cell per model x threads."""
    from _common import spread

    print(f"PyTorch: benchlab vs torch.utils.benchmark.Timer (tool ms = Timer median), "
          f"{rounds} ABBA rounds per cell, ratio = benchlab/Timer", flush=True)
    print(_header(level), flush=True)
    figures: dict[str, Any] = {}
    for model in models:
        for threads in thread_counts:
            started = time.perf_counter()
            per_round = abba(
                rounds,
                lambda m=model, t=threads: {"benchlab_ms": benchlab_median(m, t, run_time)},
                lambda m=model, t=threads: timer_figures(m, t, run_time, diag_time),
            )
            entry = summarise(per_round, "timer_ms", level)
            for name, (num, den) in DIAGNOSTICS.items():
                entry[name] = spread([r[num] / r[den] for r in per_round])
            entry["wall_s"] = time.perf_counter() - started
            figures[f"{model}/t{threads}"] = entry
            print(_row(f"{model}/t{threads}", entry, "timer_ms"), flush=True)
    print("diagnostics, median over rounds of per-round ratios:")
    print(f"{'cell':<24}" + "".join(f"{h:>15}" for h in DIAG_HEADERS))
    for name, entry in figures.items():
        print(f"{name:<24}" + "".join(f"{entry[d]['median']:>15.3f}" for d in DIAGNOSTICS))
    return figures


# Native tools: framework -> (benchlab framework options, file key, tool, tool's measurement).
NATIVE = {"openvino": ({"precision": "f32"}, "openvino", "benchmark_app", _openvino_tool),
          "tflite": ({}, "tflite", "litert-benchmark", _litert_tool)}


def native_figures(models: Sequence[str], thread_counts: Sequence[int], frameworks: Sequence[str],
                   rounds: int, run_time: float, level: float, cache_dir: Path | None = None,
                   ) -> tuple[dict[str, Any], float]:
    """benchlab vs OpenVINO's benchmark_app and LiteRT's litert-benchmark, same files
    (exported into ``cache_dir``, or a fresh cache when None).

    Returns the cells and the seconds spent exporting the zoo files they need.
    """
    import tempfile

    from benchlab.spec.artifacts import ArtifactCache
    from benchlab.exporting.specs import spec_of
    from benchlab.zoo import export_models

    print(f"native tools: benchlab vs the runtime's benchmark tool, {rounds} ABBA rounds per "
          f"cell, ratio = benchlab/tool", flush=True)
    # ONNX too: the zoo's OpenVINO file is converted from it, so this is the file users get.
    formats = ["onnx", *(NATIVE[f][1] for f in frameworks)]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="benchlab-fidelity-") as tmp:
        cache = ArtifactCache(cache_dir or Path(tmp))
        started = time.perf_counter()
        specs = {e.model.name: spec_of(e, cache)
                 for e in export_models(list(models), cache, formats=formats)}
        export_s = time.perf_counter() - started
        print(f"exported {', '.join(formats)} for {', '.join(models)} in {export_s:.1f} s")
        print(_header(level), flush=True)
        for model in models:
            spec = specs[model]
            for framework in frameworks:
                options, key, tool, measure = NATIVE[framework]
                for threads in thread_counts:
                    name = f"{model}/{framework}/t{threads}"
                    if key not in spec.model.files or _tool_bin(tool) is None:
                        figures[name] = {"skipped": f"no {key} file or no {tool} here"}
                        print(f"{name:<24} skipped: {figures[name]['skipped']}", flush=True)
                        continue
                    started = time.perf_counter()
                    # Uncounted: how many iterations fill run_time; every process then runs them.
                    _, count = _benchlab_native(spec, framework, options, threads,
                                                MIN_NATIVE_ITERATIONS, run_time)
                    iterations = max(MIN_NATIVE_ITERATIONS, count)
                    per_round = abba(
                        rounds,
                        lambda f=framework, o=options, t=threads, n=iterations: {
                            "benchlab_ms": _benchlab_native(spec, f, o, t, n)[0]},
                        lambda m=measure, t=threads, n=iterations: {"tool_ms": m(spec, t, n)},
                    )
                    entry = {**summarise(per_round, "tool_ms", level), "tool": tool,
                             "iterations": iterations,
                             "wall_s": time.perf_counter() - started}
                    figures[name] = entry
                    print(_row(name, entry, "tool_ms"), flush=True)
    return figures, export_s


def _csv(text: str, cast: Callable[[str], Any]) -> tuple[Any, ...]:
    return tuple(cast(v.strip()) for v in text.split(",") if v.strip())


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-time", type=float, default=None,
                        help=f"seconds each process times (default {DEFAULT_RUN_TIME_S}; "
                             f"{SMOKE_RUN_TIME_S} with --smoke); native tools get the "
                             "iteration count that fills it")
    parser.add_argument("--diag-time", type=float, default=None,
                        help=f"seconds of diagnostics in each Timer process (default "
                             f"{DIAG_FACTOR} x --run-time)")
    parser.add_argument("--models", default=None,
                        help="comma-separated zoo models (default: the small ones; mlp with "
                             "--smoke)")
    parser.add_argument("--threads", default=None,
                        help="comma-separated thread counts (default 1,2; 1 with --smoke)")
    parser.add_argument("--tools", default=",".join(TOOLS),
                        help=f"comma-separated, among {', '.join(TOOLS)} (default: all)")
    parser.add_argument("--level", type=float, default=LEVEL,
                        help="confidence level of each cell's interval (default 0.95)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="artifact cache the native tools' files are exported into "
                             "(default: an empty one; the smoke test passes its session's)")


def main() -> int:
    """Measure, print the tables and write ``bench/results/fidelity.json``."""
    from _common import parse_args, write_result

    from benchlab.zoo import SMALL_MODELS

    args = parse_args(__doc__.splitlines()[0], repeats=None, extra=_options,
                      repeats_help=f"ABBA rounds (pairs of processes) per cell (default "
                                   f"{DEFAULT_ROUNDS}; 2 with --smoke)")
    if args.repeats is None:
        args.repeats = 2 if args.smoke else DEFAULT_ROUNDS
    run_time = args.run_time or (SMOKE_RUN_TIME_S if args.smoke else DEFAULT_RUN_TIME_S)
    diag_time = args.diag_time if args.diag_time is not None else DIAG_FACTOR * run_time
    models = _csv(args.models, str) if args.models else (("mlp",) if args.smoke
                                                          else SMALL_MODELS)
    thread_counts = _csv(args.threads, int) if args.threads else ((1,) if args.smoke
                                                                  else (1, 2))
    tools = _csv(args.tools, str)
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown or args.repeats < 1 or run_time <= 0 or diag_time < 0 \
            or not 0 < args.level < 1:
        sys.exit(f"fidelity: need --tools among {', '.join(TOOLS)} (not {unknown}), "
                 "--repeats >= 1, --run-time > 0, --diag-time >= 0 and 0 < --level < 1")
    started = time.perf_counter()
    figures: dict[str, Any] = {
        "goal": list(GOAL), "level": args.level, "rounds": args.repeats,
        "run_time_s": run_time, "diag_time_s": diag_time, "tools": list(tools),
    }
    if "pytorch" in tools:
        figures["pytorch"] = pytorch_figures(models, thread_counts, args.repeats, run_time,
                                             diag_time, args.level)
    native_tools = [t for t in TOOLS if t in tools and t in NATIVE]
    if native_tools:
        figures["native"], figures["export_s"] = native_figures(
            models, thread_counts, native_tools, args.repeats, run_time, args.level,
            args.cache_dir)
    measured = {**{f"pytorch:{k}": v for k, v in figures.get("pytorch", {}).items()},
                **{k: v for k, v in figures.get("native", {}).items() if "skipped" not in v}}
    verdicts = [v["ratio_ci"]["verdict"] for v in measured.values()]
    figures["verdicts"] = {v: verdicts.count(v) for v in ("met", "undecided", "missed")}
    # Every cell of its kind measured and met: PyTorch (as before) and the native tools.
    torch_cells = figures.get("pytorch", {}).values()
    native_cells = figures.get("native", {}).values()
    figures["goal_met"] = bool(torch_cells) and all(c["goal_met"] for c in torch_cells)
    figures["native_goal_met"] = bool(native_cells) and all(
        c.get("goal_met", False) for c in native_cells)
    figures["wall_s"] = time.perf_counter() - started
    counts = ", ".join(f"{n} {v}" for v, n in figures["verdicts"].items())
    print(f"{len(measured)} cells: {counts}; {figures['wall_s']:.0f} s in all")
    print(f"wrote {write_result(NAME, args, figures)}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--timer-child":
        sys.exit(timer_child(sys.argv[2]))
    sys.exit(main())

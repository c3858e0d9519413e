"""Cost per job: what one fresh-process repetition spends outside the timed loop.

For every framework configuration the zoo runs by default (pytorch eager, pytorch torchscript,
onnxruntime) and each zoo model, one runner process is split into:

* ``wall``: the runner subprocess from spawn to exit, as ``HostTarget.run`` reports it;
* ``import``, ``load``, ``first``: what the runner itself reports (``import_time``,
  ``load_time``, ``first_inference``);
* ``timed``: the sum of the timed iterations' latencies;
* ``rest``: ``wall - (import + load + first + timed)``: interpreter start, benchlab's own
  imports, input synthesis, printing and process exit.

Two floors run through the same target, interleaved with the jobs: ``python -c pass`` and
``python -c 'import benchlab.runner.loop'`` (the runner's imports without a runtime). The
per-process jobs run with no warm-up and a short fixed loop, so ``rest`` needs no estimate.

The zoo export into an empty artifact cache is timed on its own. Then the whole default sweep
(``benchlab run`` with no arguments, its own temporary store and artifact cache) is timed end
to end: once with an empty cache, which includes exporting the zoo, and then warm.

    python bench/job_cost.py [--smoke] [--repeats N] [--out FILE]

``--smoke``: the zoo's mlp on those configurations only (ONNX Runtime's fp32 and int8, PyTorch
eager and TorchScript), one timed iteration, and a sweep of ONNX Runtime alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, spread, write_result

from benchlab import TestOverrides
from benchlab.spec.artifacts import ArtifactCache
from benchlab.harness.planner import plan
from benchlab.harness.sweep import parse_framework
from benchlab.harness.jobrun import run_job
from benchlab.schema.result import Status
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.host import HostTarget
from benchlab.zoo import SMALL_MODELS, zoo_specs

NAME = "job_cost"
PARTS = ("wall", "import", "load", "first", "timed", "rest")
_RUNNER_KEYS = {
    "import": "NET import_time",
    "load": "NET load_time",
    "first": "NET first_inference",
}
FLOORS = {
    "python -c pass": "pass",
    "python -c 'import benchlab.runner.loop'": "import benchlab.runner.loop",
}


class RecordingTarget:
    """The host target, remembering every command result it returns (in order)."""

    def __init__(self, inner: HostTarget) -> None:
        self.inner = inner
        self.results: list[CommandResult] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, request: RunRequest) -> CommandResult:
        """Run through the host target and keep the result."""
        result = self.inner.run(request)
        self.results.append(result)
        return result


def _job_label(job: Any) -> str:
    options = ",".join(f"{k}={v}" for k, v in sorted(job.config.options.items()))
    return f"{job.spec.model.name} @ {job.config.name}" + (f":{options}" if options else "")


def _split(result: Any, command: CommandResult) -> dict[str, float]:
    """One repetition's wall time split into its parts, in milliseconds."""
    values: dict[str, list[float]] = {}
    for sample in result.samples:
        values.setdefault(sample.key, []).append(sample.value)
    parts = {name: values[key][0] for name, key in _RUNNER_KEYS.items()}
    parts["timed"] = sum(values["NET latency"])
    parts["wall"] = command.duration * 1000.0
    parts["rest"] = parts["wall"] - sum(parts[p] for p in ("import", "load", "first", "timed"))
    return parts


def export_zoo(models: tuple[str, ...], cache: ArtifactCache) -> tuple[list[Any], float]:
    """The zoo's specs, exported into an empty ``cache``, and the seconds the export took."""
    t0 = time.perf_counter()
    specs = zoo_specs(list(models), cache)
    return specs, time.perf_counter() - t0


def per_process(
    specs: list[Any], rounds: int, iterations: int, cache: ArtifactCache,
    frameworks: list[str] | None = None,
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """Split of one runner process per job, and the floors, over ``rounds`` interleaved rounds.
    ``frameworks``: only these configurations (default: each spec's own)."""
    target = RecordingTarget(HostTarget())
    overrides = TestOverrides(warmup=0, iter=iterations, min_time=0.0, repeat=1)
    configs = [parse_framework(text) for text in frameworks] if frameworks else None
    sweep = plan(specs, target, frameworks=configs,  # type: ignore[arg-type]
                 overrides=overrides)
    if not sweep.jobs:
        raise SystemExit(f"no jobs planned; skipped: {sweep.skipped}")
    parts: dict[str, dict[str, list[float]]] = {
        _job_label(job): {p: [] for p in PARTS} for job in sweep.jobs
    }
    floors: dict[str, list[float]] = {name: [] for name in FLOORS}
    for _ in range(rounds):
        for name, statement in FLOORS.items():
            outcome = target.run(RunRequest(argv=[sys.executable, "-c", statement]))
            if not outcome.ok:
                raise SystemExit(f"{name} failed: {outcome.stderr[-2000:]}")
            floors[name].append(outcome.duration * 1000.0)
        for job in sweep.jobs:
            before = len(target.results)
            result = run_job(job, target, cache)  # type: ignore[arg-type]
            if result.status is not Status.OK:
                raise SystemExit(f"{_job_label(job)}: {result.status.value}: {result.error}")
            # One runner process per repetition: exactly one command ran for this job.
            (command,) = target.results[before:]
            for part, value in _split(result, command).items():
                parts[_job_label(job)][part].append(value)
    return (
        {label: {p: spread(v) for p, v in split.items()} for label, split in parts.items()},
        {name: spread(v) for name, v in floors.items()},
    )


def _benchlab_run(argv: list[str], env: Mapping[str, str]) -> float:
    """Wall seconds of one ``benchlab run`` in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "benchlab", "run", "-q", *argv],
        check=False,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"benchlab run {argv} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return elapsed


def sweep_cost(tmp: Path, runs: int, sweep_args: list[str], cache_dir: Path) -> dict[str, Any]:
    """End-to-end cost of ``benchlab run``: first with ``cache_dir`` as given (empty: the zoo
    is exported), then warm; and, of the warm runs, what the runners measured versus the rest."""
    from benchlab import open_store

    db = tmp / "sweep.db"
    common = ["--db", str(db), "--cache-dir", str(cache_dir), *sweep_args]
    # Keep the user's default store and cache out of it even if an option were ignored.
    env = {"XDG_DATA_HOME": str(tmp / "xdg-data"), "XDG_CACHE_HOME": str(tmp / "xdg-cache")}
    cold_s = _benchlab_run(common, env)
    warm_s = [_benchlab_run(common, env) for _ in range(runs)]

    with open_store(db) as store:
        latest = store.get_run("latest")
        results = store.results(latest.id, with_samples=True)
    processes = sum(int(r.details.get("repetitions", 0)) for r in results)
    runner_ms: dict[str, float] = dict.fromkeys(("import", "load", "first", "timed"), 0.0)
    for result in results:
        for sample in result.samples:
            for part, key in (*_RUNNER_KEYS.items(), ("timed", "NET latency")):
                if sample.key == key:
                    runner_ms[part] += sample.value
    return {
        "jobs": len(results),
        "processes": processes,
        "first_run_s": cold_s,
        "warm_run_s": spread(warm_s),
        "last_warm_run_runner_s": {k: v / 1000.0 for k, v in runner_ms.items()},
        "last_warm_run_other_s": warm_s[-1] - sum(runner_ms.values()) / 1000.0,
    }


def main() -> None:
    """Measure, print two tables, write the JSON result."""
    args = parse_args(__doc__.splitlines()[0], extra=lambda parser: parser.add_argument(
        "--cache-dir", type=Path, default=None,
        help="artifact cache to export into (default: an empty one, so the export is timed "
             "cold; the smoke test passes its session's cache)"))
    if args.smoke:
        models: tuple[str, ...] = ("mlp",)
        iterations = 1
        # The configurations the module text names, not every installed framework's (each
        # one more process importing its runtime).
        frameworks: list[str] | None = [
            "onnxruntime", "pytorch:mode=eager", "pytorch:mode=torchscript"]
        sweep_args = [
            "--models",
            "mlp",
            "-f",
            "onnxruntime",
            "--warmup",
            "0",
            "--iter",
            "1",
            "--min-time",
            "0",
            "--repeat",
            "1",
        ]
    else:
        # The sweep these figures were first taken on: the small models on PyTorch eager and
        # TorchScript and ONNX Runtime fp32 (benchlab's default set before the full matrix).
        models, iterations, frameworks = tuple(SMALL_MODELS), 10, None
        sweep_args = ["--models", "small", "-f", "pytorch:mode=eager", "-f",
                      "pytorch:mode=torchscript", "-f", "onnxruntime:precision=fp32"]
    tmp = Path(tempfile.mkdtemp(prefix="benchlab-job-cost-"))
    try:
        cache = ArtifactCache(args.cache_dir or tmp / "cache")
        specs, export_s = export_zoo(models, cache)
        jobs, floors = per_process(specs, args.repeats, iterations, cache, frameworks)
        # Smoke runs reuse the exported zoo to stay short; a real run starts the sweep cold.
        sweep_cache = cache.root if args.smoke else tmp / "sweep-cache"
        sweep = sweep_cost(tmp, args.repeats, sweep_args, sweep_cache)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    figures = {
        "iterations_per_process": iterations,
        "zoo_export_s": export_s,
        "per_process_ms": jobs,
        "floors_ms": floors,
        "sweep": {"args": sweep_args, **sweep},
    }

    width = max(len(label) for label in jobs)
    print(
        f"per fresh process, median ms over {args.repeats} rounds ({iterations} timed iterations)"
    )
    print(f"{'job':<{width}} " + " ".join(f"{p:>7}" for p in PARTS))
    for label, split in jobs.items():
        print(f"{label:<{width}} " + " ".join(f"{split[p]['median']:>7.0f}" for p in PARTS))
    for name, stats in floors.items():
        print(
            f"floor {name}: median {stats['median']:.0f} ms "
            f"(min {stats['min']:.0f}, max {stats['max']:.0f})"
        )
    runner = sweep["last_warm_run_runner_s"]
    print(
        f"sweep `benchlab run {' '.join(sweep_args)}`: {sweep['jobs']} jobs, "
        f"{sweep['processes']} processes"
    )
    print(
        f"  zoo export alone {export_s:.1f} s; first run (cold cache) "
        f"{sweep['first_run_s']:.1f} s; "
        f"warm run median {sweep['warm_run_s']['median']:.1f} s "
        f"(min {sweep['warm_run_s']['min']:.1f}, max {sweep['warm_run_s']['max']:.1f})"
    )
    print(
        "  last warm run: runners reported "
        + ", ".join(f"{k} {v:.1f} s" for k, v in runner.items())
        + f"; everything else {sweep['last_warm_run_other_s']:.1f} s"
    )
    out = write_result(NAME, args, figures)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

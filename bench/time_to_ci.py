"""Time to a trustworthy number: benchlab's adaptive stop against other tools' fixed defaults.

For each zoo default model, one job is measured under each stopping policy, interleaved
round by round so that drift hits every policy alike. Every policy runs through the same
benchlab runner (same timed region, same fresh process), so only the stopping rule differs:

* ``fai-pep``: its shipped specs' delay tests, warm-up 1 and 50 iterations in one process
  (``specifications/models/caffe2/squeezenet/squeezenet.json``);
* ``tflite``: ``benchmark_model``'s defaults, 50 runs and at least 1 s, one warm-up run
  (the tool's documented defaults; its 0.5 s warm-up floor is not reproduced);
* ``optimum``: optimum-benchmark's defaults, 10 warm-up iterations, then at least 10
  iterations and 10 s (its documented scenario defaults);
* ``benchlab``: ``target_ci=1%`` — measure until the median's 95% CI is within ±1%.

Reported per policy and model: the job's wall time (process start included), the median's
95% CI half-width it reached (the interval those tools could report from their iterations), and
the spread of the medians across rounds — a reminder that a tight within-process interval
does not bound process-to-process variation.

    python bench/time_to_ci.py --repeats 5
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import parse_args, spread, write_result

from benchlab.spec.artifacts import ArtifactCache
from benchlab.harness.planner import plan
from benchlab.harness.overrides import TestOverrides
from benchlab.harness.jobrun import run_job
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.host import HostTarget
from benchlab.zoo import SMALL_MODELS, zoo_specs

POLICIES: dict[str, TestOverrides] = {
    "fai-pep": TestOverrides(warmup=1, iter=50, min_time=0.0, repeat=1),
    "tflite": TestOverrides(warmup=1, iter=50, min_time=1.0, repeat=1),
    "optimum": TestOverrides(warmup=10, iter=10, min_time=10.0, repeat=1),
    "benchlab": TestOverrides(warmup=1, iter=10, min_time=0.0, repeat=1, target_ci=0.01),
}
SMOKE_POLICIES: dict[str, TestOverrides] = {
    "fai-pep": TestOverrides(warmup=1, iter=10, min_time=0.0, repeat=1),
    "benchlab": TestOverrides(warmup=1, iter=5, min_time=0.0, repeat=1, target_ci=0.5),
}
BUDGET_S = 60.0


def main() -> None:
    """Measure every policy on every model, interleaved, and write the figures."""
    args = parse_args(__doc__.splitlines()[0], extra=lambda parser: parser.add_argument(
        "--cache-dir", type=Path, default=None,
        help="artifact cache the models are exported into (default: an empty one; the smoke "
             "test passes its session's cache)"))
    policies = SMOKE_POLICIES if args.smoke else POLICIES
    models = ("mlp",) if args.smoke else SMALL_MODELS
    # One job per model and policy: fp32 (without a precision ONNX Runtime also plans int8).
    framework = FrameworkConfig("onnxruntime", {"precision": "fp32"})
    target = HostTarget()
    with tempfile.TemporaryDirectory(prefix="bench-ttci-") as tmp:
        cache = ArtifactCache(args.cache_dir or Path(tmp) / "cache")
        specs = zoo_specs(models, cache)
        jobs = {
            name: plan(specs, target, frameworks=[framework], overrides=overrides).jobs
            for name, overrides in policies.items()
        }
        samples: dict[tuple[str, str], dict[str, list[float]]] = {}
        for round_ in range(args.repeats):
            for index in range(len(models)):
                order = list(policies) if round_ % 2 == 0 else list(reversed(policies))
                for policy in order:
                    job = jobs[policy][index]
                    started = time.perf_counter()
                    result = run_job(job, target, cache, time_budget=BUDGET_S)
                    wall = time.perf_counter() - started
                    if not result.ok:
                        sys.exit(f"{policy} {job.identity.model_name}: {result.error}")
                    latency = result.summaries["NET latency"]
                    cell = samples.setdefault((job.identity.model_name, policy), {
                        "wall_s": [], "ci_rel_halfwidth": [], "median_ms": [], "count": []})
                    cell["wall_s"].append(wall)
                    cell["ci_rel_halfwidth"].append(latency.ci_rel_halfwidth)
                    cell["median_ms"].append(latency.p50)
                    cell["count"].append(float(latency.count))
    figures = {}
    print(f"{'model':12} {'policy':9} {'wall s (min/med/max)':>24} {'±CI med':>8} "
          f"{'n med':>7} {'median spread':>14}")
    for (model, policy), cell in samples.items():
        medians = cell["median_ms"]
        between = (max(medians) / min(medians) - 1.0) if len(medians) > 1 else 0.0
        figures[f"{model}/{policy}"] = {
            "wall_s": spread(cell["wall_s"]),
            "ci_rel_halfwidth": spread(cell["ci_rel_halfwidth"]),
            "samples": spread(cell["count"]),
            "median_ms": spread(medians),
            "between_round_median_spread": between,
        }
        w = figures[f"{model}/{policy}"]["wall_s"]
        print(f"{model:12} {policy:9} {w['min']:7.2f}/{w['median']:7.2f}/{w['max']:7.2f} "
              f"{statistics.median(cell['ci_rel_halfwidth']) * 100:7.2f}% "
              f"{statistics.median(cell['count']):7.0f} {between * 100:13.1f}%")
    print("written to", write_result("time_to_ci", args, figures))


if __name__ == "__main__":
    main()

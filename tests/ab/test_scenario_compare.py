"""``compare`` on a load scenario: real runner processes under the real LoadGen wheel, in
process pairs (LoadGen times whole runs, not single calls), decided on the scenario's
latency (larger is worse) and its throughput (larger is better): a known slowdown of the
service time is a regression of both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.ab import CompareSettings, Outcome, Side, compare_jobs
from benchlab.schema.comparison import Mode
from benchlab.spec.artifacts import ArtifactCache
from benchlab.frameworks.base import JobContext, RunnerFramework, runner_invocation
from benchlab.harness.planner import plan
from benchlab.schema.result import Metric
from benchlab.spec import load
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.host import HostTarget

pytest.importorskip("mlperf_loadgen")

TESTS = Path(__file__).parents[1]  # where sleepy_backend.py is


class SleepyFramework(RunnerFramework):
    """benchlab's runner with the test's sleeping forward-pass backend."""

    name = "sleepy"

    def invocations(self, ctx: JobContext) -> list:
        return [runner_invocation(ctx, backend="sleepy_backend:SleepyBackend", model_path=None,
                                  options=ctx.config.options)]


def _jobs(tmp_path: Path) -> list:
    spec = tmp_path / "sleepy.json"
    spec.write_text(json.dumps({
        "model": {"name": "sleepy", "format": "script", "entry": "sleepy_backend:SleepyBackend"},
        "tests": [{"identifier": "camera", "warmup": 2, "timeout": 120,
                   "env": {"PYTHONPATH": str(TESTS)},
                   "inputs": {"x": {"shapes": [[1, 4]]}},
                   "scenario": {"name": "single_stream", "duration_s": 0.3}}],
    }))
    (loaded,) = load(spec)
    sweep = plan([loaded], HostTarget(), frameworks=[FrameworkConfig("generic", {})])
    return [j.__class__(j.identity, j.spec, j.test, FrameworkConfig("sleepy", {}),
                        SleepyFramework()) for j in sweep.jobs]


@pytest.mark.slow
def test_a_slower_service_is_a_scenario_regression_in_process_pairs(tmp_path: Path) -> None:
    control = Side("A", framework=FrameworkConfig("sleepy", {"service_ms": 2.0}))
    treatment = Side("B", framework=FrameworkConfig("sleepy", {"service_ms": 5.0}))
    comparison = compare_jobs(_jobs(tmp_path), control, treatment, HostTarget(),
                              ArtifactCache(tmp_path / "cache"),
                              CompareSettings(looks=(8,), verify=False, min_effect=0.2))
    by_metric = {m.metric: m for m in comparison.metrics}
    assert comparison.modes == [Mode.PROCESS_PAIRS]
    assert any("load scenario is timed by LoadGen" in n for n in comparison.notes)
    # 2.5 times the sleep per sample: a huge effect, not a timing bound.
    latency = by_metric[Metric.SCENARIO_LATENCY.key].estimate
    assert latency.outcome is Outcome.REGRESSION and latency.change > 0.5
    throughput = by_metric[Metric.THROUGHPUT.key].estimate
    assert throughput.outcome is Outcome.REGRESSION and throughput.change < -0.3

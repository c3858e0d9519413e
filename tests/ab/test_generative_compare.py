"""``compare`` on a generative test: real runner processes in process pairs (a generation is
many calls on one growing cache, which only the generative runner times), decided on TTFT and
TPOT; a known TPOT change is found, an unchanged TTFT is not called a change."""

from __future__ import annotations

import json
from pathlib import Path

from benchlab.ab import CompareSettings, Outcome, Side, compare_jobs
from benchlab.schema.comparison import Mode
from benchlab.spec.artifacts import ArtifactCache
from benchlab.frameworks.base import JobContext, RunnerFramework
from benchlab.harness.planner import plan
from benchlab.schema.result import Metric
from benchlab.spec import load
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.host import HostTarget

HERE = Path(__file__).parent


class SleepyFramework(RunnerFramework):
    """benchlab's generative runner with the test's sleeping decoder."""

    name = "sleepy"
    generative_backend = "sleepy_decoder:SleepyDecoder"
    generative_options = frozenset({"tpot_ms"})

    def invocations(self, ctx: JobContext) -> list:
        return [self.generative_invocation(ctx)]


def _jobs(tmp_path: Path) -> list:
    spec = tmp_path / "sleepy.json"
    spec.write_text(json.dumps({
        "model": {"name": "sleepy", "format": "script", "entry": "sleepy_decoder:SleepyDecoder"},
        "tests": [{"identifier": "chat", "warmup": 1, "iter": 3, "timeout": 120,
                   "env": {"PYTHONPATH": str(HERE)},
                   "generate": {"prompt_tokens": 8, "new_tokens": 6}}],
    }))
    (loaded,) = load(spec)
    sweep = plan([loaded], HostTarget(), frameworks=[FrameworkConfig("generic", {})])
    return [j.__class__(j.identity, j.spec, j.test, FrameworkConfig("sleepy", {}),
                        SleepyFramework()) for j in sweep.jobs]


def test_a_slower_decode_is_a_tpot_regression_in_process_pairs(tmp_path: Path) -> None:
    control = Side("A", framework=FrameworkConfig("sleepy", {"tpot_ms": 4.0}))
    treatment = Side("B", framework=FrameworkConfig("sleepy", {"tpot_ms": 8.0}))
    comparison = compare_jobs(_jobs(tmp_path), control, treatment, HostTarget(),
                              ArtifactCache(tmp_path / "cache"),
                              CompareSettings(looks=(10,), verify=False, min_effect=0.2))
    by_metric = {m.metric: m for m in comparison.metrics}
    assert comparison.modes == [Mode.PROCESS_PAIRS]
    assert any("generative test times whole generations" in n for n in comparison.notes)
    tpot = by_metric[Metric.TPOT.key]
    # Twice the sleep per new token: a huge effect, not a timing bound.
    assert tpot.estimate.outcome is Outcome.REGRESSION
    assert 0.5 < tpot.estimate.change < 1.5
    # The prompt's time did not change: 20% is far above what the sleeps' jitter moves.
    assert by_metric[Metric.TTFT.key].estimate.outcome is not Outcome.REGRESSION

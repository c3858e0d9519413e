"""In-process interleaving with real runner processes: one process loads both sides of a
framework variant pair (a spin backend whose ``slowdown`` option is a known change) and
alternates their calls in random AB/BA blocks; the verdict is on the sessions' estimates."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchlab.ab import CompareSettings, Outcome, Side, compare_jobs
from benchlab.schema.comparison import Mode
from benchlab.ab.inprocess import inprocess_session
from benchlab.ab.sides import side_job
from benchlab.ab.sessions import balanced_orders
from benchlab.spec.artifacts import ArtifactCache
from benchlab.frameworks.base import JobContext, RunnerFramework, runner_invocation
from benchlab.harness.planner import plan
from benchlab.report.ab import comparison_json, comparison_markdown
from benchlab.spec import load
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.host import HostTarget

HERE = Path(__file__).parent


class SpinFramework(RunnerFramework):
    """benchlab's runner with the test's spin backend."""

    name = "spin"

    def invocations(self, ctx: JobContext) -> list:
        return [runner_invocation(ctx, backend="spin_backend:SpinBackend", model_path=None,
                                  options=ctx.config.options)]


def _jobs(tmp_path: Path, iterations: int = 40) -> list:
    spec = tmp_path / "spin.json"
    spec.write_text(json.dumps({
        "model": {"name": "spin", "format": "script"},
        "tests": [{"identifier": "default", "warmup": 3, "iter": iterations, "timeout": 120,
                   "env": {"PYTHONPATH": str(HERE)}}],
    }))
    (loaded,) = load(spec)
    sweep = plan([loaded], HostTarget(), frameworks=[FrameworkConfig("generic", {})])
    return [j.__class__(j.identity, j.spec, j.test, FrameworkConfig("spin", {}), SpinFramework())
            for j in sweep.jobs]


def _side(label: str, slowdown: float) -> Side:
    return Side(label, framework=FrameworkConfig("spin", {"slowdown": slowdown}))


def test_one_process_alternates_both_sides_in_balanced_blocks(tmp_path: Path) -> None:
    (base,) = _jobs(tmp_path, iterations=30)
    control = side_job(base, _side("A", 0.0), "control")
    treatment = side_job(base, _side("B", 1.0), "treatment")
    order = balanced_orders(30, seed=7)
    assert order.count("c") == order.count("t") == 15
    session = inprocess_session(control, treatment, HostTarget(),
                                ArtifactCache(tmp_path / "cache"), order=order,
                                loaded_first="t", warmup=2)
    assert session.mode is Mode.IN_PROCESS and session.order == order
    assert len(session.control) == len(session.treatment) == 30
    # Twice the work: in wall time the treatment is far slower (a huge effect, no bound above:
    # the suite's neighbours once made most of a session's blocks 4.9 times, CI at 92871ac).
    assert session.estimate > math.log(1.5)
    # Each call's CPU time is recorded beside its wall time, and, untouched by waiting for a
    # core, shows the ratio itself: near 2.
    assert len(session.control_cpu) == len(session.treatment_cpu) == 30
    assert math.log(1.5) < session.estimate_on("cpu") < math.log(3.0)


def test_compare_picks_in_process_and_finds_a_known_slowdown(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    comparison = compare_jobs(jobs, _side("A", 0.0), _side("B", 0.3), HostTarget(),
                              ArtifactCache(tmp_path / "cache"),
                              # fidelity judged in test_fidelity.py; a busy machine can
                              # move a toy's solo calls
                              CompareSettings(looks=(8, 16), verify=True,
                                              fidelity_tolerance=None))
    (latency,) = comparison.metrics
    assert latency.mode is Mode.IN_PROCESS and comparison.modes == [Mode.IN_PROCESS]
    assert latency.estimate.outcome is Outcome.REGRESSION and latency.verified is True
    assert len(latency.paired) == latency.estimate.n_pairs == 8
    assert 0.1 < latency.estimate.change < 0.6
    assert "in-process" in comparison_markdown(comparison)
    assert json.loads(comparison_json(comparison))["modes"].keys() == {"in-process"}


def test_sides_that_cannot_share_a_process_fall_back_with_a_note(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, iterations=10)
    control = Side("A", framework=FrameworkConfig("spin", {"threads": 1}))
    treatment = Side("B", framework=FrameworkConfig("spin", {"threads": 2}))
    comparison = compare_jobs(jobs, control, treatment, HostTarget(),
                              ArtifactCache(tmp_path / "cache"),
                              CompareSettings(looks=(4,), verify=False, min_effect=0.5))
    assert {m.mode for m in comparison.metrics} == {Mode.PROCESS_PAIRS}
    assert any("different thread counts" in note for note in comparison.notes)


def test_the_cli_rejects_an_unknown_mode(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "benchlab", "compare", "--models", "mlp",
                          "--mode", "sideways"], capture_output=True, text=True, timeout=120,
                         check=False)
    assert out.returncode == 2 and "unknown A/B mode 'sideways'" in out.stderr


@pytest.mark.parametrize("mode", ["process-pairs"])
def test_process_pairs_can_be_asked_for(tmp_path: Path, mode: str) -> None:
    jobs = _jobs(tmp_path, iterations=10)
    comparison = compare_jobs(jobs, _side("A", 0.0), _side("B", 0.0), HostTarget(),
                              ArtifactCache(tmp_path / "cache"),
                              CompareSettings(looks=(4,), verify=False, mode=mode,
                                              min_effect=0.5))
    assert {m.mode for m in comparison.metrics} == {Mode.PROCESS_PAIRS}
    assert comparison.notes == ()

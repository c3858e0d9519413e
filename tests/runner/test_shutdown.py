"""A runtime that hangs in its teardown, after the runner printed its results: the runner ends
itself once its shutdown limit passes (SIGALRM, benchlab.runner.shutdown), and the harness
keeps the results and says the process hung (benchlab.harness.exitstatus).

The hang is ``HangingTeardownBackend`` (tests/sleepy_backend.py): an exit handler that waits an
hour, in a real runner process started the way the harness starts one."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import benchlab
from benchlab.harness.exitstatus import ended_after_its_results, failure_of
from benchlab.protocol.lines import parse_output
from benchlab.runner.config import RunnerConfig
from benchlab.schema.result import DetailKey, Status
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.host import HostTarget

TESTS = Path(__file__).resolve().parents[1]


def _runner_argv(limit: float | None) -> list[str]:
    config = RunnerConfig(backend="sleepy_backend:HangingTeardownBackend", iterations=3,
                          warmup=0, shutdown_limit=limit)
    return [sys.executable, "-m", "benchlab.runner", config.model_dump_json()]


def test_the_runner_ends_itself_after_its_results_when_the_teardown_hangs() -> None:
    # The request's timeout guards the test against the hour-long hang the bound prevents.
    outcome = HostTarget().run(RunRequest(argv=_runner_argv(1), env={"PYTHONPATH": str(TESTS)},
                                          timeout=300))
    assert not outcome.timed_out, outcome.stderr
    assert outcome.returncode in (-signal.SIGALRM, 128 + signal.SIGALRM), outcome
    parsed = parse_output(outcome.stdout)
    assert sum(1 for s in parsed.samples if s.key == "NET latency") == 3
    assert parsed.details[DetailKey.SHUTDOWN_LIMIT] == 1
    # Read the way the harness reads it: killed by SIGALRM, and yet finished.
    assert "SIGALRM" in failure_of(outcome, 300)[1]
    assert "results are kept" in (ended_after_its_results(outcome) or "")


def test_a_process_alarm_ended_without_the_runners_last_line_still_fails() -> None:
    # Its own alarm, or a runner that died of one before it printed everything.
    for stdout in ("", 'PyTorchObserver {"type": "NET", "metric": "latency", "unit": "ms", '
                   '"value": 1.0}\n'):
        outcome = CommandResult(128 + signal.SIGALRM, stdout, "", 0.1)
        assert ended_after_its_results(outcome) is None
        assert failure_of(outcome, 60)[0] is Status.FAILED
    assert ended_after_its_results(CommandResult(None, "", "", 60.0, timed_out=True)) is None


def test_the_harness_keeps_the_results_of_a_job_whose_runtime_hung_on_exit(tmp_path: Path
                                                                           ) -> None:
    # The generic framework runs the same runner process as a command of the user's spec.
    command = " ".join(json.dumps(part) if part.startswith("{") else part
                       for part in _runner_argv(1))
    spec = {"model": {"name": "hangs_on_exit", "format": "numpy"},
            "tests": [{"identifier": "exit", "warmup": 0, "iter": 3, "repeat": 1,
                       "commands": [f"env PYTHONPATH={TESTS} {command}"]}]}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    (result,) = benchlab.run([path], db=tmp_path / "r.db")
    assert result.status is Status.OK, result.error
    assert "SIGALRM" in result.details[DetailKey.SHUTDOWN_HUNG]
    assert len(result.samples_of("NET latency")) == 3

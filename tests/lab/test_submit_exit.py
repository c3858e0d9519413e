"""``lab submit --wait`` and ``run --lab`` gate as ``benchlab run`` does: exit 1 when a job or
one of its results failed, naming the job, its device and why; 0 when all is well.

A real worker process runs the jobs; the commands run as subprocesses, as CI would call them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchlab.lab.client import job_outcomes, submit_to_lab

from .agents import agents, nap_spec

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

# A program that fails as a benchmark binary does: a message on stderr and exit status 1.
_BROKEN = """\
model:
  name: broken
  format: script
tests:
  - identifier: default
    warmup: 0
    iter: 3
    repeat: 1
    timeout: 60
    commands:
      - "{PYTHON} -c \\"import sys; sys.exit('the program broke')\\""
"""


def _benchlab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlab", *args],
                          capture_output=True, text=True, timeout=300)


def test_submit_wait_and_run_lab_exit_1_naming_each_failure(lab_url: str,
                                                            tmp_path: Path) -> None:
    good = nap_spec(tmp_path, 0.1, tmp_path / "marks.jsonl")
    broken = tmp_path / "broken.yaml"
    broken.write_text(_BROKEN)
    with agents(lab_url, tmp_path) as lab_agents:
        lab_agents.start("hostX")
        lab_agents.wait_registered("host:hostX")

        done = _benchlab("lab", "submit", str(good), "--db", lab_url, "--device", "host:hostX",
                         "--wait", "--timeout", "240")
        assert done.returncode == 0, done.stdout + done.stderr + lab_agents.log_text()

        # The job ends "finished" (its process measured every cell), yet its one result
        # failed: the submission failed, as `benchlab run` of the same spec would.
        done = _benchlab("lab", "submit", str(broken), "--db", lab_url, "--device",
                         "host:hostX", "--wait", "--timeout", "240")
        assert done.returncode == 1, done.stdout + done.stderr + lab_agents.log_text()
        assert "finished" in done.stdout
        assert "on host:hostX: 1 of 1 results failed" in done.stderr
        assert "broken/default @ generic: " in done.stderr
        assert "the program broke" in done.stderr

        done = _benchlab("run", str(broken), "--lab", lab_url, "--lab-device", "host:hostX")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "on host:hostX: 1 of 1 results failed" in done.stderr
        assert "the program broke" in done.stderr

        # A job whose process could not run at all ends "failed", with the reason.
        done = _benchlab("lab", "submit", "--models", "no_such_model", "--db", lab_url,
                         "--device", "host:hostX", "--wait", "--timeout", "240")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "on host:hostX: failed: job process failed:" in done.stderr
        assert "no_such_model" in done.stderr

        # The library says the same, with each failed result's label and error.
        [job] = submit_to_lab(lab_url, [broken], device="host:hostX", wait=True, timeout=240)
        [outcome] = job_outcomes(lab_url, [job])
        assert job.status == "finished" and not outcome.ok
        [(label, error)] = outcome.failed_results
        assert label == "broken/default @ generic" and "the program broke" in error
        [ok] = job_outcomes(lab_url, submit_to_lab(lab_url, [good], device="host:hostX",
                                                   wait=True, timeout=240))
        assert ok.ok and ok.lines() == [] and len(ok.results) == 1


def test_submit_wait_that_gives_up_exits_1_saying_the_job_still_waits(
        lab_url: str, tmp_path: Path) -> None:
    good = nap_spec(tmp_path, 0.1, tmp_path / "marks.jsonl")
    # No worker serves this pool, so the job is still waiting when --wait gives up.
    done = _benchlab("lab", "submit", str(good), "--db", lab_url, "--pool", "soc=none",
                     "--wait", "--timeout", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("on pool soc=none: still waiting when the wait ended "
            "(no registered device matches pool soc=none)") in done.stderr

"""The lab with real worker processes on a real PostgreSQL: runs, exclusivity, recovery, pools."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from bounded import run_bounded

from benchlab.lab.client import request_for, submit_to_lab, wait_for
from benchlab.lab.devices import device_events, get_device, list_devices, quarantine, release
from benchlab.lab.jobs import LabRequest, list_jobs
from benchlab.lab.queue import open_lab, store_url, submit
from benchlab.lab.tokens import create_token
from benchlab.schema.result import LATENCY_KEY, DetailKey, Metric
from benchlab.store import open_store

from .agents import agents, free_port, nap_spec, read_marks, serve, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _results_of(url: str, run_uuid: str) -> list:
    with open_store(store_url(url)) as store:
        return store.results(run_uuid)


def test_a_job_runs_on_its_device_and_lands_in_the_store(lab_url: str, tmp_path: Path) -> None:
    marks = tmp_path / "marks.jsonl"
    spec = nap_spec(tmp_path, 0.2, marks)
    with agents(lab_url, tmp_path) as lab_agents:
        lab_agents.start("hostA")
        lab_agents.wait_registered("host:hostA")
        [job] = submit_to_lab(lab_url, [spec], device="host:hostA", wait=True, timeout=120)
        assert job.status == "finished", lab_agents.log_text()
        assert job.device_id == "host:hostA" and job.attempts == 1
        [result] = _results_of(lab_url, job.run_uuid)
        assert result.ok and result.identity.model_name == "nap"
        assert len(read_marks(marks)) == 1
        with open_lab(lab_url) as lab:
            device = get_device(lab.store, "host:hostA")
        assert device.health == "good" and "known benchmark" in device.health_reason
        assert device.properties["kind"] == "host" and device.properties["cores"] >= 1
    with open_lab(lab_url) as lab:  # a stopped agent's devices go offline
        assert get_device(lab.store, "host:hostA").effective_state == "offline"


def test_a_killed_worker_s_job_is_requeued_and_finishes_once(lab_url: str,
                                                             tmp_path: Path) -> None:
    marks = tmp_path / "marks.jsonl"
    spec = nap_spec(tmp_path, 6.0, marks)
    with agents(lab_url, tmp_path) as lab_agents:
        first = lab_agents.start("hostA")
        lab_agents.wait_registered("host:hostA")
        [job] = submit_to_lab(lab_url, [spec], device="host:hostA")
        wait_until(lambda: lab_agents.job(job.id).status == "running", 60, "the job to start")
        wait_until(lambda: lab_agents.job(job.id).run_uuid is not None, 60, "its run")
        os.kill(first.pid, signal.SIGKILL)  # the host dies mid-job
        first.wait()
        lab_agents.start("hostA")  # the host comes back
        try:
            wait_until(lambda: lab_agents.job(job.id).status == "finished", 120,
                       "the re-queued job to finish")
        except AssertionError:
            with open_lab(lab_url) as lab:
                queued = lab.app.job_manager.list_jobs()
            raise AssertionError(f"{lab_agents.job(job.id)}\n{queued}\n{lab_agents.log_text()}")
        done = lab_agents.job(job.id)
        assert done.attempts == 2, lab_agents.log_text()
        # The first attempt's process died with its worker: one nap completed, one result.
        assert len(read_marks(marks)) == 1
        results = _results_of(lab_url, done.run_uuid)
        assert len(results) == 1 and results[0].ok


def test_two_workers_on_one_device_never_overlap(lab_url: str, tmp_path: Path) -> None:
    marks = tmp_path / "marks.jsonl"
    spec = nap_spec(tmp_path, 0.5, marks)
    with agents(lab_url, tmp_path) as lab_agents:
        # Two agents claim to serve the same device (a misconfigured lab).
        lab_agents.start("rig", "--label", "bench=one")
        lab_agents.start("rig", "--label", "bench=one")
        lab_agents.wait_registered("host:rig")
        jobs = [job for _ in range(3)
                for job in submit_to_lab(lab_url, [spec], device="host:rig")]
        jobs += [job for _ in range(3)
                 for job in submit_to_lab(lab_url, [spec], pool="bench=one", fan_out=False)]
        ended = _wait_all(lab_url, [j.id for j in jobs], 240)
        assert all(j.status == "finished" for j in ended), lab_agents.log_text()
    naps = sorted(read_marks(marks), key=lambda m: m["start"])
    assert len(naps) == 6
    for before, after in zip(naps, naps[1:]):
        assert after["start"] >= before["end"], (before, after)


def _wait_all(url: str, ids: list[int], timeout: float) -> list:
    def ended() -> bool:
        with open_lab(url) as lab:
            statuses = {j.id: j.status for j in list_jobs(lab.store, limit=5000)}
        return all(statuses.get(i) in ("finished", "failed", "cancelled") for i in ids)
    wait_until(ended, timeout, f"{len(ids)} jobs to end", poll=1.0)
    with open_lab(url) as lab:
        return [j for j in list_jobs(lab.store, limit=5000) if j.id in set(ids)]


def test_a_quarantined_device_takes_nothing_until_released(lab_url: str,
                                                          tmp_path: Path) -> None:
    marks = tmp_path / "marks.jsonl"
    spec = nap_spec(tmp_path, 0.1, marks)
    with agents(lab_url, tmp_path) as lab_agents:
        lab_agents.start("hostQ")
        lab_agents.wait_registered("host:hostQ")
        with open_lab(lab_url) as lab:
            quarantine(lab.store, "host:hostQ", who="alice", reason="flaky USB hub")
        [job] = submit_to_lab(lab_url, [spec], device="host:hostQ")
        assert job.status == "waiting"
        assert job.reason == "device host:hostQ is quarantined: flaky USB hub"
        import time
        time.sleep(6)  # several supervision rounds: the job must still wait
        assert lab_agents.job(job.id).status == "waiting"
        with open_lab(lab_url) as lab:
            release(lab.store, "host:hostQ", who="alice")
            history = device_events(lab.store, "host:hostQ")
        # The worker's health checks are events too and may fall between the two.
        assert [(e.kind, e.value, e.who) for e in history if e.kind == "quarantine"][:2] == [
            ("quarantine", "off", "alice"), ("quarantine", "on", "alice")]
        wait_until(lambda: lab_agents.job(job.id).status == "finished", 90,
                   "the job to run after release")


def test_a_pool_no_device_serves_is_reported_not_hung(lab_url: str, tmp_path: Path) -> None:
    spec = nap_spec(tmp_path, 0.1, tmp_path / "marks.jsonl")
    [job] = submit_to_lab(lab_url, [spec], pool="abi=arm64-v8a")
    assert job.status == "waiting" and job.route_kind == "pool"
    assert job.reason == "no registered device matches pool abi=arm64-v8a"
    assert job.stuck(now=job.created_at + 301) and not job.stuck(now=job.created_at + 10)
    shown = subprocess.run(
        [sys.executable, "-m", "benchlab", "lab", "status", "--db", lab_url, "--json"],
        capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    [queue] = json.loads(shown.stdout)["queues"]
    assert queue["queue"] == "pool:abi=arm64-v8a" and queue["counts"]["waiting"] == 1
    assert queue["problem"] == "no registered device matches pool abi=arm64-v8a"


def test_a_bad_spec_is_refused_before_anything_is_queued(lab_url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  name: x\n  format: script\ntests:\n  - identifier: t\n"
                   "    iter: many\n    commands: ['true']\n")
    from benchlab.errors import SpecError
    with pytest.raises(SpecError, match="bad.yaml"):
        request_for([bad])
    with open_lab(lab_url) as lab:
        assert list_jobs(lab.store) == []


def test_thousand_jobs_over_four_workers_and_two_pools(lab_url: str, tmp_path: Path) -> None:
    """0 lost, 0 duplicated: each no-op job leaves one execution event, on its pool's devices."""
    with agents(lab_url, tmp_path) as lab_agents:
        for name, lane in (("w1", "a"), ("w2", "a"), ("w3", "b"), ("w4", "b")):
            lab_agents.start(name, "--label", f"lane={lane}")
        for name in ("w1", "w2", "w3", "w4"):
            lab_agents.wait_registered(f"host:{name}")
        with open_lab(lab_url) as lab:
            ids = {"a": [], "b": []}
            for n in range(1000):
                lane = "ab"[n % 2]
                [job] = submit(lab, LabRequest(kind="noop"), pool=f"lane={lane}",
                               fan_out=False)
                ids[lane].append(job.id)
        ended = _wait_all(lab_url, ids["a"] + ids["b"], 600)
        assert len(ended) == 1000
        assert all(j.status == "finished" for j in ended), lab_agents.log_text()[-3000:]
        with open_lab(lab_url) as lab:
            runs: dict[int, list[str]] = {}
            for device in list_devices(lab.store):
                for event in device_events(lab.store, device.id, limit=5000):
                    if event.kind == "ran":
                        runs.setdefault(event.job_id, []).append(device.id)
    assert sorted(runs) == sorted(ids["a"] + ids["b"])  # none lost
    assert all(len(devices) == 1 for devices in runs.values())  # none twice
    assert {runs[i][0] for i in ids["a"]} <= {"host:w1", "host:w2"}
    assert {runs[i][0] for i in ids["b"]} <= {"host:w3", "host:w4"}


def test_a_device_lost_mid_job_hands_the_job_to_another_of_its_pool(
        lab_url: str, tmp_path: Path, phone) -> None:  # noqa: ANN001
    """The stand-in phone is unplugged (adb disconnect) mid-job: that attempt fails with the
    reason, the phone goes offline and the job runs again on the other device of the pool."""
    standin, server = phone
    marks = tmp_path / "marks.jsonl"
    spec = nap_spec(tmp_path, 8.0, marks, timeout=30)
    phone_target = (f"adb:serial={standin.serial},server_port={server.port},"
                    f"python={sys.executable}")
    with agents(lab_url, tmp_path) as lab_agents:
        lab_agents.start("phonehost", "--board", phone_target, "--label", "lane=x",
                         host_device=False)
        lab_agents.wait_registered(f"adb:{standin.serial}")
        [job] = submit_to_lab(lab_url, [spec], pool="lane=x", fan_out=False)
        try:
            wait_until(lambda: lab_agents.job(job.id).status == "running", 60,
                       "the job to start")
        except AssertionError:
            with open_lab(lab_url) as lab:
                devices = [d.to_json() for d in list_devices(lab.store)]
            raise AssertionError(f"{lab_agents.job(job.id)}\n{devices}") from None
        assert lab_agents.job(job.id).device_id == f"adb:{standin.serial}"
        lab_agents.start("hostB", "--label", "lane=x")
        lab_agents.wait_registered("host:hostB")
        server.disconnect(standin.serial)
        try:
            wait_until(lambda: lab_agents.job(job.id).status == "finished", 150,
                       "the job to finish on the other device")
        except AssertionError:
            raise AssertionError(f"{lab_agents.job(job.id)}\n{lab_agents.log_text()}") from None
        finally:
            server.connect(standin.serial)
        done = lab_agents.job(job.id)
        assert done.device_id == "host:hostB" and done.attempts == 2, lab_agents.log_text()
        with open_lab(lab_url) as lab:
            history = device_events(lab.store, f"adb:{standin.serial}")
        lost = [e for e in history if e.kind == "state" and e.value == "offline"]
        assert lost and lost[0].reason.startswith(f"lost during job {job.id}")
        assert len(read_marks(marks)) == 1


def test_run_with_lab_runs_on_a_lab_device_and_prints_its_results(lab_url: str,
                                                                   tmp_path: Path) -> None:
    spec = nap_spec(tmp_path, 0.1, tmp_path / "marks.jsonl")
    with agents(lab_url, tmp_path) as lab_agents:
        lab_agents.start("hostR")
        lab_agents.wait_registered("host:hostR")
        done = subprocess.run(
            [sys.executable, "-m", "benchlab", "run", str(spec), "--lab", lab_url,
             "--lab-device", "host:hostR", "--iter", "5"],
            capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + lab_agents.log_text()
    assert "on host:hostR: finished" in done.stderr
    assert "nap" in done.stdout and "generic" in done.stdout
    with open_lab(lab_url) as lab:
        [job] = list_jobs(lab.store)
    assert job.request.sweep["overrides"] == {"iter": 5}
    [result] = _results_of(lab_url, job.run_uuid)
    assert len(result.samples_of(LATENCY_KEY)) == 3  # nap prints three, whatever iter says


def test_compare_on_a_lab_device_runs_both_sides_there(lab_url: str, tmp_path: Path) -> None:
    """compare --lab: one job, both sides on one device; the job keeps the A/B report and the
    command exits with the comparison's code (1: the treatment is slower)."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "ab"
    spin = f"{sys.executable} {examples / 'spin.py'}"
    with agents(lab_url, tmp_path) as lab_agents:
        lab_agents.start("hostC")
        lab_agents.wait_registered("host:hostC")
        done = run_bounded(
            [sys.executable, "-m", "benchlab", "compare", str(examples / "spin.yaml"),
             "--control-program", spin, "--treatment-program", f"{spin} --slowdown 1.0",
             "--pairs", "6,12", "--no-verify", "--lab", lab_url, "--lab-device", "host:hostC"],
            limit_s=540)
    assert done.returncode == 1, done.stdout + done.stderr + lab_agents.log_text()
    assert "on host:hostC: finished (compare done, exit code 1)" in done.stderr
    assert "regression" in done.stdout.lower()
    with open_lab(lab_url) as lab:
        [job] = list_jobs(lab.store)
    assert job.request.kind == "compare" and job.report["exit_code"] == 1
    assert job.report["json"]["regressions"] and job.report["json"]["exit_code"] == 1


def test_track_on_a_lab_device_finds_the_step(lab_url: str, tmp_path: Path) -> None:
    """track --lab: the commit walk runs as one job on one device (the repository is a path on
    that device's host); the job keeps the series and the command exits 1 on the step."""
    from tests.tracking.test_track import make_repo, spec

    shas = make_repo(tmp_path / "repo", commits=4, slow_from=2)
    with agents(lab_url, tmp_path) as lab_agents:
        lab_agents.start("hostT")
        lab_agents.wait_registered("host:hostT")
        done = run_bounded(
            [sys.executable, "-m", "benchlab", "track", str(spec(tmp_path)),
             "--repo", str(tmp_path / "repo"), "--revisions", "main", "--pairs", "8",
             "--min-effect", "3%", "-q",
             "--program", f"{sys.executable} {{WORKTREE}}/prog.py --state {tmp_path / 'state'}",
             "--lab", lab_url, "--lab-device", "host:hostT"],
            limit_s=540)
    assert done.returncode == 1, done.stdout + done.stderr + lab_agents.log_text()
    assert f"first seen at {shas[2][:12]}" in done.stdout and "← step" in done.stdout


def test_a_job_whose_run_finished_is_not_measured_again(lab_url: str, tmp_path: Path) -> None:
    """The worker died between its job's end and recording it, and the ticket came back to a
    device of another kind (a pool job), whose sweep cannot resume the finished run: the job
    process finds the run finished and measures nothing, so no result is stored twice. The
    other device here is an ssh board that does not exist: touching it would fail."""
    marks = tmp_path / "marks.jsonl"
    spec = nap_spec(tmp_path, 0.2, marks)
    with agents(lab_url, tmp_path) as lab_agents:
        lab_agents.start("hostA")
        lab_agents.wait_registered("host:hostA")
        [job] = submit_to_lab(lab_url, [spec], device="host:hostA", wait=True, timeout=120)
    assert job.status == "finished" and len(read_marks(marks)) == 1
    again = subprocess.run(
        [sys.executable, "-m", "benchlab.lab.execute", "--db", lab_url, "--job", str(job.id),
         "--target", "ssh:host=nowhere.invalid,user=bench"],
        capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr[-2000:]
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    assert summary == {"run_uuid": job.run_uuid, "results": 1, "failed": 0, "spooled": 0}
    assert len(read_marks(marks)) == 1
    assert len(_results_of(lab_url, job.run_uuid)) == 1


def test_a_board_that_is_down_does_not_keep_its_host_from_serving(lab_url: str,
                                                                  tmp_path: Path) -> None:
    """One unreachable board in a host's config: the agent starts, serves its other devices
    and registers the board offline with the reason (it comes back once it answers)."""
    with agents(lab_url, tmp_path) as lab_agents:
        proc = lab_agents.start("hostA", "--board", "ssh:host=nowhere.invalid,user=bench")
        lab_agents.wait_registered("host:hostA")
        # The agent probes its devices one after another: the board's row may come second.
        lab_agents.wait_registered("ssh:nowhere.invalid", alive=False)
        assert proc.poll() is None, lab_agents.log_text()
        with open_lab(lab_url) as lab:
            board = get_device(lab.store, "ssh:nowhere.invalid")
            history = device_events(lab.store, "ssh:nowhere.invalid")
        assert board.state == "offline" and not board.alive
        assert any(e.kind == "state" and e.value == "offline" and e.reason for e in history)


def test_run_lab_measures_the_scenario_and_the_workload_it_was_given(
        lab_url: str, tmp_path: Path, llama_15m_export: Any) -> None:
    """``run --lab`` with a load scenario, and the same request with a prompt length through
    the lab's HTTP API: the device measures what the command says, not the defaults (the
    options used to be dropped on the way). Real PostgreSQL, worker and server."""
    # The worker's artifact cache is the session's zoo cache: its default folder under an
    # XDG_CACHE_HOME of the test's, linked there, so nothing is exported twice.
    xdg = tmp_path / "xdg"
    (xdg / "benchlab").mkdir(parents=True)
    (xdg / "benchlab" / "artifacts").symlink_to(llama_15m_export.cache_dir)
    env = {**os.environ, "XDG_CACHE_HOME": str(xdg)}
    lab = ["--lab", lab_url, "--lab-device", "host:hostL", "-f", "onnxruntime:precision=fp32",
           "-q"]
    with agents(lab_url, tmp_path) as lab_agents, serve(lab_url, free_port()) as server_url:
        lab_agents.start("hostL", env=env)
        lab_agents.wait_registered("host:hostL")
        server = run_bounded(
            [sys.executable, "-m", "benchlab", "run", "--models", "mlp", *lab,
             "--scenario", "server", "--latency-bound", "15ms", "--duration", "0.5",
             # One run at a fixed rate: a search (tests/runner/test_scenario.py's subject)
             # under a busy neighbour fell to 1/64 of its rate, minutes of runs.
             "--target-qps", "200", "--query-count", "100", "--repeat", "1"],
            limit_s=540)
        assert server.returncode == 0, server.stderr + lab_agents.log_text()
        # The request as `run --lab --dry-run` prints it, posted to the server.
        request = subprocess.run(
            [sys.executable, "-m", "benchlab", "run", "--models", "llama_15m", *lab,
             "--prompt-tokens", "64", "--new-tokens", "8", "--iter", "1", "--repeat", "1",
             "--min-time", "0", "--warmup", "0", "--dry-run"],
            capture_output=True, text=True, timeout=120, check=True)
        wire = json.loads(request.stdout)
        with open_lab(lab_url) as opened:
            token, _ = create_token(opened.store, "ci", "submit")
        posted = httpx.post(f"{server_url}/api/v1/jobs", timeout=30,
                            headers={"Authorization": f"Bearer {token}"},
                            json={"sweep": wire["sweep"], "device": "host:hostL"})
        assert posted.status_code == 201, posted.text
        [job] = wait_for(lab_url, [posted.json()[0]["id"]], timeout=540)
        assert job.status == "finished", job.reason + lab_agents.log_text()
        assert job.request.digest == wire["digest"]
    with open_lab(lab_url) as opened:
        jobs = sorted(list_jobs(opened.store), key=lambda job: job.id)
    [result] = _results_of(lab_url, jobs[0].run_uuid)
    assert result.ok
    # Every scenario option reached the device. (Whether 15 ms was met depends on the
    # machine's load; the run is there either way.)
    facts = result.details[DetailKey.SCENARIO]
    assert facts["name"] == "server" and facts["latency_bound_ms"] == 15.0
    assert (facts["target_qps"], facts["query_count"], facts["duration_s"]) == (200, 100, 0.5)
    [run] = facts["runs"]
    assert run["target_qps"] == 200
    assert result.summaries[Metric.SCENARIO_LATENCY.key].p50 > 0
    generated = _results_of(lab_url, jobs[1].run_uuid)
    assert generated and all(r.ok for r in generated)
    for result in generated:
        assert result.details[DetailKey.GENERATION]["prompt_tokens"] == 64
        assert result.details[DetailKey.GENERATION]["new_tokens"] == 8

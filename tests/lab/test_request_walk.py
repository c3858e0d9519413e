"""Every option of ``run``, ``compare`` and ``track`` reaches a lab job, or is refused there.

The walk reads each command's options from the CLI itself, so an option added later and not
classified here fails the test: it cannot be forgotten on the way to the lab. Each option the
lab honours is submitted on its own (``--detach``, no worker needed) and must change what the
stored job carries, differently from every other option; the same request then goes through
the HTTP API and must be stored with the same digest. Each option the lab cannot honour
must exit 2 naming itself. Real PostgreSQL, the real CLI, the real server app.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from benchlab.cli.commands import app
from benchlab.errors import BenchlabError
from benchlab.lab.devices import register_device
from benchlab.lab.jobs import LabJob, get_job, list_jobs
from benchlab.lab.queue import open_lab
from benchlab.lab.server.app import create_app
from benchlab.lab.tokens import create_token
from benchlab.harness.sweep import Sweep

from .agents import nap_spec

pytestmark = pytest.mark.postgres

DEVICE = "host:walk"
DATA = Path(__file__).resolve().parents[1] / "data"
SAME = "sweep"  # travels in the job
REFUSED = "refused"  # exit 2, naming the option
HERE = "here"  # acts on this machine (display, files written from the results)
MEANS = "means"  # how the job is sent: --lab and its routing

# Each option: how the lab treats it, and the arguments that set it. Values are chosen so
# that no two options give the same request.
RUN = {
    "specs": (MEANS, []), "lab": (MEANS, []), "lab_device": (MEANS, []),
    "lab_pool": (MEANS, []), "detach": (MEANS, []),
    "models": (SAME, ["--models", "mlp"]),
    "frameworks": (SAME, ["-f", "onnxruntime:intra_op_threads=1"]),
    "energy": (SAME, ["--energy", "rapl"]),
    "temperature_gate": (SAME, ["--temperature-gate", "45"]),
    "target_ci": (SAME, ["--target-ci", "2%"]),
    "time_budget": (SAME, ["--time-budget", "30"]),
    "warmup": (SAME, ["--warmup", "2"]), "iterations": (SAME, ["--iter", "7"]),
    "repeat": (SAME, ["--repeat", "3"]), "goal": (SAME, ["--goal", "8%"]),
    "min_time": (SAME, ["--min-time", "0.2"]), "threads": (SAME, ["--threads", "1"]),
    "cpu_list": (SAME, ["--cpu-list", "0"]), "profile_ops": (SAME, ["--profile-ops"]),
    "layer_errors": (SAME, ["--layer-errors"]), "timeout": (SAME, ["--timeout", "60"]),
    "count": (SAME, ["--count", "instructions"]),
    "wipe_cache": (SAME, ["--wipe-cache"]),
    # FAI-PEP's spelling, which takes a value: the same setting as --wipe-cache.
    "faipep_wipe_cache": (MEANS, []),
    "shared_libs": (REFUSED, ["--shared-libs", "/opt/lib/libx.so"]),
    # FAI-PEP's run labels and maps travel with the request (the files are read here).
    "user_identifier": (SAME, ["--user-identifier", "nightly"]),
    "user_string": (SAME, ["--user-string", "walk"]),
    "platform_sig": (SAME, ["--platform-sig", "pixel"]),
    "hash_platform_mapping": (SAME, ["--hash-platform-mapping",
                                     str(DATA / "faipep_platform_mapping.json")]),
    "regressed_types": (SAME, ["--regressed-types", "latency"]),
    "monsoon_map": (SAME, ["--monsoon-map", '{"5a1b2c3d": "12345"}']),
    "reset_options": (HERE, []), "simple_json_dir": (HERE, []),
    "cooldown": (SAME, ["--cooldown", "1"]), "string_map": (SAME, ["--string-map", "K=v"]),
    "prompt_tokens": (SAME, ["--prompt-tokens", "64"]),
    "new_tokens": (SAME, ["--new-tokens", "16"]), "depth": (SAME, ["--depth", "32"]),
    "scenario": (SAME, ["--scenario", "offline"]),
    "latency_bound": (SAME, ["--scenario", "server", "--latency-bound", "15ms"]),
    "target_qps": (SAME, ["--scenario", "server", "--latency-bound", "15ms",
                          "--target-qps", "5"]),
    "ttft_bound": (SAME, ["--scenario", "server", "--ttft-bound", "200ms"]),
    "tpot_bound": (SAME, ["--scenario", "server", "--tpot-bound", "20ms"]),
    "duration": (SAME, ["--scenario", "offline", "--duration", "2"]),
    "query_count": (SAME, ["--scenario", "offline", "--query-count", "50"]),
    "samples_per_query": (SAME, ["--scenario", "multi_stream", "--samples-per-query", "4"]),
    "mlperf_durations": (SAME, ["--scenario", "offline", "--mlperf-durations"]),
    "scenario_accuracy": (SAME, ["--scenario", "offline", "--scenario-accuracy"]),
    "order": (SAME, ["--order", "jobs"]), "reboot": (SAME, ["--reboot"]),
    "reboot_after_failures": (SAME, ["--reboot-after-failures", "2"]),
    "reboot_after_uptime": (SAME, ["--reboot-after-uptime", "8"]),
    "model": (REFUSED, ["--model", "net.onnx"]), "model_input": (REFUSED, ["--input", "1x4"]),
    "data": (REFUSED, ["--inputs", "sets.npz"]),
    "target": (REFUSED, ["--target", "ssh:host=pi"]),
    "exclude_target": (REFUSED, ["--exclude-target", "adb:serial=X"]),
    "db": (REFUSED, ["--db", "here.sqlite"]), "resume": (REFUSED, ["--resume"]),
    "resume_run": (REFUSED, ["--resume-run", "3"]),
    "report_to": (REFUSED, ["--report-to", "http://127.0.0.1:9"]),
    "root_model_dir": (REFUSED, ["--root-model-dir", "."]),
    "cache_dir": (REFUSED, ["--cache-dir", "cache"]),
    "json_dir": (HERE, []), "html": (HERE, []), "dry_run": (HERE, []), "quiet": (HERE, []),
    "warnings": (HERE, []), "wide": (HERE, []),
}
COMPARE = {
    "specs": (MEANS, []), "lab": (MEANS, []), "lab_device": (MEANS, []),
    "detach": (MEANS, []),
    "models": (SAME, ["--models", "mlp"]),
    "frameworks": (SAME, ["-f", "onnxruntime"]),
    "iterations": (SAME, ["--iter", "7"]), "warmup": (SAME, ["--warmup", "2"]),
    "min_time": (SAME, ["--min-time", "0.2"]),
    "control_program": (SAME, ["--control-program", "/opt/a/bench"]),
    "treatment_program": (SAME, ["--treatment-program", "/opt/b/bench"]),
    "control_config": (SAME, ["--control-config", "onnxruntime:intra_op_threads=1"]),
    "treatment_config": (SAME, ["--treatment-config", "onnxruntime:intra_op_threads=2"]),
    "control_python": (SAME, ["--control-python", "/opt/a/python"]),
    "treatment_python": (SAME, ["--treatment-python", "/opt/b/python"]),
    "min_effect": (SAME, ["--min-effect", "3%"]), "alpha": (SAME, ["--alpha", "0.1"]),
    "pairs": (SAME, ["--pairs", "10,20"]), "verify": (SAME, ["--no-verify"]),
    "mode": (SAME, ["--mode", "process-pairs"]),
    "fidelity_tolerance": (SAME, ["--fidelity-tolerance", "off"]),
    "measure": (SAME, ["--measure", "both"]),
    "user_identifier": (SAME, ["--user-identifier", "nightly"]),
    "user_string": (SAME, ["--user-string", "walk"]),
    "regressed_types": (SAME, ["--regressed-types", "latency"]),
    "control_model": (REFUSED, ["--control-model", "a.onnx"]),
    "treatment_model": (REFUSED, ["--treatment-model", "b.onnx"]),
    "control_commit": (REFUSED, ["--control-commit", "HEAD~1"]),
    "treatment_commit": (REFUSED, ["--treatment-commit", "HEAD"]),
    "repo": (REFUSED, ["--repo", "."]), "build": (REFUSED, ["--build", "make"]),
    "commit_program": (REFUSED, ["--commit-program", "{WORKTREE}/bench"]),
    "target": (REFUSED, ["--target", "ssh:host=pi"]), "db": (REFUSED, ["--db", "x.sqlite"]),
    "cache_dir": (REFUSED, ["--cache-dir", "cache"]),
    "markdown": (HERE, []), "json_out": (HERE, []), "html": (HERE, []), "quiet": (HERE, []),
    "dry_run": (HERE, []), "wide": (HERE, []),
}
TRACK = {
    "specs": (MEANS, []), "lab": (MEANS, []), "lab_device": (MEANS, []),
    "detach": (MEANS, []),
    "repo": (SAME, ["--repo", "/srv/other"]), "program": (SAME, ["--program", "{WORKTREE}/b"]),
    "revisions": (SAME, ["--revisions", "A..B"]), "build": (SAME, ["--build", "make"]),
    "reference": (SAME, ["--reference", "v1"]), "step": (SAME, ["--step", "2"]),
    "pairs": (SAME, ["--pairs", "30"]), "min_effect": (SAME, ["--min-effect", "3%"]),
    "measure": (SAME, ["--measure", "instructions"]),
    "vcs": (SAME, ["--vcs", "hg"]), "weekly_reference": (SAME, ["--weekly-reference"]),
    "base_commit": (SAME, ["--base-commit", "v0"]), "same_host": (SAME, ["--other-host"]),
    "follow": (REFUSED, ["--follow"]), "builds_dir": (REFUSED, ["--builds-dir", "b"]),
    "status_file": (REFUSED, ["--status-file", "stop"]),
    "remote": (REFUSED, ["--remote", "origin", "--branch", "main"]),
    "branch": (REFUSED, ["--remote", "origin", "--branch", "main"]),
    "target": (REFUSED, ["--target", "ssh:host=pi"]), "db": (REFUSED, ["--db", "x.sqlite"]),
    "interval": (HERE, []), "quiet": (HERE, []), "dry_run": (HERE, []),
}
TABLES = {"run": RUN, "compare": COMPARE, "track": TRACK}
# What each command needs beside the spec.
REQUIRED = {"run": [], "compare": [], "track": ["--repo", "/srv/repo", "--program", "{WORKTREE}/bench"]}
ROUTE = {"run": ["--lab-pool", "walk=none"], "compare": ["--lab-device", DEVICE],
         "track": ["--lab-device", DEVICE]}


def _params(command: str) -> set[str]:
    click = typer.main.get_command(app)
    return {p.name for p in click.commands[command].params}  # type: ignore[attr-defined]


@pytest.fixture
def walk_lab(lab_url: str) -> Iterator[str]:
    with open_lab(lab_url) as lab:
        register_device(lab.store, device_id=DEVICE, host="walk", kind="host", target="host",
                        properties={"cores": 2}, pools=[])
    yield lab_url


def _submit(url: str, command: str, spec: Path, extra: list[str]) -> tuple[int, str, LabJob | None]:
    before = _newest(url)
    args = [command, str(spec), *REQUIRED[command], *extra, "--lab", url, *ROUTE[command],
            "--detach"]
    # A later value of a repeated option wins in click: the option's own comes last.
    code, output = _invoke(args)
    after = _newest(url)
    return code, output, after if after and (before is None or after.id != before.id) else None


def _invoke(args: list[str]) -> tuple[int, str]:
    """The command's exit code and output, a benchlab error read as ``main`` reports it."""
    done = CliRunner().invoke(app, args)
    if isinstance(done.exception, BenchlabError):
        return done.exception.exit_code, str(done.exception)
    return done.exit_code, done.output


def _newest(url: str) -> LabJob | None:
    with open_lab(url) as lab:
        jobs = list_jobs(lab.store)
    return max(jobs, key=lambda job: job.id) if jobs else None


def _carried(job: LabJob) -> str:
    return json.dumps([job.request.digest, job.request.options], sort_keys=True)


@pytest.mark.parametrize("command", ["run", "compare", "track"])
def test_every_option_reaches_the_lab_job_or_is_refused(
        command: str, walk_lab: str, tmp_path: Path) -> None:
    table = TABLES[command]
    assert _params(command) == set(table), (
        "classify each new option: does a lab job carry it, refuse it, or is it local?")
    spec = nap_spec(tmp_path, 0.0, tmp_path / "marks.jsonl")
    code, output, baseline = _submit(walk_lab, command, spec, [])
    assert code == 0 and baseline is not None, output
    stored = {_carried(baseline): "(none)"}
    posted = []
    for name, (how, argv) in table.items():
        if how == SAME:
            code, output, job = _submit(walk_lab, command, spec, argv)
            assert code == 0 and job is not None, f"{name}: {output}"
            seen = _carried(job)
            assert seen not in stored, f"{name} changed nothing the job carries " \
                                      f"(same as {stored.get(seen)})"
            stored[seen] = name
            posted.append(job)
        elif how == REFUSED:
            code, output, job = _submit(walk_lab, command, spec, argv)
            assert code == 2 and job is None, f"{name} was not refused: {output}"
            assert argv[0] in output or argv[-2] in output, f"{name}: {output}"

    # The HTTP API stores the same requests, digest for digest.
    with TestClient(create_app(walk_lab)) as client:
        value, _ = create_token(client.app.state.lab.store, "ci", "submit")  # type: ignore[attr-defined]
        for job in posted:
            body = {"sweep": dict(job.request.sweep), "kind": job.request.kind,
                    "options": dict(job.request.options), "device": DEVICE}
            reply = client.post("/api/v1/jobs", json=body,
                                headers={"Authorization": f"Bearer {value}"})
            assert reply.status_code == 201, reply.text
            [again] = reply.json()
            with open_lab(walk_lab) as lab:
                assert _carried(get_job(lab.store, again["id"])) == _carried(job)


def test_the_stored_sweep_is_the_local_one(walk_lab: str, tmp_path: Path) -> None:
    """What the device runs is the sweep this machine built: same digest, same scenario."""
    spec = nap_spec(tmp_path, 0.0, tmp_path / "marks.jsonl")
    argv = ["--scenario", "server", "--latency-bound", "15ms", "--prompt-tokens", "64",
            "--order", "jobs", "--energy", "rapl", "--goal", "7%"]
    code, output, job = _submit(walk_lab, "run", spec, argv)
    assert code == 0 and job is not None, output
    folder = tmp_path / "device"
    folder.mkdir()
    on_device = job.request.sweep_on(folder, "host")
    assert on_device.scenario is not None and on_device.scenario.latency_bound_ms == 15.0
    assert [g.prompt_tokens for g in on_device.generations] == [64]
    assert on_device.order == "jobs" and on_device.energy is not None
    assert on_device.race_policy() is not None and on_device.race_policy().goal == 0.07
    assert on_device.digest() == job.request.digest
    # ... and the dry run prints the digest the job got, without queueing anything.
    code, output = _invoke(["run", str(spec), *argv, "--lab", walk_lab,
                            "--lab-pool", "walk=none", "--dry-run"])
    assert code == 0, output
    assert json.loads(output)["digest"] == job.request.digest


def test_a_bad_wire_form_is_a_400_naming_the_field(walk_lab: str) -> None:
    with TestClient(create_app(walk_lab)) as client:
        value, _ = create_token(client.app.state.lab.store, "ci", "submit")  # type: ignore[attr-defined]
        headers = {"Authorization": f"Bearer {value}"}
        wire = Sweep.of(models=["mlp"]).to_wire()
        for broken, field in (({**wire, "scenario": {"name": "server"}}, "scenario"),
                              ({**wire, "overrides": {"warmup": -1}}, "overrides"),
                              ({**wire, "v": 99}, "v99"), ({**wire, "gpu": 1}, "gpu"),
                              ({**wire, "specs": {"": "x"}}, "specs")):
            reply = client.post("/api/v1/jobs", headers=headers,
                                json={"sweep": broken, "device": DEVICE})
            assert reply.status_code == 400 and field in reply.text, reply.text


def test_a_job_process_summary_is_read_back_whole_past_other_output() -> None:
    """The worker reads the job process's typed summary, not a dict by convention."""
    from benchlab.lab.jobs import JobSummary

    ran = JobSummary(run_uuid="u-1", results=4, failed=1, spooled=2)
    out = "\n".join(["a runtime's own line", ran.line(), '{"tokens": 12}', "bye"])
    assert JobSummary.read(out) == ran
    assert ran.reason("run") == ("4 results, 1 failed (2 kept in the worker's spool while the "
                                 "database was away, then stored)")
    report = JobSummary(report={"text": "| ok |", "exit_code": 1})
    assert JobSummary.read(report.line()) == report
    assert report.reason("compare") == "compare done, exit code 1"
    assert JobSummary.read(JobSummary(error="bad spec", user_error=True).line()).error == \
        "bad spec"
    assert JobSummary.read("killed before it could say") is None

"""``benchlab run --report-to``: the reporter against a real lab server on loopback.

No HTTP mocks: each test runs the lab's FastAPI app under uvicorn in a thread, on a real
PostgreSQL database, and the reporter talks to it over TCP.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchlab.errors import UsageError
from benchlab.lab.devices import register_device
from benchlab.lab.queue import store_url
from benchlab.lab.reporter import Reporter, ReportedRun, resolve_token
from benchlab.lab.tokens import create_token
from benchlab.schema.labels import RunLabels, labels_line
from benchlab.schema.result import JobIdentity, Result, Sample, Status, Summary
from benchlab.store import ResultStore, RunStatus, open_store

from .agents import free_port, serve

pytestmark = pytest.mark.postgres

RUN = ReportedRun("3f2b8c1e-5d6a-4b7c-9e0f-a1b2c3d4e5f6", "fp-1", "nightly", "box1",
              "2025-01-02T03:04:05+00:00")
FAST = {"backoff": (0.05,), "retries": 1, "timeout": 5.0}


def _older_lab(app: Any) -> Any:
    """The lab as a server from before ``/finish`` existed: that route answers 404 (with the
    framework's own text, as a server without the route does); everything else is the lab."""

    async def older(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/finish"):
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b'{"detail":"Not Found"}'})
            return
        await app(scope, receive, send)

    return older


@pytest.fixture
def lab_store(lab_url: str) -> Iterator[ResultStore]:
    """The lab database's store, to make tokens and look at what arrived."""
    with open_store(store_url(lab_url)) as store:
        yield store


def make_result(test: str = "cpu", device: str = "box1", p50: float = 12.5) -> Result:
    """A result with samples over two processes, one operator sample and an infinite value."""
    identity = JobIdentity(spec="specs/tiny.yaml", model_name="tiny", model_hash="sha256:01",
                           test_identifier=test, framework="onnxruntime",
                           framework_config={"threads": 1}, target="host", device=device)
    samples = tuple(Sample("latency", p50 + i / 4, "ms", repetition=i % 2, index=i // 2)
                    for i in range(4)) + (Sample("latency", 0.5, "ms", type="Gemm"),
                                          Sample("latency", math.inf, "ms", type="Relu"))
    summary = Summary(unit="ms", count=4, mean=p50, stdev=0.1, min=p50, p10=p50, p50=p50,
                      p90=p50 + 0.5, p99=p50 + 0.7, max=p50 + 0.75, mad=0.2, cv=0.01,
                      ci_low=p50 - 0.1, ci_high=p50 + 0.1)
    return Result(identity=identity, status=Status.OK, samples=samples,
                  summaries={"NET latency": summary}, environment={"hostname": device},
                  details={"runtime_version": "1.17.0"}, started_at="2025-01-02T03:04:06+00:00",
                  finished_at="2025-01-02T03:04:09+00:00")


def test_results_arrive_under_the_runs_uuid_once(lab_store: ResultStore, lab_url: str,
                                                 tmp_path: Path) -> None:
    token, _ = create_token(lab_store, "ci", "report")
    sent = [make_result("cpu"), make_result("gpu", p50=3.0)]
    with serve(lab_url, free_port()) as url:
        reporter = Reporter(url, token=token, spool_dir=tmp_path / "spool",
                            run_info=lambda uuid: RUN, **FAST)
        reporter.on_run(RUN.uuid)
        for result in sent:
            reporter.on_result(result)
        reporter.on_result(sent[0])  # posted again: the lab keeps one
        summary = reporter.close()

    assert (summary.delivered, summary.spooled, summary.rejected) == (3, 0, 0)
    run = lab_store.get_run(RUN.uuid)
    assert (run.uuid, run.fingerprint, run.description, run.host, run.created_at) == (
        RUN.uuid, "fp-1", "nightly", "box1", RUN.created_at)
    stored = lab_store.results(RUN.uuid)
    assert [r.identity.test_identifier for r in stored] == ["cpu", "gpu"]
    assert [r.to_dict() for r in stored] == [r.to_dict() for r in sent]
    # close() told the lab the run ended
    assert summary.finished_as == "finished" and run.status is RunStatus.FINISHED
    assert run.finished_at is not None
    assert summary.lines() == [f"reported 3 results to {url}",
                               f"the lab records run {RUN.uuid} as finished"]


def test_the_run_labels_reach_the_lab_with_each_result(lab_store: ResultStore, lab_url: str,
                                                        tmp_path: Path) -> None:
    """run --user-identifier/--user-string/--platform-sig: the lab gets them in each result
    (FAI-PEP's remote reporter carries the user string and the user identifier)."""
    token, _ = create_token(lab_store, "ci", "report")
    labels = RunLabels(user_identifier="nightly-42", user_string="ana", platform="lab-x86-01")
    sent = labels.stamp(make_result("cpu"))
    with serve(lab_url, free_port()) as url:
        reporter = Reporter(url, token=token, spool_dir=tmp_path / "spool",
                            run_info=lambda uuid: RUN, **FAST)
        reporter.on_run(RUN.uuid)
        reporter.on_result(sent)
        assert reporter.close().delivered == 1
    [stored] = lab_store.results(RUN.uuid)
    assert stored.details["user_identifier"] == "nightly-42"
    assert stored.details["user_string"] == "ana"
    assert stored.environment["platform"] == "lab-x86-01"
    assert labels_line([stored]) == "user: nightly-42 · user string: ana · platform: lab-x86-01"


def test_the_endpoint_says_duplicate_and_refuses_malformed_results(
        lab_store: ResultStore, lab_url: str) -> None:
    import httpx

    token, _ = create_token(lab_store, "ci", "report")
    body = {"run": RUN.to_json(), "result": make_result().to_dict()}
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with serve(lab_url, free_port()) as url, httpx.Client(base_url=url,
                                                           headers=headers) as client:

        def post(data: dict, **kwargs: object) -> httpx.Response:
            # json.dumps, as the reporter does: samples may be infinite (httpx's json= refuses)
            return client.post("/api/v1/results", content=json.dumps(data),
                               **kwargs)  # type: ignore[arg-type]

        first = post(body).json()
        again = post(body).json()
        no_identity = post({"run": RUN.to_json(), "result": {"status": "ok"}})
        bad_status = post({"run": RUN.to_json(),
                           "result": {**body["result"], "status": "great"}})
        not_a_number = post({"run": RUN.to_json(), "result": {
            **body["result"], "samples": [{**body["result"]["samples"][0], "value": "abc"}]}})
        bad_uuid = post({"run": {**RUN.to_json(), "uuid": "run-1"}, "result": body["result"]})
        anonymous = post(body, headers={"Authorization": ""})
    assert first["duplicate"] is False and again == {**first, "duplicate": True}
    assert first["run_uuid"] == RUN.uuid
    assert no_identity.status_code == 422 and "identity" in no_identity.json()["detail"]
    assert bad_status.status_code == 422
    assert "status: Input should be" in bad_status.json()["detail"]
    assert not_a_number.status_code == 422
    assert "samples.0.value" in not_a_number.json()["detail"]
    assert bad_uuid.status_code == 422 and "not a run UUID" in bad_uuid.json()["detail"]
    assert anonymous.status_code == 401


def test_a_lab_that_is_down_gets_the_spool_later(lab_store: ResultStore, lab_url: str,
                                                 tmp_path: Path) -> None:
    token, _ = create_token(lab_store, "ci", "report")
    port = free_port()
    spool = tmp_path / "spool"
    lines: list[str] = []
    reporter = Reporter(f"http://127.0.0.1:{port}", token=token, spool_dir=spool,
                        run_info=lambda uuid: RUN, log=lines.append, **FAST)
    reporter.on_run(RUN.uuid)
    sent = [make_result(test) for test in ("a", "b", "c")]
    for result in sent:
        reporter.on_result(result)  # nothing raised
    reporter.on_result(sent[0])  # spooled again: overwrites its file
    assert sorted(p.name for p in spool.glob("*.json")) == sorted(
        f"{RUN.uuid}-{r.identity.key}.json" for r in sent)
    assert any("unreachable" in line for line in lines)

    with serve(lab_url, port):
        assert reporter.flush() == 3
        summary = reporter.close()
    assert (summary.delivered, summary.spooled, summary.rejected) == (3, 0, 0)
    assert list(spool.glob("*.json")) == []
    assert sorted(r.identity.test_identifier for r in lab_store.results(RUN.uuid)) == [
        "a", "b", "c"]


def test_a_new_reporter_sends_what_an_earlier_one_spooled(lab_store: ResultStore, lab_url: str,
                                                          tmp_path: Path) -> None:
    token, _ = create_token(lab_store, "ci", "report")
    port = free_port()
    spool = tmp_path / "spool"
    offline = Reporter(f"http://127.0.0.1:{port}", token=token, spool_dir=spool,
                       log=lambda line: None, **FAST)
    offline.on_run(RUN.uuid)
    offline.on_result(make_result("old"))
    left = offline.close()
    assert (left.delivered, left.spooled) == (0, 1)
    assert "it is sent on the next run" in left.lines()[1]

    later = ReportedRun("9c1d2e3f-4a5b-4c6d-8e7f-001122334455")
    with serve(lab_url, port) as url:
        reporter = Reporter(url, token=token, spool_dir=spool, log=lambda line: None, **FAST)
        reporter.on_run(later.uuid)  # sends the spool first
        reporter.on_result(make_result("new"))
        summary = reporter.close()
    assert (summary.delivered, summary.spooled) == (2, 0)
    assert [r.identity.test_identifier for r in lab_store.results(RUN.uuid)] == ["old"]
    assert [r.identity.test_identifier for r in lab_store.results(later.uuid)] == ["new"]


class _ClosesItsStream(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that closes its stream when closed, as absl's does."""

    def close(self) -> None:
        self.stream.close()
        super().close()


def test_a_lab_server_in_the_test_process_leaves_other_handlers_open(lab_url: str) -> None:
    stream = io.StringIO()
    handler = _ClosesItsStream(stream)
    try:
        with serve(lab_url, free_port()):
            pass
        assert not stream.closed, "starting the server closed another library's log handler"
    finally:
        handler.close()


def test_a_bad_token_is_rejected_once_and_never_shown(lab_store: ResultStore, lab_url: str,
                                                      tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    bad = "bl_this-is-not-a-real-token-0123456789"
    spool = tmp_path / "spool"
    with serve(lab_url, free_port()) as url:
        # A retry would sleep 5 s: finishing fast shows a 401 is not retried.
        reporter = Reporter(url, token=bad, spool_dir=spool, backoff=(5.0,), retries=3)
        started = time.monotonic()
        reporter.on_run(RUN.uuid)
        reporter.on_result(make_result("a"))
        reporter.on_result(make_result("b"))  # not even tried: the token was refused
        summary = reporter.close()
        elapsed = time.monotonic() - started
    assert elapsed < 4.0
    assert (summary.delivered, summary.rejected, summary.spooled) == (0, 1, 2)
    assert "HTTP 401" in summary.problems[0]
    err = capsys.readouterr().err
    assert "refused the token" in err and bad not in err
    assert all(bad not in path.read_text() for path in spool.rglob("*.json"))
    with pytest.raises(UsageError):
        lab_store.get_run(RUN.uuid)  # nothing reached the lab


def test_a_worker_token_posts_only_for_its_own_hosts_devices(
        lab_store: ResultStore, lab_url: str, tmp_path: Path) -> None:
    register_device(lab_store, device_id="host:box1", host="box1", kind="host", target="host",
                    properties={"hostname": "box1"}, pools=[])
    own, _ = create_token(lab_store, "box1-worker", "worker", host="box1")
    other, _ = create_token(lab_store, "box2-worker", "worker", host="box2")
    submit_only, _ = create_token(lab_store, "submitter", "submit")
    with serve(lab_url, free_port()) as url:
        outcomes = {}
        for name, token in (("own", own), ("other", other), ("submit", submit_only)):
            reporter = Reporter(url, token=token, spool_dir=tmp_path / name,
                                log=lambda line: None, **FAST)
            reporter.on_run(RUN.uuid)
            reporter.on_result(make_result(name, device="box1"))
            outcomes[name] = reporter.close()
    assert (outcomes["own"].delivered, outcomes["own"].rejected) == (1, 0)
    for name in ("other", "submit"):
        assert (outcomes[name].delivered, outcomes[name].rejected) == (0, 1)
        assert "HTTP 403" in outcomes[name].problems[0]
        [kept] = (tmp_path / name / "rejected").glob("*.json")
        assert json.loads(kept.read_text())["rejected"].startswith("HTTP 403")
        assert outcomes[name].spooled == 0  # refused for good: not re-sent
    assert "box2" in outcomes["other"].problems[0]
    assert [r.identity.test_identifier for r in lab_store.results(RUN.uuid)] == ["own"]
    # the worker finished the run it reported; the others reported nothing, so tried nothing
    assert outcomes["own"].finished_as == "finished"
    assert outcomes["other"].run_uuid is None and outcomes["other"].finish_problem == ""


def test_finish_moves_a_reported_run_to_its_end_state(lab_store: ResultStore, lab_url: str
                                                      ) -> None:
    import httpx

    register_device(lab_store, device_id="host:box1", host="box1", kind="host", target="host",
                    properties={"hostname": "box1"}, pools=[])
    tokens = {name: create_token(lab_store, name, scope, host=host)[0] for name, scope, host in (
        ("ci", "report", ""), ("own", "worker", "box1"), ("other", "worker", "box2"),
        ("submitter", "submit", ""))}
    other_run = ReportedRun("0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d")
    finish = f"/api/v1/runs/{RUN.uuid}/finish"
    with serve(lab_url, free_port()) as url, httpx.Client(base_url=url) as client:

        def post(path: str, token: str | None, body: Any = None) -> httpx.Response:
            headers = {"Content-Type": "application/json"}
            if token:
                headers["Authorization"] = f"Bearer {token}"
            # json.dumps, as the reporter does: a result's samples may be infinite
            content = None if body is None else json.dumps(body)
            return client.post(path, content=content, headers=headers)

        for run in (RUN, other_run):
            posted = post("/api/v1/results", tokens["ci"],
                          {"run": run.to_json(), "result": make_result().to_dict()})
            assert posted.status_code == 200, posted.text
        before = client.get(f"/api/v1/runs/{RUN.uuid}").json()["run"]
        # its one result ended in 2025: long quiet, so shown abandoned, though stored running
        assert (before["status"], before["stored_status"]) == ("abandoned", "running")
        assert post(finish, None).status_code == 401
        assert post(finish, tokens["submitter"]).status_code == 403
        assert post(finish, tokens["other"]).status_code == 403  # box1's results, not box2's
        assert post(finish, tokens["ci"], {"status": "failed"}).status_code == 422
        unknown = post("/api/v1/runs/00000000-0000-4000-8000-000000000000/finish",
                       tokens["ci"])
        assert unknown.status_code == 404
        assert post("/api/v1/runs/latest/finish", tokens["ci"]).status_code == 422
        assert lab_store.get_run(RUN.uuid).status is RunStatus.RUNNING  # nothing changed

        done = post(finish, tokens["ci"])
        assert done.status_code == 200, done.text
        assert (done.json()["status"], done.json()["stored_status"]) == ("finished",
                                                                          "finished")
        stopped = post(f"/api/v1/runs/{other_run.uuid}/finish", tokens["own"],
                       {"status": "interrupted"})
        assert stopped.status_code == 200, stopped.text
        listed = {r["uuid"]: r["status"] for r in client.get("/api/v1/runs").json()}
    assert listed == {RUN.uuid: "finished", other_run.uuid: "interrupted"}
    assert lab_store.get_run(RUN.uuid).status is RunStatus.FINISHED
    assert lab_store.get_run(other_run.uuid).status is RunStatus.INTERRUPTED


def test_an_older_lab_without_finish_does_not_break_the_run(
        lab_store: ResultStore, lab_url: str, tmp_path: Path) -> None:
    token, _ = create_token(lab_store, "ci", "report")
    with serve(lab_url, free_port(), wrap=_older_lab) as url:
        reporter = Reporter(url, token=token, spool_dir=tmp_path / "spool",
                            run_info=lambda uuid: RUN, log=lambda line: None, **FAST)
        reporter.on_run(RUN.uuid)
        reporter.on_result(make_result())
        summary = reporter.close()
    assert (summary.delivered, summary.rejected, summary.spooled) == (1, 0, 0)
    assert summary.finished_as is None and "HTTP 404" in summary.finish_problem
    (first, line) = summary.lines()
    assert first == f"reported 1 result to {url}"
    assert line.startswith(f"could not tell the lab that run {RUN.uuid} ended")
    assert "older than this benchlab" in line and "abandoned" in line
    assert lab_store.get_run(RUN.uuid).status is RunStatus.RUNNING


def test_a_run_stopped_by_an_error_is_reported_interrupted(
        lab_store: ResultStore, lab_url: str, tmp_path: Path) -> None:
    token, _ = create_token(lab_store, "ci", "report")
    with serve(lab_url, free_port()) as url:
        with pytest.raises(KeyboardInterrupt), Reporter(
                url, token=token, spool_dir=tmp_path / "spool", run_info=lambda uuid: RUN,
                log=lambda line: None, **FAST) as reporter:
            reporter.on_run(RUN.uuid)
            reporter.on_result(make_result())
            raise KeyboardInterrupt
    assert lab_store.get_run(RUN.uuid).status is RunStatus.INTERRUPTED


def test_the_token_comes_from_env_then_config(tmp_path: Path) -> None:
    config = tmp_path / "lab.toml"
    url = "http://lab.example:8000"
    with pytest.raises(UsageError, match="BENCHLAB_LAB_TOKEN"):
        resolve_token(url, environ={}, config=config)
    config.write_text('[report]\nurl = "http://lab.example:8000/"\ntoken = "bl_file"\n')
    assert resolve_token(url, environ={}, config=config) == "bl_file"
    assert resolve_token(url, environ={"BENCHLAB_LAB_TOKEN": "bl_env"}, config=config) == "bl_env"
    assert resolve_token(url, "bl_arg", environ={"BENCHLAB_LAB_TOKEN": "x"}) == "bl_arg"
    # A token configured for another lab is not sent to this one.
    with pytest.raises(UsageError):
        resolve_token("http://elsewhere:8000", environ={}, config=config)
    with pytest.raises(UsageError, match="without credentials"):
        Reporter("http://user:pw@lab.example", token="bl_x")


@pytest.mark.slow
def test_benchlab_run_report_to(lab_store: ResultStore, lab_url: str, tmp_path: Path) -> None:
    token, _ = create_token(lab_store, "ci", "report")
    script = tmp_path / "job.py"
    script.write_text(
        "import sys\n"
        "print('PyTorchObserver {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\","
        "\"value\":' + sys.argv[1] + '}')\n")
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps({
        "model": {"name": "tiny", "format": "script",
                  "files": {"job": {"location": str(script), "md5": None}}},
        "tests": [{"identifier": f"t{i}", "commands": [f"{{PYTHON}} {{files.job}} 1.{i}"]}
                  for i in range(2)],
    }))
    db = tmp_path / "local.db"
    env = {**os.environ, "HOME": str(tmp_path / "home"), "BENCHLAB_LAB_TOKEN": token,
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    with serve(lab_url, free_port()) as url:
        proc = subprocess.run(
            [sys.executable, "-m", "benchlab", "run", str(spec), "--db", str(db), "-q",
             "--report-to", url], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"reported 2 results to {url}" in proc.stderr
    assert token not in proc.stdout + proc.stderr
    with open_store(db) as local:
        run = local.get_run("latest")
        mine = local.results(run.id)
    remote = lab_store.results(run.uuid)
    assert sorted(r.identity.key for r in remote) == sorted(r.identity.key for r in mine)
    assert [r.samples for r in remote] == [r.samples for r in mine]
    assert lab_store.get_run(run.uuid).fingerprint == run.fingerprint
    assert lab_store.get_run(run.uuid).status is RunStatus.FINISHED
    assert f"the lab records run {run.uuid} as finished" in proc.stderr

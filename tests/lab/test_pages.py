"""The lab's pages and their JSON twins, on a seeded lab database (TestClient)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import update

from benchlab.lab.devices import quarantine, register_device, set_health, set_state
from benchlab.lab.jobs import LabRequest, new_jobs, set_job
from benchlab.harness.sweep import Sweep
from benchlab.lab.queue import store_url
from benchlab.lab.server.app import create_app
from benchlab.lab.tokens import create_token
from benchlab.schema.result import JobIdentity, Result, Sample, Status
from benchlab.stats.summary import summarize
from benchlab.store import ResultStore, open_store
from benchlab.lab.tables import lab_devices

pytestmark = pytest.mark.postgres

MODELS = ("resnet18", "mobilenet_v3")
FRAMEWORKS = ("onnxruntime", "pytorch")
DEVICES = ("host:bench-01", "adb:Pixel_8-ABC")
BASE_MS = {("resnet18", "onnxruntime"): 10.0, ("resnet18", "pytorch"): 14.0,
           ("mobilenet_v3", "onnxruntime"): 3.0, ("mobilenet_v3", "pytorch"): 5.0}
RUNS = 6
JITTER = (1.0, 1.01, 0.99)
STEP_RUN = 3  # from this run on, onnxruntime 1.19 makes resnet18 on onnxruntime 20% slower


def build_app(url: str) -> FastAPI:
    """The lab app (create_app installs the pages)."""
    return create_app(url)


def _result(model: str, framework: str, device: str, run: int) -> Result:
    target, _, host = device.partition(":")
    base = BASE_MS[(model, framework)] * (1.5 if target == "adb" else 1.0)
    new_runtime = run >= STEP_RUN
    if new_runtime and (model, framework) == ("resnet18", "onnxruntime"):
        base *= 1.2
    # Each run drifts by -1, 0 or +1% (the same pattern before and after the step, so the
    # step's size stays exactly 20%); samples spread ±2% over two processes.
    base *= JITTER[run % 3]
    values = [base * (1 + 0.02 * ((i * 7) % 11 - 5) / 5) for i in range(40)]
    samples = [Sample("latency", v, "ms", repetition=i % 2, index=i // 2)
               for i, v in enumerate(values)]
    samples += [Sample("latency", base * 0.4, "ms", type="Conv", index=i) for i in range(5)]
    summaries = {"NET latency": summarize(values, "ms"),
                 "Conv latency": summarize([base * 0.4] * 5, "ms"),
                 "NET sqnr": summarize([42.0], "dB")}
    started = f"2026-01-{run + 1:02d}T03:04:05+00:00"
    return Result(
        identity=JobIdentity(spec="specs/zoo.yaml", model_name=model, model_hash="sha256:1",
                             test_identifier="default", framework=framework,
                             framework_config={"threads": 4}, target=target, device=host),
        status=Status.OK, samples=tuple(samples), summaries=summaries,
        environment={"hostname": host, "cpu_model": "Xeon Gold", "os": "Linux"},
        details={"runtime_version": f"{framework}-{'1.19' if new_runtime else '1.18'}",
                 "commit": f"c0ffee{run}", "repetitions": 2,
                 "job_stop_reason": "fixed_repetitions"},
        started_at=started, finished_at=started.replace("03:04:05", "03:04:09"),
    )


def seed_results(store: ResultStore) -> list[int]:
    """``RUNS`` runs of the whole matrix; the last run's pytorch on the phone fails."""
    run_ids = []
    for run in range(RUNS):
        record = store.start_run(fingerprint="fp", description=f"nightly {run}", host="ci")
        for model in MODELS:
            for framework in FRAMEWORKS:
                for device in DEVICES:
                    result = _result(model, framework, device, run)
                    if run == RUNS - 1 and framework == "pytorch" and device.startswith("adb"):
                        result = Result(identity=result.identity, status=Status.FAILED,
                                        error="runtime crashed: SIGSEGV",
                                        started_at=result.started_at,
                                        finished_at=result.finished_at)
                    store.add_result(record.id, result)
        store.finish_run(record.id)
        run_ids.append(record.id)
    return run_ids


def seed_devices(store: ResultStore) -> None:
    """Five devices: idle, busy, offline (stale heartbeat), quarantined, bad health."""
    props = {"kind": "adb", "model": "Pixel 8", "soc": "Tensor G3", "os": "android"}
    for name in ("pixel-idle", "pixel-busy", "pixel-stale", "pixel-quar", "pixel-sick"):
        register_device(store, device_id=name, host="lab-host-1", kind="adb",
                        target=f"adb:{name}", properties=props, pools=["pixel8"],
                        device_state={"temperatures_c": {"cpu": 41.5},
                                      "battery": {"level": 87}})
    set_health(store, "pixel-idle", "good", "ran the smoke model in 12 ms")
    set_state(store, "pixel-busy", "busy", job_id=7)
    with store.transaction("age a heartbeat") as conn:
        conn.execute(update(lab_devices).where(lab_devices.c.id == "pixel-stale")
                     .values(last_heartbeat=time.time() - 3600))
    quarantine(store, "pixel-quar", who="alice", reason="screen cracked")
    set_health(store, "pixel-sick", "bad", "thermal throttling at idle")


def seed_jobs(store: ResultStore) -> list[int]:
    """A job bound to the quarantined device, waiting for ten minutes (stuck), and one fresh."""
    stuck = new_jobs(store, LabRequest.of(Sweep.of(models=["resnet18"])), device="pixel-quar",
                     submitted_by="bob")[0]
    set_job(store, stuck.id, created_at=time.time() - 600)
    fresh = new_jobs(store, LabRequest.of(Sweep.of(models=["mobilenet_v3"])), device="pixel-idle")[0]
    return [stuck.id, fresh.id]


def seed_report(store: ResultStore) -> int:
    """A finished compare job on a lab device whose report finds resnet18 slower."""
    job = new_jobs(store, LabRequest.of(Sweep.of(models=["resnet18"]), kind="compare", options={
        "control": {"config": "onnxruntime:threads=1"},
        "treatment": {"config": "onnxruntime:threads=2"}}), device="pixel-idle")[0]
    report = {"text": "| resnet18/default | latency | +7.9% | regression |", "exit_code": 1,
              "json": {"regressions": ["resnet18/default NET latency"], "exit_code": 1}}
    set_job(store, job.id, status="finished", device_id="pixel-idle", finished_at=time.time(),
            reason="compare done, exit code 1", report_json=json.dumps(report))
    return job.id


@contextmanager
def seeded(url: str) -> Iterator[dict]:
    """Seed the lab database ``url``; yields the run ids and job ids."""
    with open_store(store_url(url)) as store:
        runs = seed_results(store)
        seed_devices(store)
        jobs = seed_jobs(store)
        report_job = seed_report(store)
        token, _ = create_token(store, "admin", "admin")
    yield {"runs": runs, "jobs": jobs, "admin": token, "report_job": report_job}


@pytest.fixture
def client(lab_url: str) -> Iterator[tuple[TestClient, dict]]:
    with seeded(lab_url) as info, TestClient(build_app(lab_url)) as c:
        yield c, info


def _rows(html: str, table_id: str) -> int:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return body.count("<tr") - 1  # minus the header row


def test_overview_shows_latest_matrix_and_changes(client: tuple[TestClient, dict]) -> None:
    c, _ = client
    page = c.get("/")
    assert page.status_code == 200
    html = page.text
    for name in (*MODELS, *DEVICES, "onnxruntime[threads=4]", "pytorch[threads=4]"):
        assert name in html
    assert _rows(html, "matrix") == len(MODELS) * len(FRAMEWORKS)
    assert "runtime crashed" in html  # the failed cell says why
    assert "<svg" in html and "<circle" in html
    data = c.get("/api/v1/overview").json()
    assert len(data["rows"]) == len(MODELS) * len(FRAMEWORKS) * len(DEVICES)
    for row in data["rows"]:
        if row["status"] == "ok":
            assert re.search(rf"<b>{re.escape(_num(row['p50']))}</b>", html)
    # The latest run drifted 2% down from the one before, beyond both one-process intervals
    # but under the 3% a flag needs (lab.views.changed): shown, not flagged.
    ok = [r for r in data["rows"] if r["status"] == "ok"]
    assert all(not r["significant"] and abs(r["change"] - (0.99 / 1.01 - 1)) < 1e-9
               for r in ok)
    assert html.count('class="down"') == 1  # the legend's


def _num(value: float) -> str:
    from benchlab.report.svg import num

    return num(value)


def test_overview_filters(client: tuple[TestClient, dict]) -> None:
    c, _ = client
    html = c.get("/", params={"model": "mobilenet_v3"}).text
    assert _rows(html, "matrix") == len(FRAMEWORKS)
    assert 'data-model="resnet18"' not in html and 'data-model="mobilenet_v3"' in html
    data = c.get("/api/v1/overview", params={"model": "mobilenet_v3",
                                             "device": "host:bench-01"}).json()
    assert {r["model"] for r in data["rows"]} == {"mobilenet_v3"}
    assert {r["device"] for r in data["rows"]} == {"host:bench-01"}
    assert len(data["rows"]) == len(FRAMEWORKS)
    assert "resnet18" in data["models"]  # the choices are the whole store's


def test_trends_have_ci_band_change_point_and_runtime_marks(
        client: tuple[TestClient, dict]) -> None:
    c, _ = client
    params = {"model": "resnet18", "backend": "onnxruntime", "device": "host:bench-01"}
    data = c.get("/api/v1/trends", params=params).json()
    (series,) = data["series"]
    assert len(series["points"]) == RUNS
    assert all(p["ci_low"] <= p["p50"] <= p["ci_high"] for p in series["points"])
    assert [p["commit"] for p in series["points"]] == [f"c0ffee{i}" for i in range(RUNS)]
    kinds = {(m["kind"], m["index"]) for m in series["marks"]}
    assert ("runtime", STEP_RUN) in kinds and ("change", STEP_RUN) in kinds
    html = c.get("/trends", params=params).text
    assert 'class="band"' in html and "mark-change" in html and "mark-runtime" in html
    assert "+20.0%" in html
    for p in series["points"]:
        assert _num(p["p50"]) in html
    # no device: one series per device
    both = c.get("/api/v1/trends", params={"model": "resnet18", "backend": "pytorch"}).json()
    # the phone's last pytorch result failed: only ok results are points
    assert sorted(len(s["points"]) for s in both["series"]) == [RUNS - 1, RUNS]


def test_compare_two_runs(client: tuple[TestClient, dict]) -> None:
    c, info = client
    a, b = info["runs"][0], info["runs"][STEP_RUN]  # same drift, across the step
    data = c.get("/api/v1/compare", params={"a": a, "b": b}).json()
    assert data["unpaired"] is True
    # Each run is flat, as /api/v1/runs shows it.
    assert (data["run_a"]["id"], data["run_b"]["id"]) == (a, b)
    assert data["run_b"]["stored_status"] == "finished" and "record" not in data["run_b"]
    assert len(data["rows"]) == len(MODELS) * len(FRAMEWORKS) * len(DEVICES)
    slower = [r for r in data["rows"] if r["verdict"] == "slower"]
    assert {(r["model"], r["backend"]) for r in slower} == {
        ("resnet18", "onnxruntime[threads=4]")}
    assert all(abs(r["ratio"] - 1.2) < 1e-6 for r in slower)
    html = c.get("/compare", params={"a": a, "b": b}).text
    assert "unpaired comparison of two stored runs" in html
    assert "×1.200" in html and _rows(html, "compare") == len(data["rows"])
    assert c.get("/compare", params={"a": "999999", "b": b}).status_code == 404
    assert c.get("/api/v1/compare", params={"a": "999999"}).status_code == 404


def test_devices_tabs_and_detail(client: tuple[TestClient, dict]) -> None:
    c, _ = client
    html = c.get("/devices").text
    counts = dict(re.findall(r'data-tab="(\w+)">\w+ <span class="count">(\d+)</span>', html))
    assert counts == {"all": "5", "alive": "4", "busy": "1", "idle": "3", "offline": "1",
                      "quarantined": "1"}
    assert _rows(html, "devices") == 5
    assert "41.5 °C" in html and "87%" in html and "job 7" in html
    assert "screen cracked" in html and "thermal throttling" in html
    offline = c.get("/devices", params={"tab": "offline"}).text
    assert _rows(offline, "devices") == 1 and "pixel-stale" in offline
    detail = c.get("/devices/pixel-sick").text
    assert "thermal throttling at idle" in detail and "Tensor G3" in detail
    assert _rows(detail, "events") >= 2
    assert c.get("/devices/nope").status_code == 404


def test_queue_flags_stuck_job_and_cancel_needs_admin(client: tuple[TestClient, dict]) -> None:
    c, info = client
    stuck, fresh = info["jobs"]
    html = c.get("/queue").text
    assert "device:pixel-quar" in html and "stuck" in html
    assert "device pixel-quar is quarantined: screen cracked" in html
    # Scripts cancel through the API's own endpoint; the page shows that command.
    cancel = f"/api/v1/jobs/{stuck}/cancel"
    assert cancel in html and "Authorization: Bearer" in html
    assert c.post(f"/api/v1/jobs/{fresh}/cancel").status_code == 401
    # These jobs were only recorded (no procrastinate ticket), so cancel_job just marks them.
    admin = {"Authorization": f"Bearer {info['admin']}"}
    ok = c.post(f"/api/v1/jobs/{fresh}/cancel", headers=admin)
    assert ok.status_code == 200 and ok.json()["status"] == "cancelled"
    assert c.post(f"/api/v1/jobs/{fresh}/cancel", headers=admin).status_code == 409
    assert c.post("/api/v1/jobs/99999/cancel", headers=admin).status_code == 404
    assert c.post(f"/queue/{stuck}/cancel", headers=admin).status_code in (404, 405)


def test_run_detail_and_unknown_run(client: tuple[TestClient, dict]) -> None:
    c, info = client
    run = info["runs"][-1]
    html = c.get(f"/runs/{run}").text
    assert "Xeon Gold" in html and "runtime crashed: SIGSEGV" in html
    assert "Conv latency" in html and "NET sqnr" in html and "accuracy" in html
    assert 'class="plot dist"' in html  # the matrix report's sample distribution
    data = c.get(f"/api/v1/runs/{run}").json()
    assert data["run"]["id"] == run and data["environment"]["cpu_model"] == "Xeon Gold"
    assert len(data["items"]) == len(MODELS) * len(FRAMEWORKS) * len(DEVICES)
    ok = next(i for i in data["items"] if i["status"] == "ok")
    latency = next(m for m in ok["metrics"] if m["key"] == "NET latency")
    assert latency["count"] == 40 and _num(latency["p50"]) in html
    missing = c.get("/runs/424242")
    assert missing.status_code == 404 and "no run" in missing.text
    assert c.get("/api/v1/runs/424242").status_code == 404
    assert c.get(f"/api/v1/runs/{run}/detail").status_code == 404  # one run endpoint


def test_static_css_and_empty_lab(lab_url: str) -> None:
    with TestClient(build_app(lab_url)) as c:
        assert c.get("/static/lab.css").status_code == 200
        for path in ("/", "/trends", "/compare", "/devices", "/queue"):
            assert c.get(path).status_code == 200, path


def test_ab_reports_from_lab_devices_are_listed_and_shown(
        client: tuple[TestClient, dict]) -> None:
    c, info = client
    job_id = info["report_job"]
    page = c.get(f"/jobs/{job_id}")
    assert page.status_code == 200
    assert "resnet18/default | latency | +7.9% | regression" in page.text
    assert "exit code 1: regression" in page.text and "pixel-idle" in page.text
    link = f'/jobs/{job_id}"'
    assert link in c.get("/trends?model=resnet18").text  # its model's trends list it
    assert link not in c.get("/trends?model=mobilenet_v3").text  # another model's do not
    assert link in c.get("/compare").text and link in c.get("/queue").text
    assert c.get("/jobs/99999").status_code == 404
    listed = c.get(f"/api/v1/jobs/{job_id}").json()
    assert listed["report"]["exit_code"] == 1


def _ok_result(model: str, framework: str, device: str, metrics: dict[str, float],
               status: Status = Status.OK, environment: dict | None = None,
               finished_at: str = "2026-02-01T03:04:09+00:00") -> Result:
    target, _, host = device.partition(":")
    summaries = {key: summarize([value] * 5, "dB" if "sqnr" in key else "ms")
                 for key, value in metrics.items()} if status is Status.OK else {}
    return Result(
        identity=JobIdentity(spec="specs/zoo.yaml", model_name=model, model_hash="sha256:2",
                             test_identifier="default", framework=framework,
                             framework_config={}, target=target, device=host),
        status=status, summaries=summaries, error=None if status is Status.OK else "crashed",
        environment=environment or {"hostname": host},
        started_at=finished_at.replace("03:04:09", "03:04:05"), finished_at=finished_at)


def test_trends_offer_only_what_the_model_has(lab_url: str) -> None:
    with open_store(store_url(lab_url)) as store:
        run = store.start_run(fingerprint="fp", description="two models", host="ci")
        store.add_result(run.id, _ok_result("resnet50", "generic", "host:box-a",
                                            {"NET latency": 9.0, "NET sqnr": 40.0}))
        store.add_result(run.id, _ok_result("mobilenet_v2", "tflite", "adb:pixel-7",
                                            {"NET latency": 4.0}))
        # A failed result is not something the model "has": its backend is not offered.
        store.add_result(run.id, _ok_result("mobilenet_v2", "onnxruntime", "host:box-a", {},
                                            status=Status.FAILED))
        store.finish_run(run.id)
    with TestClient(build_app(lab_url)) as c:
        for params in ({"model": "mobilenet_v2"},
                       # the form keeps the last model's choices when the model changes
                       {"model": "mobilenet_v2", "backend": "generic", "device": "host:box-a",
                        "metric": "NET sqnr"}):
            data = c.get("/api/v1/trends", params=params).json()
            assert data["frameworks"] == ["tflite"] and data["devices"] == ["adb:pixel-7"]
            assert data["metrics"] == ["NET latency"]
            assert data["filters"] == {"model": "mobilenet_v2", "backend": "tflite",
                                       "device": "", "metric": "NET latency"}
            (series,) = data["series"]
            assert [p["p50"] for p in series["points"]] == [4.0]
            html = c.get("/trends", params=params).text
            assert "No ok result" not in html and "generic" not in html
            assert "onnxruntime" not in html and "host:box-a" not in html
            assert '<option value="tflite" selected>' in html
        other = c.get("/api/v1/trends", params={"model": "resnet50"}).json()
        assert other["frameworks"] == ["generic"] and other["devices"] == ["host:box-a"]
        assert other["metrics"] == ["NET latency", "NET sqnr"]
        assert other["models"] == ["mobilenet_v2", "resnet50"]


def test_run_page_shows_the_environment_as_tables(lab_url: str) -> None:
    environment = {"hostname": "box-a", "kernel": None, "turbo": False, "gpus": [],
                   "flags": ["avx2", "fma"],
                   "cpus": {"cpu0": {"governor": "performance", "mhz": 3000},
                            "cpu1": {"governor": "powersave", "mhz": None}}}
    with open_store(store_url(lab_url)) as store:
        run = store.start_run(fingerprint="fp", description="env", host="ci")
        store.add_result(run.id, _ok_result("resnet50", "generic", "host:box-a",
                                            {"NET latency": 9.0}, environment=environment))
        store.finish_run(run.id)
    with TestClient(build_app(lab_url)) as c:
        html = c.get(f"/runs/{run.id}").text
    section = html.split('id="environment"', 1)[1].split("</details>", 1)[0]
    for repr_text in ("{'", "None", "True", "False", "[]", "['"):
        assert repr_text not in section, repr_text
    # nested mappings are nested key/value tables, lists are lists, nothing is a dash
    assert re.search(r"<th>cpus</th><td><table class=\"kv\"><tbody><tr><th>cpu0</th><td>"
                     r"<table class=\"kv\"><tbody><tr><th>governor</th><td>performance</td>",
                     section)
    assert "<th>mhz</th><td>3000</td>" in section and "<th>mhz</th><td>–</td>" in section
    assert '<ul class="kv"><li>avx2</li><li>fma</li></ul>' in section
    assert "<th>kernel</th><td>–</td>" in section and "<th>gpus</th><td>–</td>" in section
    assert "<th>turbo</th><td>no</td>" in section


def test_a_quiet_running_run_is_shown_abandoned(client: tuple[TestClient, dict]) -> None:
    from datetime import UTC, datetime, timedelta

    from benchlab.lab.run_state import ABANDONED_AFTER_S

    c, _ = client
    store = c.app.state.lab.store  # type: ignore[attr-defined]

    def ago(seconds: float) -> str:
        return (datetime.now(UTC) - timedelta(seconds=seconds)).isoformat()

    quiet = store.start_run(fingerprint="fp", description="quiet", host="box")
    store.add_result(quiet.id, _ok_result("resnet50", "generic", "host:box-a",
                                          {"NET latency": 9.0},
                                          finished_at=ago(ABANDONED_AFTER_S + 600)))
    busy = store.start_run(fingerprint="fp", description="busy", host="box")
    store.add_result(busy.id, _ok_result("resnet50", "generic", "host:box-a",
                                         {"NET latency": 9.0}, finished_at=ago(60)))
    listed = {r["id"]: r for r in c.get("/api/v1/runs").json()}
    assert (listed[quiet.id]["status"], listed[quiet.id]["stored_status"]) == (
        "abandoned", "running")
    assert (listed[busy.id]["status"], listed[busy.id]["stored_status"]) == (
        "running", "running")
    assert listed[quiet.id]["last_result_at"].startswith(ago(ABANDONED_AFTER_S + 600)[:13])
    assert c.get(f"/api/v1/runs/{quiet.id}").json()["run"]["status"] == "abandoned"
    assert re.search(r'id="run-status"[^>]*>abandoned<', c.get(f"/runs/{quiet.id}").text)
    assert re.search(r'id="run-status"[^>]*>running<', c.get(f"/runs/{busy.id}").text)
    assert "<td>abandoned</td>" in c.get("/").text
    # derived when shown: the store still says running, and finishing the run ends it
    assert store.get_run(quiet.id).status.value == "running"
    store.finish_run(quiet.id)
    assert c.get(f"/api/v1/runs/{quiet.id}").json()["run"]["status"] == "finished"

"""The lab's JSON API, end to end on a real PostgreSQL: devices, jobs, pools, runs, tokens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchlab.lab.server.app import create_app
from benchlab.lab.tokens import create_token
from benchlab.schema.result import JobIdentity, Result, Sample, Status, Summary
from benchlab.store import ResultStore

pytestmark = pytest.mark.postgres

API = "/api/v1"


@pytest.fixture
def client(lab_url: str) -> Iterator[TestClient]:
    """The app on a fresh lab, lifespan running (so ``app.state.lab`` is open)."""
    with TestClient(create_app(lab_url)) as opened:
        yield opened


def store_of(client: TestClient) -> ResultStore:
    """The store of the lab the app serves."""
    return client.app.state.lab.store  # type: ignore[attr-defined]


def token(client: TestClient, name: str, scopes: str, host: str = "") -> dict[str, str]:
    """Authorization headers for a new token made straight in the store."""
    value, _ = create_token(store_of(client), name, scopes, host=host)
    return {"Authorization": f"Bearer {value}"}


def device_body(host: str = "hostA", **properties: Any) -> dict[str, Any]:
    """A registration as a worker on ``host`` sends it."""
    return {"host": host, "kind": "host", "target": "host",
            "properties": {"abi": "x86_64", "cores": 8, **properties}, "pools": []}


def a_result(p50: float = 1200.0) -> Result:
    """A small ok result with latency samples and a summary."""
    summary = Summary(unit="us", count=3, mean=p50, stdev=1.0, min=p50 - 1, p10=p50 - 1,
                      p50=p50, p90=p50 + 1, p99=p50 + 1, max=p50 + 1, mad=0.5, cv=0.001,
                      ci_low=p50 - 1, ci_high=p50 + 1, percentiles={"p95": p50 + 1},
                      processes=3, process_p50s=(p50 - 2, p50, p50 + 2))
    return Result(
        identity=JobIdentity(spec="s.yaml", model_name="resnet18", model_hash="sha256:00",
                             test_identifier="cpu", framework="onnxruntime",
                             framework_config={"threads": 4}, target="host", device="hostA"),
        status=Status.OK,
        samples=tuple(Sample("latency", p50 + i, "us", index=i) for i in range(3)),
        summaries={"NET latency": summary},
        started_at="2026-01-02T03:04:05+00:00", finished_at="2026-01-02T03:04:09+00:00",
    )


def test_health_is_anonymous(client: TestClient) -> None:
    assert client.get(f"{API}/health").json() == {"ok": True}


def test_worker_registers_and_heartbeats_its_device(client: TestClient) -> None:
    worker = token(client, "w-a", "worker", host="hostA")
    put = client.put(f"{API}/devices/host:a1", json=device_body(), headers=worker)
    assert put.status_code == 200, put.text
    assert put.json()["id"] == "host:a1" and put.json()["state"] == "idle"

    listed = client.get(f"{API}/devices").json()
    assert listed["counts"]["all"] == 1 and listed["counts"]["alive"] == 1
    assert [d["id"] for d in listed["devices"]] == ["host:a1"]
    assert client.get(f"{API}/devices", params={"tab": "offline"}).json()["devices"] == []

    before = put.json()["last_heartbeat"]
    beat = client.post(f"{API}/devices/host:a1/heartbeat",
                       json={"device_state": {"battery": {"level": 80}}}, headers=worker)
    assert beat.status_code == 200, beat.text
    assert beat.json()["last_heartbeat"] >= before
    assert beat.json()["battery"] == {"level": 80}
    assert client.post(f"{API}/devices/host:a1/heartbeat", headers=worker).status_code == 200

    health = client.post(f"{API}/devices/host:a1/health",
                         json={"health": "bad", "reason": "adb offline"}, headers=worker)
    assert health.json()["health"] == "bad" and health.json()["health_reason"] == "adb offline"

    detail = client.get(f"{API}/devices/host:a1").json()
    kinds = [(e["kind"], e["value"]) for e in detail["events"]]
    assert kinds == [("health", "bad"), ("registered", "idle")]  # newest first
    assert detail["events"][0]["who"] == "w-a"


def test_worker_writes_only_for_its_own_host(client: TestClient) -> None:
    worker_a = token(client, "w-a", "worker", host="hostA")
    worker_b = token(client, "w-b", "worker", host="hostB")
    assert client.put(f"{API}/devices/host:b1", json=device_body("hostB"),
                      headers=worker_b).status_code == 200

    wrong_body = client.put(f"{API}/devices/host:a9", json=device_body("hostB"),
                            headers=worker_a)
    assert wrong_body.status_code == 403 and "hostA" in wrong_body.json()["detail"]
    # Re-registering B's device under A's name would steal it.
    takeover = client.put(f"{API}/devices/host:b1", json=device_body("hostA"), headers=worker_a)
    assert takeover.status_code == 403
    for path in ("heartbeat", "health"):
        answer = client.post(f"{API}/devices/host:b1/{path}", headers=worker_a,
                             json={"health": "good"} if path == "health" else None)
        assert answer.status_code == 403, path
    assert client.get(f"{API}/devices/host:b1").json()["device"]["host"] == "hostB"


def test_unknown_device_is_404(client: TestClient) -> None:
    admin = token(client, "root", "admin")
    assert client.get(f"{API}/devices/host:none").status_code == 404
    for path, body in (("heartbeat", None), ("health", {"health": "good"}),
                       ("quarantine", {"reason": "x"}), ("release", None)):
        answer = client.post(f"{API}/devices/host:none/{path}", json=body, headers=admin)
        assert answer.status_code == 404, path
        assert "host:none" in answer.json()["detail"]


def test_quarantine_shows_who_and_why(client: TestClient) -> None:
    worker = token(client, "w-a", "worker", host="hostA")
    alice = token(client, "alice", "admin")
    client.put(f"{API}/devices/host:a1", json=device_body(), headers=worker)

    blank = client.post(f"{API}/devices/host:a1/quarantine", json={"reason": "  "},
                        headers=alice)
    assert blank.status_code == 400 and "reason" in blank.json()["detail"]
    done = client.post(f"{API}/devices/host:a1/quarantine",
                       json={"reason": "thermal throttling"}, headers=alice)
    assert done.status_code == 200, done.text

    device = client.get(f"{API}/devices/host:a1").json()
    assert device["device"]["quarantined"] is True
    assert device["device"]["quarantined_by"] == "alice"
    assert device["device"]["quarantine_reason"] == "thermal throttling"
    assert device["events"][0] | {"at": 0} == {
        "at": 0, "kind": "quarantine", "value": "on", "reason": "thermal throttling",
        "who": "alice", "job_id": None}
    tab = client.get(f"{API}/devices", params={"tab": "quarantined"}).json()
    assert tab["counts"]["quarantined"] == 1 and tab["devices"][0]["id"] == "host:a1"

    released = client.post(f"{API}/devices/host:a1/release", headers=alice).json()
    assert released["quarantined"] is False and released["quarantined_by"] == ""


def test_submit_to_an_empty_pool_waits_and_can_be_cancelled(client: TestClient) -> None:
    submitter = token(client, "ci", "submit")
    admin = token(client, "root", "admin")
    posted = client.post(f"{API}/jobs", headers=submitter, json={
        "specs": {"mobilenet.yaml": "model: mobilenet\n"}, "pool": "cores>=64"})
    assert posted.status_code == 201, posted.text
    (job,) = posted.json()
    assert job["status"] == "waiting" and job["route_kind"] == "pool"
    assert job["reason"] == "no registered device matches pool cores>=64"
    assert job["submitted_by"] == "ci" and job["label"] == "mobilenet.yaml"

    assert client.get(f"{API}/jobs/{job['id']}").json()["id"] == job["id"]
    by_submission = client.get(f"{API}/jobs", params={"submission": job["submission"]}).json()
    assert [j["id"] for j in by_submission] == [job["id"]]
    assert client.get(f"{API}/jobs", params={"status": "running"}).json() == []
    (row,) = client.get(f"{API}/queue").json()
    assert row["queue"] == "pool:cores>=64" and row["counts"]["waiting"] == 1
    assert row["problem"] == "no registered device matches pool cores>=64"
    assert "cores>=64" in [p["name"] for p in client.get(f"{API}/pools").json()]

    cancelled = client.post(f"{API}/jobs/{job['id']}/cancel", headers=admin)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["reason"] == "cancelled by root"
    again = client.post(f"{API}/jobs/{job['id']}/cancel", headers=admin)
    assert again.status_code == 409 and "cancelled" in again.json()["detail"]
    assert client.post(f"{API}/jobs/999999/cancel", headers=admin).status_code == 404
    assert client.get(f"{API}/jobs/999999").status_code == 404


def test_submit_fans_out_over_a_pool_and_reports_usage_errors(client: TestClient) -> None:
    worker = token(client, "w-a", "worker", host="hostA")
    submitter = token(client, "ci", "submit")
    for name in ("host:a1", "host:a2"):
        client.put(f"{API}/devices/{name}", json=device_body(), headers=worker)
    jobs = client.post(f"{API}/jobs", headers=submitter,
                       json={"models": ["resnet18"], "pool": "abi=x86_64"}).json()
    assert sorted(j["route"] for j in jobs) == ["host:a1", "host:a2"]
    assert {j["reason"] for j in jobs} == {"queued"}
    one = client.post(f"{API}/jobs", headers=submitter,
                      json={"models": ["resnet18"], "device": "host:a1"}).json()
    assert [j["route"] for j in one] == ["host:a1"]
    assert len(client.get(f"{API}/jobs", params={"device": "host:a1"}).json()) == 2

    both = client.post(f"{API}/jobs", headers=submitter,
                       json={"device": "host:a1", "pool": "abi=x86_64"})
    assert both.status_code == 400 and "exactly one" in both.json()["detail"]
    unknown = client.post(f"{API}/jobs", headers=submitter, json={"device": "host:zz"})
    assert unknown.status_code == 400 and "host:zz" in unknown.json()["detail"]
    bad_rule = client.post(f"{API}/jobs", headers=submitter, json={"pool": "cores>=many"})
    assert bad_rule.status_code == 400 and "number" in bad_rule.json()["detail"]


def test_pools_are_added_by_admins(client: TestClient) -> None:
    admin = token(client, "root", "admin")
    added = client.post(f"{API}/pools", json={"rule": "cores>=4, abi=arm64-v8a"}, headers=admin)
    assert added.json() == {"name": "abi=arm64-v8a,cores>=4",
                            "conditions": ["abi=arm64-v8a", "cores>=4"],
                            "queue": "pool:abi=arm64-v8a,cores>=4"}
    assert client.post(f"{API}/pools", json={"rule": "nonsense"},
                       headers=admin).status_code == 400
    assert [p["name"] for p in client.get(f"{API}/pools").json()] == ["abi=arm64-v8a,cores>=4"]


def test_runs_show_results_without_samples(client: TestClient) -> None:
    store = store_of(client)
    run = store.start_run(fingerprint="fp", description="nightly", host="hostA")
    store.add_result(run.id, a_result())

    (listed,) = client.get(f"{API}/runs").json()
    assert listed["id"] == run.id and listed["ok_count"] == 1 and listed["result_count"] == 1
    for ref in (str(run.id), run.uuid[:8], "latest"):
        detail = client.get(f"{API}/runs/{ref}")
        assert detail.status_code == 200, ref
        (result,) = detail.json()["results"]
        assert "samples" not in result
        latency = result["summaries"]["NET latency"]
        assert latency["p50"] == 1200.0
        # The per-process medians the interval rests on come through whole.
        assert latency["processes"] == 3 and latency["process_p50s"] == [1198.0, 1200.0, 1202.0]
        assert result["identity"]["model_name"] == "resnet18"
    assert client.get(f"{API}/runs/999").status_code == 404
    assert client.get(f"{API}/runs/not-a-run").status_code == 422


def test_tokens_are_shown_once_and_revoked_ones_refused(client: TestClient) -> None:
    admin = token(client, "root", "admin")
    texts: list[str] = []
    made = client.post(f"{API}/tokens", headers=admin,
                       json={"name": "ci", "scopes": ["submit"], "host": ""})
    assert made.status_code == 201, made.text
    secret = made.json()["token"]
    assert secret.startswith("bl_") and made.json()["scopes"] == ["submit"]
    submitter = {"Authorization": f"Bearer {secret}"}

    used = client.post(f"{API}/jobs", headers=submitter, json={"pool": "cores>=1"})
    assert used.status_code == 201
    texts.append(used.text)
    listing = client.get(f"{API}/tokens", headers=admin)
    assert {t["name"] for t in listing.json()} == {"root", "ci"}
    assert all(set(t) == {"id", "name", "scopes", "host", "created_at", "revoked"}
               for t in listing.json())
    texts.append(listing.text)
    for path in ("/devices", "/jobs", "/queue", "/pools", "/runs"):
        texts.append(client.get(f"{API}{path}", headers=submitter).text)
    assert all(secret not in text for text in texts)

    revoked = client.delete(f"{API}/tokens/{made.json()['id']}", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["revoked"] is True
    assert secret not in revoked.text
    refused = client.post(f"{API}/jobs", headers=submitter, json={"pool": "cores>=1"})
    assert refused.status_code == 401
    assert client.delete(f"{API}/tokens/{made.json()['id']}", headers=admin).status_code == 404

    no_host = client.post(f"{API}/tokens", headers=admin,
                          json={"name": "w", "scopes": ["worker"]})
    assert no_host.status_code == 400 and "host" in no_host.json()["detail"]


def test_closed_reading_needs_a_token(lab_url: str) -> None:
    with TestClient(create_app(lab_url, anonymous_read=False)) as closed:
        reader = token(closed, "reader", "read")
        worker = token(closed, "w", "worker", host="hostA")
        for path in ("/devices", "/jobs", "/queue", "/pools", "/runs"):
            assert closed.get(f"{API}{path}").status_code == 401, path
            assert closed.get(f"{API}{path}", headers=reader).status_code == 200, path
            assert closed.get(f"{API}{path}", headers=worker).status_code == 200, path
            bogus = closed.get(f"{API}{path}", headers={"Authorization": "Bearer bl_nope"})
            assert bogus.status_code == 401, path
        assert closed.get(f"{API}/health").status_code == 200

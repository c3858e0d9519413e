"""Every write endpoint × every kind of caller: 401 without a valid token, 403 without the scope.

The write routes are read from the app itself (its OpenAPI paths), so a new write route
without an entry in :data:`MATRIX` fails here until someone says which scope it needs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchlab.lab.localpg import PostgresServer
from benchlab.lab.queue import init_lab
from benchlab.lab.server.app import create_app
from benchlab.lab.tokens import create_token
from benchlab.schema.result import JobIdentity, Result, Sample, Status

pytestmark = pytest.mark.postgres

Request = tuple[str, Any]
"""A concrete path and its JSON body (None: no body)."""


@dataclass(frozen=True)
class Lab:
    """The running app and a token per caller kind."""

    client: TestClient
    headers: dict[str, dict[str, str]]

    def token(self, name: str, scopes: str, host: str = "") -> tuple[int, str]:
        """A new token (id, value), made straight in the store."""
        value, info = create_token(self.client.app.state.lab.store,  # type: ignore[attr-defined]
                                   name, scopes, host=host)
        return info.id, value


def _device(host: str) -> dict[str, Any]:
    return {"host": host, "kind": "host", "target": "host", "properties": {"cores": 8}}


def _waiting_job(lab: Lab) -> int:
    posted = lab.client.post("/api/v1/jobs", json={"pool": "cores>=512"},
                             headers=lab.headers["admin"])
    return posted.json()[0]["id"]


def _victim_token(lab: Lab) -> int:
    return lab.token("victim", "read")[0]


def _posted_result(lab: Lab) -> Request:
    # A result measured on a device no lab host registered: only report (or admin) may post it.
    identity = JobIdentity(spec="s.yaml", model_name="m", model_hash="sha256:00",
                           test_identifier="t", framework="pytorch", framework_config={}, target="host",
                           device="laptop")
    result = Result(identity, Status.OK, samples=(Sample("latency", 1.0, "ms", index=0),))
    run = {"uuid": str(uuid.uuid4()), "fingerprint": "fp"}
    return "/api/v1/results", {"run": run, "result": result.to_dict()}


def _reported_run(lab: Lab) -> Request:
    # A run the lab holds a result of, measured where no lab host registered a device: only a
    # report (or admin) token may finish it.
    path, body = _posted_result(lab)
    posted = lab.client.post(path, json=body, headers=lab.headers["admin"])
    assert posted.status_code == 200, posted.text
    return f"/api/v1/runs/{posted.json()['run_uuid']}/finish", {"status": "finished"}


# (method, route path) -> (the scope it needs, how to build a request for it).
MATRIX: dict[tuple[str, str], tuple[str, Callable[[Lab], Request]]] = {
    ("PUT", "/api/v1/devices/{device_id}"):
        ("worker", lambda lab: ("/api/v1/devices/host:a1", _device("hostA"))),
    ("POST", "/api/v1/devices/{device_id}/heartbeat"):
        ("worker", lambda lab: ("/api/v1/devices/host:a1/heartbeat", None)),
    ("POST", "/api/v1/devices/{device_id}/health"):
        ("worker", lambda lab: ("/api/v1/devices/host:a1/health", {"health": "good"})),
    ("POST", "/api/v1/devices/{device_id}/quarantine"):
        ("admin", lambda lab: ("/api/v1/devices/host:a1/quarantine", {"reason": "test"})),
    ("POST", "/api/v1/devices/{device_id}/release"):
        ("admin", lambda lab: ("/api/v1/devices/host:a1/release", None)),
    ("POST", "/api/v1/jobs"):
        ("submit", lambda lab: ("/api/v1/jobs", {"pool": "cores>=512"})),
    ("POST", "/api/v1/jobs/{job_id}/cancel"):
        ("admin", lambda lab: (f"/api/v1/jobs/{_waiting_job(lab)}/cancel", None)),
    ("POST", "/api/v1/pools"):
        ("admin", lambda lab: ("/api/v1/pools", {"rule": "cores>=2"})),
    ("POST", "/api/v1/tokens"):
        ("admin", lambda lab: ("/api/v1/tokens", {"name": "new", "scopes": ["read"]})),
    ("POST", "/api/v1/results"): ("report", _posted_result),
    ("POST", "/api/v1/runs/{run_uuid}/finish"): ("report", _reported_run),
    ("DELETE", "/api/v1/tokens/{token_id}"):
        ("admin", lambda lab: (f"/api/v1/tokens/{_victim_token(lab)}", None)),
}

# The admin-only GET: listing tokens is a secret of its own, so it is in the matrix too.
ADMIN_READS = {("GET", "/api/v1/tokens"): ("admin", lambda lab: ("/api/v1/tokens", None))}

CALLERS = ("none", "bogus", "worker", "submit", "report", "admin", "read")


def _write_routes() -> list[tuple[str, str]]:
    # FastAPI (0.16x) mounts included routers lazily, so ``app.routes`` holds the router, not
    # its routes; the OpenAPI document is the public, flattened list of every route.
    app = create_app("postgresql://nobody@127.0.0.1:1/none")  # routes only: never started
    return sorted((method.upper(), path) for path, operations in app.openapi()["paths"].items()
                  for method in operations if method.upper() not in ("GET", "HEAD"))


WRITE_ROUTES = _write_routes()


@pytest.fixture(scope="module")
def lab(pg_server: PostgresServer) -> Iterator[Lab]:
    """One lab for the whole matrix, with host A's device and a token per caller kind."""
    url = pg_server.create_database().replace("+psycopg2", "")
    init_lab(url)
    with TestClient(create_app(url)) as client:
        lab = Lab(client, {})
        for scope in CALLERS[2:]:
            _, value = lab.token(scope, scope, host="hostA" if scope == "worker" else "")
            lab.headers[scope] = {"Authorization": f"Bearer {value}"}
        lab.headers["none"] = {}
        lab.headers["bogus"] = {"Authorization": "Bearer bl_not-a-real-token"}
        _, b_worker = lab.token("worker-b", "worker", host="hostB")
        lab.headers["worker-b"] = {"Authorization": f"Bearer {b_worker}"}
        for host, device in (("hostA", "host:a1"), ("hostB", "host:b1")):
            put = client.put(f"/api/v1/devices/{device}", json=_device(host),
                             headers=lab.headers["admin"])
            assert put.status_code == 200, put.text
        yield lab


def test_every_write_route_has_a_matrix_entry() -> None:
    assert set(WRITE_ROUTES) == set(MATRIX), "add the new write route to MATRIX"


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("route", [*WRITE_ROUTES, *ADMIN_READS], ids=" ".join)
def test_scope_matrix(lab: Lab, route: tuple[str, str], caller: str) -> None:
    entry = MATRIX.get(route) or ADMIN_READS.get(route)
    assert entry is not None, f"{route} has no entry in MATRIX"
    scope, build = entry
    path, body = build(lab)
    answer = lab.client.request(route[0], path, json=body, headers=lab.headers[caller])
    if caller in ("none", "bogus"):
        expected = {401}
    elif caller in (scope, "admin"):
        assert 200 <= answer.status_code < 300, answer.text
        return
    else:
        expected = {403}
    assert answer.status_code in expected, answer.text
    assert isinstance(answer.json()["detail"], str)


@pytest.mark.parametrize("path,body", [
    ("/api/v1/devices/host:b1", _device("hostA")),
    ("/api/v1/devices/host:b1", _device("hostB")),
    ("/api/v1/devices/host:b1/heartbeat", None),
    ("/api/v1/devices/host:b1/health", {"health": "bad", "reason": "spoofed"}),
])
def test_worker_of_one_host_cannot_write_for_another(lab: Lab, path: str, body: Any) -> None:
    method = "PUT" if body is not None and "host" in body else "POST"
    answer = lab.client.request(method, path, json=body, headers=lab.headers["worker"])
    assert answer.status_code == 403, answer.text
    # host B's own worker may.
    assert lab.client.request(method, path, json=_device("hostB") if method == "PUT" else body,
                              headers=lab.headers["worker-b"]).status_code == 200

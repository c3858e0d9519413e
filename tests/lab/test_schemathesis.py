"""Property-based checks of the JSON API against its own OpenAPI document (schemathesis 4).

Every operation gets generated requests (valid and invalid) sent with an admin token, on a lab
seeded with a device, a job and a run so reads return real rows. Each answer must not be a
5xx, must carry a declared status and content type, and must match its declared schema.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from benchlab.lab import devices
from benchlab.lab.jobs import LabRequest
from benchlab.harness.sweep import Sweep
from benchlab.lab.localpg import PostgresServer
from benchlab.lab.queue import Lab, init_lab, open_lab, submit
from benchlab.lab.server.app import create_app
from benchlab.lab.tokens import create_token, find_token
from benchlab.schema.result import JobIdentity, Result, Status, Summary

pytestmark = pytest.mark.postgres

# A bounded run by default (about 30 s); BENCHLAB_FUZZ_EXAMPLES=500 digs deeper by hand.
EXAMPLES = int(os.environ.get("BENCHLAB_FUZZ_EXAMPLES", "25"))
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance,
          content_type_conformance]


@dataclass
class Seeded:
    """The lab under test, opened beside the app, and an admin token kept valid."""

    lab: Lab
    admin: str = ""

    def headers(self) -> dict[str, str]:
        """Admin headers; a fresh token when a generated DELETE revoked the last one."""
        if not self.admin or find_token(self.lab.store, self.admin) is None:
            self.admin, _ = create_token(self.lab.store, "fuzz-admin", "admin")
        return {"Authorization": f"Bearer {self.admin}"}


def _result() -> Result:
    summary = Summary(unit="us", count=3, mean=10.0, stdev=1.0, min=9.0, p10=9.0, p50=10.0,
                      p90=11.0, p99=11.0, max=11.0, mad=0.5, cv=0.1, ci_low=9.5, ci_high=10.5)
    return Result(
        identity=JobIdentity(spec="s.yaml", model_name="m", model_hash="sha256:00",
                             test_identifier="cpu", framework="onnxruntime",
                             framework_config={}, target="host", device="hostA"),
        status=Status.OK, summaries={"NET latency": summary},
        started_at="2026-01-02T03:04:05+00:00", finished_at="2026-01-02T03:04:06+00:00")


@pytest.fixture(scope="module")
def seeded(pg_server: PostgresServer) -> Iterator[Seeded]:
    """A lab holding one device, one waiting job, one run with a result, and an admin token."""
    url = pg_server.create_database().replace("+psycopg2", "")
    init_lab(url)
    with open_lab(url) as lab:
        devices.register_device(lab.store, device_id="host:a1", host="hostA", kind="host",
                                target="host", properties={"abi": "x86_64", "cores": 8},
                                pools=[])
        devices.set_health(lab.store, "host:a1", "good", "seeded")
        submit(lab, LabRequest.of(Sweep.of(models=["resnet18"])), pool="cores>=64")
        run = lab.store.start_run(fingerprint="fp", description="seeded", host="hostA")
        lab.store.add_result(run.id, _result())
        yield Seeded(lab)


@pytest.fixture(scope="module")
def api_schema(seeded: Seeded) -> Iterator[schemathesis.BaseSchema]:
    """The app's OpenAPI document, loaded in-process (schemathesis runs the app's lifespan)."""
    app = create_app(seeded.lab.url)
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    # schemathesis keeps an ASGI app's lifespan running until the process exits; ending it
    # here closes the app's lab connections before this module's database goes away.
    from schemathesis.python import asgi

    asgi.shutdown_lifespans()


def _cases() -> list[tuple[tuple[str, str], GenerationMode]]:
    # Known without a database: the routes do not depend on the lab's contents. An operation
    # without parameters or body has no invalid request to make, so no negative mode for it.
    paths = create_app("postgresql://nobody@127.0.0.1:1/none").openapi()["paths"]
    cases = []
    for path, operations in paths.items():
        for method, spec in operations.items():
            cases.append(((method.upper(), path), GenerationMode.POSITIVE))
            if spec.get("parameters") or spec.get("requestBody"):
                cases.append(((method.upper(), path), GenerationMode.NEGATIVE))
    return cases


def _case_id(value: tuple[str, str] | GenerationMode) -> str:
    return " ".join(value) if isinstance(value, tuple) else value.value


# schemathesis.pytest.from_fixture fails under pytest 9 (it reads the removed
# ``Node._nodeid``), so each operation is its own pytest case driving a Hypothesis strategy.
@pytest.mark.parametrize(("operation", "mode"), _cases(), ids=_case_id)
def test_api_matches_its_schema(api_schema: schemathesis.BaseSchema, seeded: Seeded,
                                operation: tuple[str, str], mode: GenerationMode) -> None:
    method, path = operation
    strategy = api_schema[path][method].as_strategy(generation_mode=mode)

    @given(case=strategy)
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=seeded.headers(), checks=CHECKS)

    check()

"""The JSON API's device, job, event and queue models are built from the lab's dataclasses:
each ``to_json()`` gives exactly the model's fields, with values the model accepts."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel, ValidationError

from benchlab.lab.devices import Device, DeviceEvent
from benchlab.lab.jobs import LabJob, LabRequest, QueueRow
from benchlab.harness.sweep import Sweep
from benchlab.lab.reporter import ReportedRun
from benchlab.lab.run_state import RunInfo
from benchlab.lab.server.api_models import DeviceEventOut, DeviceOut, JobOut, QueueRowOut, RunOut
from benchlab.store import RunRecord, RunStatus

DEVICE = Device(
    id="host:vm", host="vm", kind="host", target="host", properties={"cores": 2},
    pools=("cpu",), state="idle", health="good", health_reason="", quarantined=False,
    quarantined_by="", quarantine_reason="", current_job=None, registered_at=1.0,
    last_heartbeat=2.0, device_state={"battery": {"level": 80}}, now=3.0,
)
JOB = LabJob(
    id=7, submission="s-1", request=LabRequest.of(Sweep.of(models=["mobilenet_v2"])), route_kind="pool",
    route="cpu", device_id=None, queue_job_id=12, status="waiting", reason="", run_uuid=None,
    attempts=0, submitted_by="ci", created_at=1.0, started_at=None, finished_at=None,
)
EVENT = DeviceEvent(at=1.0, kind="health", value="bad", reason="adb offline", who="worker",
                    job_id=None)
QUEUE = QueueRow(queue="pool:cpu", counts={"waiting": 1}, oldest_waiting_at=1.0, problem="")
RECORD = RunRecord(id=3, uuid="3f2b8c1e-5d6a-4b7c-9e0f-a1b2c3d4e5f6",
                   created_at="2026-11-27T08:00:00+00:00", finished_at=None,
                   status=RunStatus.RUNNING, fingerprint="fp", description="nightly", host="vm",
                   ok_count=4, failed_count=1)
SHOWN = RunInfo(RECORD, "abandoned", "2026-11-27T08:05:00+00:00")

CASES = [(DeviceOut, DEVICE.to_json()), (JobOut, JOB.to_json()),
         (DeviceEventOut, dataclasses.asdict(EVENT)), (QueueRowOut, QUEUE.to_json()),
         (RunOut, SHOWN.to_json())]


@pytest.mark.parametrize(("model", "shown"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_to_json_gives_exactly_the_models_fields(model: type[BaseModel], shown: dict) -> None:
    assert set(shown) == set(model.model_fields)
    assert model.model_validate(shown).model_dump(mode="json")


def test_models_keep_the_dataclasses_types() -> None:
    """A state, health or status outside its Literal is refused, as the hand-written models did."""
    with pytest.raises(ValidationError):
        DeviceOut.model_validate({**DEVICE.to_json(), "state": "asleep"})
    with pytest.raises(ValidationError):
        JobOut.model_validate({**JOB.to_json(), "status": "paused"})
    assert DeviceOut.model_fields["pools"].annotation == tuple[str, ...]
    assert "queue_job_id" not in JobOut.model_fields and "now" not in DeviceOut.model_fields


def test_every_response_model_holds_every_field_of_its_dataclass() -> None:
    """Each API model is built from its dataclass: a field added there reaches the API, unless
    it is left out here on purpose, with the reason."""
    from benchlab.lab.run_view import RunDetail
    from benchlab.lab.server.api_models import (
        ComparisonOut,
        IdentityOut,
        ResultOut,
        RunDetailOut,
        SummaryOut,
        TokenOut,
    )
    from benchlab.lab.tokens import TokenInfo
    from benchlab.lab.views import Comparison
    from benchlab.schema.result import JobIdentity, Result, Summary

    left_out = {
        (ResultOut, Result): {"samples"},  # can be very many; the run page reads them
        (JobOut, LabJob): {"request", "queue_job_id"},  # the request is large; the ticket internal
        (DeviceOut, Device): {"device_state", "now"},  # shown as reported_state and ages
        (RunOut, RunInfo): {"record"},  # flattened: its fields are RunOut's own
    }
    pairs = [(SummaryOut, Summary), (IdentityOut, JobIdentity), (ResultOut, Result),
             (TokenOut, TokenInfo), (JobOut, LabJob), (DeviceOut, Device),
             (DeviceEventOut, DeviceEvent), (QueueRowOut, QueueRow), (RunOut, RunRecord),
             (RunOut, RunInfo), (RunDetailOut, RunDetail), (ComparisonOut, Comparison)]
    for model, shape in pairs:
        missing = ({f.name for f in dataclasses.fields(shape)} - set(model.model_fields)
                   - left_out.get((model, shape), set()) - {"oldest_waiting_at"})
        assert not missing, f"{model.__name__} lacks {sorted(missing)} of {shape.__name__}"
    assert RunDetailOut.model_fields["run"].annotation is RunOut
    assert "process_p50s" in SummaryOut.model_fields and "processes" in SummaryOut.model_fields


def test_a_shown_run_is_its_record_with_the_shown_status() -> None:
    """The API's run is flat: the record's fields, ``status`` the shown one and the stored one
    beside it; the JSON a client read before the run record was composed."""
    shown = RunOut.model_validate(SHOWN.to_json()).model_dump(mode="json")
    assert shown["status"] == "abandoned" and shown["stored_status"] == "running"
    assert (shown["id"], shown["ok_count"], shown["failed_count"], shown["result_count"]) == (
        3, 4, 1, 5)
    assert shown["last_result_at"] == "2026-11-27T08:05:00+00:00"
    assert SHOWN.label == "#3 nightly (2026-11-27 08:00)"
    with pytest.raises(ValidationError):
        RunOut.model_validate({**SHOWN.to_json(), "status": "lost"})


def test_a_reported_run_is_the_part_of_its_record_another_store_keeps() -> None:
    """Every field a reporter posts is the stored record's field of that name and type, so a
    field renamed in the store cannot leave the post behind."""
    record_fields = {field.name: field.type for field in dataclasses.fields(RunRecord)}
    for field in dataclasses.fields(ReportedRun):
        assert field.name in record_fields, f"ReportedRun.{field.name} is not a RunRecord field"
        assert record_fields[field.name] in (field.type, field.type.replace(" | None", ""))
    posted = ReportedRun.of(RECORD).to_json()
    assert posted == {"uuid": RECORD.uuid, "fingerprint": "fp", "description": "nightly",
                      "host": "vm", "created_at": "2026-11-27T08:00:00+00:00"}

"""The JSON API's device, job, event and queue models are built from the lab's dataclasses:
each ``to_json()`` gives exactly the model's fields, with values the model accepts."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel, ValidationError

from benchlab.lab.devices import Device, DeviceEvent
from benchlab.lab.jobs import LabJob, LabRequest, QueueRow
from benchlab.sweep import Sweep
from benchlab.lab.server.api_models import DeviceEventOut, DeviceOut, JobOut, QueueRowOut

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

CASES = [(DeviceOut, DEVICE.to_json()), (JobOut, JOB.to_json()),
         (DeviceEventOut, dataclasses.asdict(EVENT)), (QueueRowOut, QUEUE.to_json())]


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
    from benchlab.lab.run_state import RunInfo
    from benchlab.lab.server.api_models import (
        IdentityOut,
        ResultOut,
        RunDetailOut,
        SummaryOut,
        TokenOut,
    )
    from benchlab.lab.tokens import TokenInfo
    from benchlab.schema import JobIdentity, Result, Summary

    left_out = {
        (ResultOut, Result): {"samples"},  # can be very many; the run page reads them
        (JobOut, LabJob): {"request", "queue_job_id"},  # the request is large; the ticket internal
        (DeviceOut, Device): {"device_state", "now"},  # shown as reported_state and ages
    }
    pairs = [(SummaryOut, Summary), (IdentityOut, JobIdentity), (ResultOut, Result),
             (TokenOut, TokenInfo), (JobOut, LabJob), (DeviceOut, Device),
             (DeviceEventOut, DeviceEvent), (QueueRowOut, QueueRow)]
    for model, shape in pairs:
        missing = ({f.name for f in dataclasses.fields(shape)} - set(model.model_fields)
                   - left_out.get((model, shape), set()) - {"oldest_waiting_at"})
        assert not missing, f"{model.__name__} lacks {sorted(missing)} of {shape.__name__}"
    # The run detail's twin takes the page's dataclass itself.
    assert RunDetailOut.model_fields["run"].annotation is RunInfo
    assert "process_p50s" in SummaryOut.model_fields and "processes" in SummaryOut.model_fields

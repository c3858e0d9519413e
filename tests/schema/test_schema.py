"""The results schema: typed reads of the shared details, and keys that stay plain JSON."""

from __future__ import annotations

import json

from benchlab.schema.result import (
    LATENCY_KEY,
    DetailKey,
    EnvKey,
    JobIdentity,
    Metric,
    Result,
    Status,
    StopReason,
)

IDENTITY = JobIdentity("s.json", "m", "h", "t", "onnxruntime", {}, "host")


def _round_trip(result: Result) -> Result:
    return Result.from_dict(json.loads(json.dumps(result.to_dict())))


def test_shared_details_read_back_typed_after_a_json_round_trip() -> None:
    details = {
        DetailKey.REPETITIONS: 3, DetailKey.JOB_STOP_REASON: StopReason.TARGET_CI_REACHED.value,
        DetailKey.DEVICE_FLAGS: [{"flag": "not_cooled", "detail": "x"}],
        DetailKey.RUNTIME_VERSION: "1.32.0", DetailKey.MODEL_INFO: {"params": 10},
        DetailKey.ENERGY: {"status": "ok"}, "num_runs": 50,
    }
    result = _round_trip(Result(IDENTITY, Status.OK, details=details))
    assert result.repetitions == 3
    assert result.stop_reason is StopReason.TARGET_CI_REACHED
    assert result.device_flags == ({"flag": "not_cooled", "detail": "x"},)
    assert result.runtime_version == "1.32.0"
    assert result.model_info == {"params": 10}
    assert result.energy == {"status": "ok"}
    assert result.details["num_runs"] == 50  # a framework's own fact survives untouched


def test_missing_or_unknown_details_read_as_empty() -> None:
    result = Result(IDENTITY, Status.FAILED, details={DetailKey.JOB_STOP_REASON: "gave_up"})
    assert result.stop_reason is None
    assert (result.repetitions, result.device_flags, result.runtime_version) == (0, (), None)
    assert (result.model_info, result.energy) == ({}, None)


def test_keys_are_written_as_plain_strings() -> None:
    data = {DetailKey.REPETITIONS: 1, EnvKey.STATE_BEFORE: {}, Metric.SQNR.key: 2}
    assert json.dumps(data) == '{"repetitions": 1, "state_before": {}, "NET sqnr": 2}'


def test_typed_keys_keep_the_strings_results_were_stored_with() -> None:
    # Results stored before these keys were typed hold the same strings, and no two members
    # share one (an Enum would make the second a silent alias of the first).
    assert [DetailKey.TOOL, DetailKey.LATENCY_SAMPLES, DetailKey.THREADS,
            DetailKey.EXECUTION_MODE, DetailKey.INTERLEAVED, DetailKey.AB_MODE,
            DetailKey.AB_SESSIONS, DetailKey.AB_PAIRS] == [
        "tool", "latency_samples", "threads", "mode", "interleaved", "ab_mode", "ab_sessions",
        "ab_pairs"]
    assert [EnvKey.TARGET, EnvKey.OS, EnvKey.CPU_COUNT, EnvKey.PACKAGES, EnvKey.ANDROID,
            EnvKey.STATE] == ["target", "os", "cpu_count", "packages", "android", "state"]
    for keys in (DetailKey, EnvKey):
        assert len(keys.__members__) == len(keys)


def test_metric_keys_are_the_net_keys_reports_read() -> None:
    assert LATENCY_KEY == Metric.LATENCY.key == "NET latency"
    assert Metric.FIRST_INFERENCE.key == "NET first_inference"

"""Behaviour of the results store, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import math
import threading

import pytest

from benchlab.errors import UsageError
from benchlab.schema.result import JobIdentity, Result, Sample, Status, Summary
from benchlab.store import ResultStore, RunStatus, open_store


def identity(model: str = "resnet18", framework: str = "pytorch", test: str = "cpu") -> JobIdentity:
    """A job identity; different arguments give different job keys."""
    return JobIdentity(
        spec="specs/resnet18.yaml",
        model_name=model,
        model_hash="sha256:0123",
        test_identifier=test,
        framework=framework,
        framework_config={"threads": 4, "jit": True},
        target="host",
        device="x86_64",
    )


def summary(p50: float) -> Summary:
    """A plausible summary centred on ``p50``."""
    return Summary(
        unit="us",
        count=3,
        mean=p50,
        stdev=0.5,
        min=p50 - 1,
        p10=p50 - 0.5,
        p50=p50,
        p90=p50 + 0.5,
        p99=p50 + 0.9,
        max=p50 + 1,
        mad=0.25,
        cv=0.001,
        ci_low=p50 - 0.2,
        ci_high=p50 + 0.2,
        warnings=("high variance",),
        percentiles={"p95": p50 + 0.7},
    )


def make_result(
    status: Status = Status.OK,
    *,
    model: str = "resnet18",
    framework: str = "pytorch",
    test: str = "cpu",
    values: tuple[float, ...] = (1234.5678, 1235.25, 1233.0),
    p50: float = 1234.5678,
    started_at: str = "2025-01-02T03:04:05+00:00",
) -> Result:
    """A result with latency samples over two repetitions and one operator sample."""
    samples = [
        Sample("latency", v, "us", repetition=i % 2, index=i // 2) for i, v in enumerate(values)
    ]
    samples.append(Sample("latency", 17.25, "us", type="conv1"))
    return Result(
        identity=identity(model, framework, test),
        status=status,
        samples=tuple(samples) if status is Status.OK else (),
        summaries={"NET latency": summary(p50)} if status is Status.OK else {},
        environment={"os": "Linux", "cpu": {"model": "Xeon", "cores": [0, 1]}},
        details={"runtime_version": "2.3.0", "processes": 2},
        error=None if status is Status.OK else "runtime crashed: SIGSEGV",
        stderr_tail=None if status is Status.OK else "Segmentation fault (core dumped)\n",
        started_at=started_at,
        finished_at=started_at.replace("03:04:05", "03:04:09"),
    )


def test_result_round_trips_exactly(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp", description="nightly", host="box1")
    original = make_result(
        values=(1234.5678, 0.1 + 0.2, 1e-300, 1.7976931348623157e308, -2.5, math.inf, 3.0)
    )
    store.add_result(run.id, original)

    (loaded,) = store.results(run.id)
    assert loaded == original
    assert loaded.to_dict() == original.to_dict()
    assert [s.value for s in loaded.samples][:2] == [1234.5678, 0.1 + 0.2]
    assert all(type(s.value) is float for s in loaded.samples)


def test_nan_sample_reads_back_as_nan(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    store.add_result(run.id, make_result(values=(1.5, math.nan)))
    values = store.results(run.id)[0].samples_of("NET latency")
    assert values[0] == 1.5
    assert math.isnan(values[1])


def test_odd_sample_text_round_trips(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    odd = (
        Sample('load "time", cold\nstart', 2.5, "", type="op\\with\ttab"),
        Sample("memory_peak", 123456789.0, "bytes", type="NET", repetition=3, index=7),
        Sample("ünïcode", -0.0, "µs", type="conv,1"),
        Sample("\\N", math.nan, "\\N"),
    )
    original = Result(identity=identity(), status=Status.OK, samples=odd)
    store.add_result(run.id, original)
    loaded = store.results(run.id)[0].samples
    assert loaded[:3] == odd[:3]
    assert (loaded[3].metric, loaded[3].unit) == ("\\N", "\\N")
    assert math.isnan(loaded[3].value)


def test_large_result_keeps_every_sample_in_order(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    values = tuple(1000.0 + i / 7 for i in range(100_000))
    store.add_result(run.id, make_result(values=values))
    (loaded,) = store.results(run.id)
    assert loaded.samples_of("NET latency") == list(values)
    assert loaded.samples_of("conv1 latency") == [17.25]


def test_failed_result_keeps_error_and_stderr(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    failed = make_result(Status.TIMEOUT)
    store.add_result(run.id, failed)
    (loaded,) = store.results(run.id)
    assert loaded.status is Status.TIMEOUT
    assert loaded.error == failed.error
    assert loaded.stderr_tail == failed.stderr_tail


def test_nul_bytes_in_stderr_do_not_break_storing(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    failed = make_result(Status.FAILED)
    garbled = Result(**{**_fields(failed), "stderr_tail": "abc\x00def"})
    store.add_result(run.id, garbled)
    tail = store.results(run.id)[0].stderr_tail
    assert tail is not None and tail.startswith("abc") and tail.endswith("def")


def _fields(result: Result) -> dict[str, object]:
    return {name: getattr(result, name) for name in Result.__dataclass_fields__}


def test_adding_the_same_job_twice_keeps_one_result(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    first = store.add_result(run.id, make_result())
    again = store.add_result(run.id, make_result(values=(9.0,)))
    assert again == first
    (loaded,) = store.results(run.id)
    assert loaded.samples_of("NET latency") == [1234.5678, 1235.25, 1233.0]


def test_a_succeeding_retry_replaces_the_failure(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    failed_id = store.add_result(run.id, make_result(Status.FAILED))
    ok_id = store.add_result(run.id, make_result())
    assert ok_id != failed_id
    (loaded,) = store.results(run.id)
    assert loaded.ok and len(loaded.samples) == 4

    # A later failure of the same job does not overwrite the success.
    assert store.add_result(run.id, make_result(Status.FAILED)) == ok_id
    assert store.results(run.id)[0].ok


def test_the_same_job_in_another_run_is_another_result(store: ResultStore) -> None:
    one = store.start_run(fingerprint="fp")
    two = store.start_run(fingerprint="fp")
    assert store.add_result(one.id, make_result()) != store.add_result(two.id, make_result())
    assert len(store.results()) == 2


def test_adding_to_a_missing_run_is_a_usage_error(store: ResultStore) -> None:
    with pytest.raises(UsageError):
        store.add_result(4242, make_result())


def test_finished_job_keys(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    ok = make_result(model="a")
    failed = make_result(Status.FAILED, model="b")
    store.add_result(run.id, ok)
    store.add_result(run.id, failed)
    other = store.start_run(fingerprint="fp")
    store.add_result(other.id, make_result(model="c"))

    keys = {ok.identity.key, failed.identity.key}
    assert store.finished_job_keys(run.id) == keys
    assert store.finished_job_keys(run) == keys
    assert store.finished_job_keys(run.id, statuses=[Status.OK]) == {ok.identity.key}
    assert store.finished_job_keys(store.start_run(fingerprint="fp").id) == set()


def test_find_resumable_run(store: ResultStore) -> None:
    assert store.find_resumable_run() is None
    done = store.start_run(fingerprint="plan-a")
    store.finish_run(done.id)
    cut = store.start_run(fingerprint="plan-a")
    store.mark_interrupted(cut.id)
    live = store.start_run(fingerprint="plan-b")

    found = store.find_resumable_run("plan-a")
    assert found is not None and found.id == cut.id
    assert found.status is RunStatus.INTERRUPTED and found.resumable
    latest = store.find_resumable_run()
    assert latest is not None and latest.id == live.id
    assert store.find_resumable_run("plan-c") is None

    # Naming a run returns it whatever its state, by id or by a prefix of its UUID.
    named = store.find_resumable_run(run_id=done.id)
    assert named is not None and named.status is RunStatus.FINISHED
    by_uuid = store.find_resumable_run(run_id=cut.uuid[:8])
    assert by_uuid is not None and by_uuid.id == cut.id
    with pytest.raises(UsageError):
        store.find_resumable_run(run_id=9999)
    with pytest.raises(UsageError):
        store.find_resumable_run(run_id="not-a-run")


def test_run_lifecycle(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp", description="try", host="box")
    assert run.status is RunStatus.RUNNING and run.finished_at is None
    assert (run.description, run.host, run.fingerprint) == ("try", "box", "fp")

    store.finish_run(run.id)
    finished = store.get_run(run.id)
    assert finished.status is RunStatus.FINISHED and finished.finished_at is not None

    # Interrupting a finished run must not reopen it.
    store.mark_interrupted(run.id)
    assert store.get_run(run.id).status is RunStatus.FINISHED

    resumed = store.resume_run(run.id)
    assert resumed.status is RunStatus.RUNNING and resumed.finished_at is None
    store.finish_run(run.id, "interrupted")
    assert store.get_run(run.id).status is RunStatus.INTERRUPTED
    with pytest.raises(UsageError):
        store.finish_run(run.id, "running")


def test_get_run_references(store: ResultStore) -> None:
    with pytest.raises(UsageError):
        store.get_run()
    first = store.start_run(fingerprint="fp")
    second = store.start_run(fingerprint="fp")
    assert store.get_run().id == second.id
    assert store.get_run("latest").id == second.id
    assert store.get_run(str(first.id)).id == first.id
    assert store.get_run(first.uuid[:6].upper()).id == first.id
    assert store.get_run(first).id == first.id
    with pytest.raises(UsageError):
        store.get_run("")
    with pytest.raises(UsageError):
        store.get_run(12345)
    with pytest.raises(UsageError, match="give a run id"):  # a digit to isdigit(), not to int()
        store.get_run("²")


def test_list_runs_counts_results(store: ResultStore) -> None:
    older = store.start_run(fingerprint="fp")
    store.add_result(older.id, make_result(model="a"))
    store.add_result(older.id, make_result(model="b"))
    store.add_result(older.id, make_result(Status.FAILED, model="c"))
    store.add_result(older.id, make_result(Status.USER_ERROR, model="d"))
    newer = store.start_run(fingerprint="fp")

    listed = store.list_runs()
    assert [r.id for r in listed] == [newer.id, older.id]
    assert (listed[0].ok_count, listed[0].failed_count) == (0, 0)
    assert (listed[1].ok_count, listed[1].failed_count, listed[1].result_count) == (2, 2, 4)
    assert [r.id for r in store.list_runs(limit=1)] == [newer.id]


def test_results_filters(store: ResultStore) -> None:
    run = store.start_run(fingerprint="fp")
    store.add_result(run.id, make_result(model="a", framework="pytorch"))
    store.add_result(run.id, make_result(model="a", framework="onnxruntime"))
    store.add_result(run.id, make_result(Status.FAILED, model="b", framework="pytorch"))
    other = store.start_run(fingerprint="fp")
    store.add_result(other.id, make_result(model="a", framework="pytorch"))

    assert len(store.results()) == 4
    assert len(store.results(run.id)) == 3
    assert len(store.results(run.id, model="a")) == 2
    assert len(store.results(model="a", framework="pytorch")) == 2
    failed = store.results(status="failed")
    assert [r.identity.model_name for r in failed] == ["b"]
    light = store.results(run.id, with_samples=False)
    assert all(r.samples == () for r in light)
    assert light[0].summaries["NET latency"].p50 == 1234.5678


def test_history_of_one_model_on_one_framework(store: ResultStore) -> None:
    days = ["2025-01-01", "2025-01-03", "2025-01-02"]
    for day, p50 in zip(days, [10.0, 30.0, 20.0], strict=True):
        run = store.start_run(fingerprint=day)
        started = f"{day}T03:04:05+00:00"
        store.add_result(run.id, make_result(p50=p50, started_at=started))
        store.add_result(run.id, make_result(framework="onnxruntime", p50=99.0, started_at=started))
    broken = store.start_run(fingerprint="broken")
    store.add_result(broken.id, make_result(Status.FAILED, started_at="2025-01-04T00:00:00+00:00"))

    points = store.history("resnet18", "pytorch")
    assert [p.summary.p50 for p in points] == [10.0, 20.0, 30.0]
    assert [p.started_at[:10] for p in points] == ["2025-01-01", "2025-01-02", "2025-01-03"]
    assert [p.summary.p50 for p in store.history("resnet18", "pytorch", limit=2)] == [20.0, 30.0]
    assert store.history("resnet18", "pytorch", metric_key="conv1 latency") == []
    assert store.history("resnet18", "pytorch", target="adb") == []
    assert len(store.history("resnet18", "pytorch", test_identifier="cpu")) == 3


def test_concurrent_writers_lose_nothing(store_url: str) -> None:
    with open_store(store_url) as setup:
        run_id = setup.start_run(fingerprint="fp").id
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            with open_store(store_url) as own:
                for i in range(15):
                    own.add_result(run_id, make_result(model=f"{name}-{i}"))
                    # Both writers also offer the same shared jobs.
                    own.add_result(run_id, make_result(model=f"shared-{i}"))
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("x", "y")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with open_store(store_url) as check:
        assert len(check.results(run_id, with_samples=False)) == 45


def test_ensure_run_keeps_the_given_uuid_and_is_idempotent(store_url: str) -> None:
    wanted = "0f8fad5b-d9cb-469f-a165-70867728950e"
    with open_store(store_url) as store:
        made = store.ensure_run(run_uuid=wanted, fingerprint="fp", description="remote",
                                host="box1", created_at="2025-01-02T03:04:05+00:00")
        assert (made.uuid, made.fingerprint, made.host) == (wanted, "fp", "box1")
        assert made.created_at == "2025-01-02T03:04:05+00:00"
        assert made.status is RunStatus.RUNNING
        again = store.ensure_run(run_uuid=wanted.upper(), fingerprint="other")
        assert again.id == made.id and again.fingerprint == "fp"
        with pytest.raises(UsageError, match="not a run UUID"):
            store.ensure_run(run_uuid="nope", fingerprint="fp")

    # Writers racing to create the same run all get the one row.
    racing = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
    ids: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with open_store(store_url) as own:
                ids.append(own.ensure_run(run_uuid=racing, fingerprint="fp").id)
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(ids)) == 1
    with open_store(store_url) as check:
        assert check.get_run(racing[:8]).id == ids[0]

"""Load scenarios under the real MLPerf LoadGen wheel: the definitions on a backend whose
service time is known, then a real runtime (ONNX Runtime) through benchlab's whole path.

``SleepyBackend`` (tests/sleepy_backend.py) sleeps ``SERVICE_S`` per inference. A sleep is a floor, never a ceiling, so
the assertions below are the ones a floor makes certain whatever the machine's load: a
percentile is at least the service time, no run completes more than 1 / service time samples
a second, and a rate several times that is over capacity.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runner_lines import runner_values

from benchlab.runner.config import RunnerConfig
from benchlab.runner.loadgen import LoadGenRun, read_detail_log, search_peak
from benchlab.schema.scenario import Scenario, parse_milliseconds, scenario_name
from benchlab.schema.result import DetailKey, Metric

pytest.importorskip("mlperf_loadgen")

SERVICE_S = 0.004


def _run(scenario: Scenario) -> tuple[dict[str, list[float]], dict[str, Any]]:
    return runner_values(RunnerConfig(backend="sleepy_backend:SleepyBackend", scenario=scenario,
                                      warmup=2, options={"service_ms": SERVICE_S * 1e3}))


# --- the workload's own checks -------------------------------------------------------------

def test_scenario_names_in_any_common_spelling() -> None:
    assert scenario_name("SingleStream") == "single_stream"
    assert scenario_name("multi-stream") == "multi_stream"
    assert scenario_name(" Server ") == "server"
    with pytest.raises(ValueError, match="one of single_stream, multi_stream, server, offline"):
        scenario_name("batch")


def test_latency_bounds_in_words() -> None:
    assert parse_milliseconds("15ms") == 15.0
    assert parse_milliseconds("15") == 15.0
    assert parse_milliseconds("0.015s") == pytest.approx(15.0)
    assert parse_milliseconds("1500us") == pytest.approx(1.5)
    with pytest.raises(ValueError, match="not a duration"):
        parse_milliseconds("fast")


@pytest.mark.parametrize(("settings", "problem"), [
    ({"name": "server"}, "needs a latency bound"),
    ({"name": "offline", "latency_bound_ms": 5}, "applies to the server scenario"),
    ({"name": "single_stream", "target_qps": 10}, "applies to server and offline"),
    ({"name": "server", "latency_bound_ms": 5, "samples_per_query": 4},
     "applies to multi_stream"),
    ({"name": "single_stream", "duration_s": 0}, "duration must be positive"),
    ({"name": "server", "latency_bound_ms": -1}, "must be positive"),
])
def test_combinations_loadgen_cannot_run_are_errors(settings: dict[str, Any],
                                                     problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Scenario(**settings)


def test_defaults_give_early_stopping_the_queries_it_needs() -> None:
    assert Scenario("single_stream").min_queries == 64
    assert Scenario("multi_stream").min_queries == 662
    assert Scenario("server", latency_bound_ms=15).min_queries == 662
    assert Scenario("server", latency_bound_ms=15).searches_peak
    assert not Scenario("server", latency_bound_ms=15, target_qps=10).searches_peak
    assert Scenario("server", latency_bound_ms=15, target_qps=10).label == "server@15ms 10qps"


def test_the_detail_log_reader_keeps_every_entry_and_every_message() -> None:
    text = "\n".join([
        ':::MLLOG {"key": "generic_message", "value": "one"}',
        ':::MLLOG {"key": "result_validity", "value": "INVALID"}',
        'not a log line',
        ':::MLLOG {"key": "generic_message", "value": "two"}',
        ':::MLLOG {"key": "result_validity", "value": "VALID"}',
    ])
    assert read_detail_log(text) == {"generic_message": ["one", "two"],
                                     "result_validity": "VALID"}


# --- the scenarios, LoadGen driving a backend of known service time ------------------------

def test_single_stream_reports_loadgen_p90_and_its_early_stopping_estimate() -> None:
    values, details = _run(Scenario("single_stream", duration_s=0.5))
    facts = details[DetailKey.SCENARIO]
    assert facts["valid"] is True and values[Metric.SCENARIO_VALID] == [1.0]
    assert facts["mode"] == "performance" and facts["runs"][0]["queries"] >= 64
    p90 = values[Metric.SCENARIO_LATENCY][0]
    # LoadGen's own p90 (issue to completion) is never under the service time, and its
    # early-stopping estimate is never under the p90 it bounds.
    assert p90 >= SERVICE_S * 1e3
    assert values[Metric.EARLY_STOPPING_LATENCY][0] >= p90
    assert values[Metric.THROUGHPUT][0] <= 1 / SERVICE_S
    # benchlab's own per-sample times: every query's inference, each over the service time.
    assert len(values[Metric.LATENCY]) == facts["samples_run"] >= 64
    assert min(values[Metric.LATENCY]) >= SERVICE_S * 1e3
    assert "90.0th percentile latency (ns)" in details[DetailKey.LOADGEN_SUMMARY]
    assert "result_validity" in details[DetailKey.LOADGEN_DETAIL]
    assert Metric.SERVER_QPS not in values


def test_multi_stream_latency_is_a_whole_query_of_its_samples() -> None:
    values, details = _run(Scenario("multi_stream", duration_s=0.2, query_count=30,
                                    samples_per_query=4))
    # 30 queries are too few for a p99 early-stopping estimate: LoadGen says the run is
    # invalid, and benchlab says why, rather than failing the job.
    assert values[Metric.SCENARIO_VALID] == [0.0]
    assert "early stopping" in details[DetailKey.SCENARIO]["why_invalid"]
    # A query is done when all four of its samples are, run one after another.
    assert values[Metric.SCENARIO_LATENCY][0] >= 4 * SERVICE_S * 1e3
    assert len(values[Metric.LATENCY]) == 4 * details[DetailKey.SCENARIO]["runs"][0]["queries"]


def test_offline_issues_every_sample_at_once_and_reports_throughput() -> None:
    values, details = _run(Scenario("offline", duration_s=0.5))
    assert details[DetailKey.SCENARIO]["valid"] is True
    assert 0 < values[Metric.THROUGHPUT][0] <= 1 / SERVICE_S
    assert Metric.SCENARIO_LATENCY not in values  # offline's result is its throughput
    # Sized to last the duration from the warm-up's rate, with headroom.
    assert len(values[Metric.LATENCY]) >= 0.5 / SERVICE_S


def test_an_impossible_latency_bound_is_an_invalid_run_not_a_crash() -> None:
    values, details = _run(Scenario("server", duration_s=0.2, query_count=40,
                                    latency_bound_ms=1.0))
    facts = details[DetailKey.SCENARIO]
    assert values[Metric.SCENARIO_VALID] == [0.0]
    assert Metric.SERVER_QPS not in values
    assert "no rate tried met the 1 ms bound" in facts["why_invalid"]
    # Every query takes longer than the bound on its own: the search stops at once.
    assert len(facts["runs"]) == 1


def test_a_rate_far_above_capacity_is_reported_as_such() -> None:
    values, details = _run(Scenario("server", duration_s=0.2, query_count=150,
                                    latency_bound_ms=50, target_qps=8 / SERVICE_S))
    facts = details[DetailKey.SCENARIO]
    assert values[Metric.SCENARIO_VALID] == [0.0]
    assert facts["over_capacity"] and "above what the model sustains" in facts["over_capacity"]
    assert values[Metric.THROUGHPUT][0] <= 1 / SERVICE_S


@pytest.mark.slow
# Exclusive: validity needs the p99 of 4 ms sleeps under 40 ms, which a busy neighbour's
# scheduling delays can break (seen once in the suite beside an export; never alone).
@pytest.mark.exclusive
def test_the_server_search_finds_a_rate_that_meets_the_bound() -> None:
    values, details = _run(Scenario("server", duration_s=0.5, query_count=500,
                                    latency_bound_ms=40))
    facts = details[DetailKey.SCENARIO]
    runs = facts["runs"]
    assert facts["valid"] is True and len(runs) >= 2
    qps = values[Metric.SERVER_QPS][0]
    # The reported rate is the highest that passed, and one sample at a time cannot go
    # above 1 / service time.
    assert qps == max(r["target_qps"] for r in runs if r["valid"])
    assert 0 < qps <= 1 / SERVICE_S
    assert all(r["target_qps"] > qps for r in runs if not r["valid"])
    assert values[Metric.SCENARIO_LATENCY][0] <= 40


def _search(own_ms: Callable[[float], list[float]],
            valid: Callable[[float], bool]) -> list[float]:
    """The rates :func:`search_peak` tries against a 10 ms bound when a run at ``rate`` is
    ``valid(rate)`` and the model's own times there are ``own_ms(rate)`` (1000 queries/s
    expected: the search starts at 500)."""
    scenario = Scenario("server", latency_bound_ms=10)

    def run_at(rate: float) -> LoadGenRun:
        log = {"result_validity": "VALID" if valid(rate) else "INVALID"}
        return LoadGenRun(scenario, rate, log, [], "", "", own_times={"latency": own_ms(rate)})

    return [run.target_qps or 0.0 for run in search_peak(run_at, scenario, expected_ms=1.0)]


def test_a_queue_left_by_a_neighbour_does_not_end_the_search_while_the_model_is_fast() -> None:
    # From arrival every run to 125/s fails (a neighbour's burst left a queue: LoadGen's
    # tail does not improve as the rate halves), but the model's own times are 2 ms: a lower
    # rate is tried until one passes, then the bracket is bisected.
    rates = _search(lambda rate: [2.0] * 100, lambda rate: rate < 100)
    assert rates[:4] == [500, 250, 125, 62.5]
    assert 62.5 <= max(r for r in rates if r < 100) < 100
    assert len(rates) > 4


def test_the_search_stops_when_the_model_alone_is_over_the_bound() -> None:
    # Median over the bound: the first run decides.
    assert _search(lambda rate: [12.0] * 100, lambda rate: False) == [500]
    # Only the p99 over: one run could be a neighbour's burst, two in a row decide.
    tail = [2.0] * 95 + [30.0] * 5
    assert _search(lambda rate: tail, lambda rate: False) == [500, 250]
    # A tail over once, then fine: the search goes on.
    assert _search(lambda rate: tail if rate == 500 else [2.0] * 100,
                   lambda rate: rate < 40)[:5] == [500, 250, 125, 62.5, 31.25]
    # A model that never meets it and never says so stops at 1/16 of the start.
    assert min(_search(lambda rate: [2.0] * 100, lambda rate: False)) == 500 / 16


# --- a real runtime through benchlab's whole path ------------------------------------------

#: The real-runtime runs: every scenario, an accuracy-mode run, a bound no rate can meet and
#: a rate far above capacity.
REAL_RUNS = {
    "performance": Scenario("single_stream", duration_s=1.0),
    "accuracy": Scenario("single_stream", accuracy=True),
    "multi_stream": Scenario("multi_stream", duration_s=0.5, query_count=100),
    "server": Scenario("server", duration_s=0.5, query_count=300, latency_bound_ms=50,
                       target_qps=200),
    "offline": Scenario("offline", duration_s=0.5),
    "impossible": Scenario("server", duration_s=0.3, query_count=100,
                           latency_bound_ms=0.001),
    # 200,000 queries/s for 50 ms: 10,000 queries, far more than Python's SUT completes.
    "overload": Scenario("server", duration_s=0.05, latency_bound_ms=50, target_qps=200_000),
}


@pytest.fixture(scope="module")
def mlp_runs(tmp_path_factory: pytest.TempPathFactory, zoo_cache_dir: Path) -> dict[str, Any]:
    """The zoo's mlp on ONNX Runtime under each of :data:`REAL_RUNS`, one store."""
    import benchlab

    root = tmp_path_factory.mktemp("scenario")
    overrides = benchlab.TestOverrides(repeat=1, warmup=2)
    found = {}
    for key, scenario in REAL_RUNS.items():
        (result,) = benchlab.run(models=["mlp"], frameworks=["onnxruntime:precision=fp32"],
                                 db=root / "results.db", cache_dir=zoo_cache_dir,
                                 overrides=overrides, scenario=scenario)
        found[key] = result
    found["db"] = root / "results.db"
    return found


@pytest.mark.slow
def test_a_scenario_result_lands_in_the_store_like_any_other(mlp_runs: dict[str, Any]) -> None:
    from benchlab.report.scenario import scenario_rows
    from benchlab.store import open_store

    result = mlp_runs["performance"]
    assert result.status == "ok", (result.error, result.stderr_tail)
    assert result.summaries[Metric.SCENARIO_VALID.key].mean == 1.0
    assert result.summaries[Metric.SCENARIO_LATENCY.key].count == 1
    assert result.details[DetailKey.SCENARIO]["name"] == "single_stream"
    assert "MLPerf Results Summary" in result.details[DetailKey.LOADGEN_SUMMARY]
    (row,) = scenario_rows([result])
    assert (row.scenario, row.percentile, row.valid, row.processes) == ("single_stream", "p90",
                                                                       1, 1)
    with open_store(mlp_runs["db"]) as store:
        stored = [r for r in store.results() if r.details.get(DetailKey.SCENARIO)]
    assert any(r.summaries[Metric.SCENARIO_LATENCY.key].p50
               == result.summaries[Metric.SCENARIO_LATENCY.key].p50 for r in stored)


@pytest.mark.slow
def test_every_scenario_runs_on_onnx_runtime_and_lands_in_the_store(
        mlp_runs: dict[str, Any]) -> None:
    from benchlab.store import open_store

    by_name = {key: mlp_runs[key] for key in ("multi_stream", "server", "offline")}
    for key, result in by_name.items():
        assert result.status == "ok", (key, result.error, result.stderr_tail)
        assert result.details[DetailKey.SCENARIO]["name"] == key
        assert Metric.SCENARIO_VALID.key in result.summaries, key
        assert result.summaries[Metric.LATENCY.key].count > 0, key
    assert Metric.SCENARIO_LATENCY.key in by_name["multi_stream"].summaries
    for key in ("server", "offline"):
        assert by_name[key].summaries[Metric.THROUGHPUT.key].p50 > 0, key
    server = by_name["server"]
    assert server.details[DetailKey.SCENARIO]["runs"][0]["target_qps"] == 200
    if server.summaries[Metric.SCENARIO_VALID.key].mean == 1.0:
        assert server.summaries[Metric.SERVER_QPS.key].p50 == 200
    with open_store(mlp_runs["db"]) as store:
        stored = {r.details[DetailKey.SCENARIO]["name"] for r in store.results()
                  if r.details.get(DetailKey.SCENARIO)}
    assert stored == {"single_stream", "multi_stream", "server", "offline"}


@pytest.mark.slow
def test_a_bound_no_rate_meets_is_an_invalid_run_on_onnx_runtime(
        mlp_runs: dict[str, Any]) -> None:
    result = mlp_runs["impossible"]
    assert result.status == "ok", (result.error, result.stderr_tail)
    facts = result.details[DetailKey.SCENARIO]
    assert result.summaries[Metric.SCENARIO_VALID.key].mean == 0.0
    assert "no rate tried met the 0.001 ms bound" in facts["why_invalid"]
    assert Metric.SERVER_QPS.key not in result.summaries
    assert len(facts["runs"]) == 1  # every query alone is over it: no lower rate is tried


@pytest.mark.slow
def test_a_rate_far_above_capacity_on_onnx_runtime_is_reported_as_such(
        mlp_runs: dict[str, Any]) -> None:
    result = mlp_runs["overload"]
    assert result.status == "ok", (result.error, result.stderr_tail)
    facts = result.details[DetailKey.SCENARIO]
    assert result.summaries[Metric.SCENARIO_VALID.key].mean == 0.0
    assert "above what the model sustains" in facts["over_capacity"]
    assert result.summaries[Metric.THROUGHPUT.key].p50 < 200_000 / 2


@pytest.mark.slow
def test_accuracy_mode_checks_loadgens_logged_outputs_against_the_reference(
        mlp_runs: dict[str, Any]) -> None:
    result = mlp_runs["accuracy"]
    assert result.status == "ok", (result.error, result.stderr_tail)
    assert result.details[DetailKey.SCENARIO]["mode"] == "accuracy"
    # ONNX Runtime against the PyTorch reference of the same weights: float rounding only.
    assert result.summaries[Metric.ERROR_MAX_ABS.key].max < 1e-3
    assert result.details["reference_sets"] >= 1
    assert Metric.SCENARIO_LATENCY.key not in result.summaries


def test_a_scenario_on_the_specs_own_commands_fails_that_job_saying_why(tmp_path: Path) -> None:
    import benchlab

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "model": {"name": "m", "framework": "generic", "format": "none"},
        "tests": [{"identifier": "t", "commands": ["true"], "scenario": "single_stream"}]}))
    (result,) = benchlab.run([spec], db=tmp_path / "r.db")
    assert result.status != "ok"
    assert "runs in benchlab's runner" in (result.error or "")


@pytest.mark.slow
def test_a_scenario_runs_where_the_runner_runs_on_an_ssh_board(tmp_path: Path, board: Any,
                                                                zoo_cache_dir: Path) -> None:
    """LoadGen runs in the runner process on the board (the loopback sshd): its clock and
    queries never cross the link, and the result has the shape of any other."""
    import sys

    import benchlab

    (result,) = benchlab.run(models=["mlp"], frameworks=["onnxruntime:precision=fp32"],
                             target=f"{board.target_text},python={sys.executable}",
                             db=tmp_path / "results.db", cache_dir=zoo_cache_dir,
                             overrides=benchlab.TestOverrides(repeat=1, warmup=2),
                             scenario=Scenario("offline", duration_s=0.5))
    assert result.status == "ok", (result.error, result.stderr_tail)
    assert result.identity.target == "ssh"
    assert result.summaries[Metric.SCENARIO_VALID.key].mean == 1.0, \
        result.details[DetailKey.SCENARIO]["why_invalid"]
    assert result.summaries[Metric.THROUGHPUT.key].p50 > 0
    assert "Scenario : Offline" in result.details[DetailKey.LOADGEN_SUMMARY]


@pytest.mark.slow
def test_a_scenario_runs_where_the_runner_runs_on_a_phone_with_python(
        tmp_path: Path, phone: Any, zoo_cache_dir: Path) -> None:
    """docs/scenarios.md: on a phone with Python (the stand-in phone through the real adb,
    its python= this interpreter), LoadGen runs in the runner process there, as on a board."""
    import sys

    import benchlab

    standin, server = phone
    (result,) = benchlab.run(models=["mlp"], frameworks=["onnxruntime:precision=fp32"],
                             target=f"adb:server_port={server.port},python={sys.executable}",
                             db=tmp_path / "results.db", cache_dir=zoo_cache_dir,
                             overrides=benchlab.TestOverrides(repeat=1, warmup=2),
                             scenario=Scenario("single_stream", duration_s=0.5))
    assert result.status == "ok", (result.error, result.stderr_tail)
    assert result.identity.target == "adb"
    assert result.environment["model"] == standin.profile.model
    assert result.summaries[Metric.SCENARIO_VALID.key].mean == 1.0, \
        result.details[DetailKey.SCENARIO]["why_invalid"]
    assert "Scenario : SingleStream" in result.details[DetailKey.LOADGEN_SUMMARY]

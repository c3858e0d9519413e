"""FAI-PEP power specs on benchlab's meters: a ``metric: power`` test measures energy by itself.

The Monsoon is the fake of :mod:`tests.energy.fake_monsoon` (Monsoon's Python API in
``sys.modules``), so :class:`~benchlab.energy.monsoon.MonsoonMeter` runs its own code: it
connects, sets the voltage the spec gives, samples, and the job's account comes from those
samples. Nothing here asserts how fast anything runs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import benchlab
from benchlab.energy import ScriptedMeter
from benchlab.energy.session import EnergySession, EnergySettings, choose_meter
from benchlab.harness.planner import describe_plan
from benchlab.report.matrix import matrix_cells
from benchlab.report.matrix_html import matrix_html
from benchlab.report.terminal import results_table
from benchlab.schema.result import Metric, Status
from benchlab.spec import load_spec
from benchlab.spec.types import TestCase

from .fake_monsoon import FakeMonsoon

IDLE_W, BUSY_W = 2.0, 5.0
BUSY_MA = 500.0  # the fake Monsoon's current once the job runs
POWER_KEYS = {"monsoon", "collection_time", "voltage"}


@pytest.fixture
def monsoon(monkeypatch: pytest.MonkeyPatch) -> FakeMonsoon:
    return FakeMonsoon(busy_ma=BUSY_MA).install(monkeypatch)


# --- the settings and the session -----------------------------------------------------------


def test_the_users_settings_lie_over_the_tests_own() -> None:
    test = EnergySettings(meter="monsoon", voltage=4.2, collection_time=400.0)
    user = EnergySettings(meter="rapl", idle_s=1.0)
    assert user.over(test) == EnergySettings(meter="rapl", idle_s=1.0, voltage=4.2,
                                             collection_time=400.0)
    assert EnergySettings(voltage=3.7, collection_time=500.0).over(test) == EnergySettings(
        voltage=3.7, collection_time=500.0)
    assert user.over(None) is user


def test_a_monsoon_chosen_by_name_is_set_to_the_voltage_asked(monsoon: FakeMonsoon) -> None:
    meter, why = choose_meter(object(), "monsoon", voltage=3.7)
    assert meter is not None and why == ""
    assert meter.voltage == 3.7  # type: ignore[attr-defined]
    meter.start()
    time.sleep(0.02)
    readings = meter.stop()
    assert monsoon.vouts == [3.7]
    assert readings and {r.voltage_v for r in readings} == {3.7}
    default, _ = choose_meter(object(), "monsoon")
    assert default.voltage == 4.2  # type: ignore[union-attr]  # the meter's own default


class Host:
    """A target named like the host (its windows are on this clock) offering ``meter``."""

    name = "host"

    def __init__(self, meter: ScriptedMeter) -> None:
        self.meter = meter

    def power_meters(self) -> list[ScriptedMeter]:
        return [self.meter]


def _scripted(busy_from: float) -> ScriptedMeter:
    now = time.monotonic()
    return ScriptedMeter(lambda t: BUSY_W if t >= busy_from else IDLE_W,
                         times=[now - 1 + i * 0.01 for i in range(800)])


def test_processes_are_added_until_the_windows_cover_the_collection_time() -> None:
    begin = time.monotonic() + 1.0  # after the idle baseline
    session = EnergySession.open(Host(_scripted(begin)),
                                 EnergySettings(idle_s=0.2, collection_time=1.0))
    session.start()
    assert session.wants_more()  # nothing measured yet
    for k in range(3):  # three processes of 0.4 s, 40 inferences each
        assert session.wants_more()
        session.add_process((begin + 0.5 * k, begin + 0.5 * k + 0.4), None, 40)
    assert not session.wants_more() and session.measured_s == pytest.approx(1.2)
    energy, per_process = session.finish()
    assert energy["status"] == "ok", energy
    assert energy["collection_time_s"] == 1.0 and energy["measured_s"] == pytest.approx(1.2)
    assert energy["per_process_window_s"] == pytest.approx([0.4] * 3)
    # Mean power over the windows is the busy draw; above the idle baseline, the difference.
    assert energy["mean_power_w"] == pytest.approx(BUSY_W, rel=1e-6)
    assert energy["net_power_w"] == pytest.approx(BUSY_W - IDLE_W, rel=1e-3)
    assert energy["per_process_mean_power_w"] == pytest.approx([BUSY_W] * 3, rel=1e-6)
    assert per_process == pytest.approx([(BUSY_W - IDLE_W) * 0.4 / 40] * 3, rel=1e-3)


def test_a_process_without_iterations_ends_the_collection() -> None:
    begin = time.monotonic() + 1.0
    session = EnergySession.open(Host(_scripted(begin)),
                                 EnergySettings(idle_s=0.2, collection_time=100.0))
    session.start()
    session.add_process((begin, begin + 0.4), None, 40)
    assert session.wants_more()
    session.add_process((begin + 0.5, begin + 0.9), None, 0)  # it would never add up
    assert not session.wants_more()
    session.finish()


def test_lengthen_asks_each_process_for_the_collection_time_while_a_meter_measures() -> None:
    test = TestCase(identifier="t", min_time=0.1, max_time=0.3)
    measuring = EnergySession(ScriptedMeter([]), collection_time=0.5)
    longer = measuring.lengthen(test)
    assert (longer.min_time, longer.max_time) == (0.5, 0.5)
    assert measuring.lengthen(TestCase(identifier="t", min_time=2.0)).min_time == 2.0
    assert EnergySession(None, "no meter", collection_time=0.5).lengthen(test) is test
    assert EnergySession(ScriptedMeter([])).lengthen(test) is test


# --- FAI-PEP power specs run through benchlab.run ------------------------------------------

BENCH = """
import json, sys, time
iterations = int(sys.argv[sys.argv.index("--iter") + 1])
for i in range(iterations):
    began = time.perf_counter()
    time.sleep(0.002)
    line = {"type": "NET", "metric": "latency", "unit": "ms",
            "value": str((time.perf_counter() - began) * 1e3)}
    print("PyTorchObserver " + json.dumps(line))
"""


def _faipep_power_spec(tmp_path: Path) -> Path:
    """The form of FAI-PEP's *_power.json specs (a program's own command, metric power, a
    collection time and a voltage), with a collection time short enough for a test."""
    spec = {
        "model": {"category": "CNN", "description": "a stand-in benchmark", "format": "caffe2",
                  "kind": "deployment", "name": "standin_power"},
        "tests": [{
            "commands": ["{program} --iter {iter} --warmup {warmup}"],
            "identifier": "standin-power",
            "platform_args": {"sleep_before_run": 0},
            "iter": 20,
            "metric": "power",
            "collection_time": 0.5,
            "voltage": 4.2,
            "warmup": 0,
        }],
    }
    path = tmp_path / "standin_power.json"
    path.write_text(json.dumps(spec, indent=2))
    return path


def _run(spec: Path, tmp_path: Path, **kwargs: Any) -> benchlab.Result:
    (tmp_path / "bench.py").write_text(BENCH)
    results = list(benchlab.run(
        [spec], db=tmp_path / "results.db", cache_dir=tmp_path / "cache",
        string_map={"program": f"{sys.executable} {tmp_path / 'bench.py'}"}, **kwargs))
    [result] = results
    assert result.status is Status.OK, result.error
    return result


def test_a_faipep_power_spec_measures_energy_without_being_asked(
    tmp_path: Path, monsoon: FakeMonsoon
) -> None:
    spec = _faipep_power_spec(tmp_path)
    plan = json.loads(describe_plan(benchlab.plan_sweep([spec], cache_dir=tmp_path / "cache")))
    assert not {item["field"].rsplit(".", 1)[-1] for item in plan["ignored"]} & POWER_KEYS

    result = _run(spec, tmp_path)  # no energy= given
    energy = result.details["energy"]
    assert energy["status"] == "ok", energy
    assert energy["meter"] == "monsoon" and energy["window"] == "command"
    # The spec's voltage reached the monitor, and the readings are current x that voltage.
    assert monsoon.vouts == [4.2] and energy["meter_voltage_v"] == 4.2
    assert energy["mean_power_w"] == pytest.approx(BUSY_MA * 1e-3 * 4.2, rel=1e-9)
    assert energy["net_power_w"] > 0 and energy["joules_per_inference"] > 0
    # The commands run a fixed 20 iterations: fresh processes came until their windows added
    # up to the collection time, and not one more.
    windows = energy["per_process_window_s"]
    assert energy["collection_time_s"] == 0.5
    assert sum(windows) == pytest.approx(energy["measured_s"]) and sum(windows) >= 0.5
    assert sum(windows[:-1]) < 0.5
    assert result.repetitions == len(windows)
    # One energy and one power sample per process, reported beside each other.
    assert len(result.samples_of(Metric.ENERGY_PER_INFERENCE.key)) == len(windows)
    assert result.samples_of(Metric.POWER.key) == pytest.approx(
        energy["per_process_mean_power_w"])
    assert all(s.unit == "W" for s in result.samples if s.key == Metric.POWER.key)
    [cell] = matrix_cells([result])
    assert cell.power == pytest.approx(BUSY_MA * 1e-3 * 4.2)
    assert cell.energy == pytest.approx(energy["joules_per_inference"] * 1e3, rel=0.5)
    console = Console(width=250, record=True)
    console.print(results_table([result]))
    header = next(line for line in console.export_text().splitlines() if "p50" in line)
    assert header.index("mJ") < header.index(" W ")
    html = matrix_html([cell])
    assert "<th>mJ/inf</th>" in html and "<th>power W</th>" in html
    assert f"{cell.power:.3g}" in html


def test_a_monsoon_block_sets_the_voltage_and_each_runner_process_covers_the_time(
    tmp_path: Path, monsoon: FakeMonsoon, onnx_file: Path
) -> None:
    pytest.importorskip("onnxruntime")
    spec = {
        "model": {"name": "tiny_power", "format": "onnx",
                  "files": {"model": {"location": str(onnx_file), "md5": None}}},
        "tests": [{"identifier": "p", "metric": "power", "iter": 5, "warmup": 0,
                   "inputs": {"x": {"shapes": [[1, 8]], "type": "float"}},
                   "monsoon": {"collection_time": 0.5, "voltage": 3.8}}],
        "frameworks": [{"name": "onnxruntime"}],
    }
    path = tmp_path / "tiny_power.json"
    path.write_text(json.dumps(spec))
    result = _run(path, tmp_path)
    energy = result.details["energy"]
    assert energy["status"] == "ok", energy
    assert monsoon.vouts == [3.8] and energy["meter_voltage_v"] == 3.8
    assert energy["mean_power_w"] == pytest.approx(BUSY_MA * 1e-3 * 3.8, rel=1e-9)
    # The runner was asked for min_time = collection_time: its own timed loop (its report,
    # not the meter's account) lasted at least that long, in one process.
    window = result.details["measure_window"]
    assert window["end"] - window["start"] >= 0.5
    assert result.repetitions == 1 and energy["window"] == "runner"


def test_the_users_energy_choice_wins_over_the_spec(
    tmp_path: Path, monsoon: FakeMonsoon
) -> None:
    result = _run(_faipep_power_spec(tmp_path), tmp_path, energy="rapl")
    energy = result.details["energy"]
    assert "rapl" in energy["meter"] + energy["reason"]
    assert monsoon.vouts == [] and monsoon.connections == []  # the Monsoon was never touched


def test_a_test_of_another_metric_measures_no_energy(tmp_path: Path) -> None:
    path = _faipep_power_spec(tmp_path)
    spec = json.loads(path.read_text())
    spec["tests"][0]["metric"] = "delay"
    path.write_text(json.dumps(spec))
    result = _run(path, tmp_path)
    assert "energy" not in result.details and result.repetitions == 1
    ignored = dict(load_spec(path).ignored)
    assert "metric 'power'" in ignored["tests[0].collection_time"]

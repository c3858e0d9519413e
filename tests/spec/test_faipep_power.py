"""FAI-PEP power specs load into a test's own energy request (``TestCase.energy``).

One test per form FAI-PEP writes: the ten ``*_power.json`` specs of its specifications folder
(``metric: power`` with ``collection_time`` and ``voltage``), ``mobilenet_v2_power_software.json``
(``metric: power`` with ``method: software``), and the ``monsoon`` block its Monsoon code reads
(``collection_time``, ``voltage``, ``disable_usb``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchlab.errors import SpecError
from benchlab.schema.settings import EnergySettings
from benchlab.spec import BenchmarkSpec, load_spec, load_suite
from benchlab.spec.faipep import FAIPEP_MONSOON_VOLTAGE, UNHONOURED_TEST_KEYS

MODEL = {"category": "CNN", "format": "tflite", "name": "mobilenet_v2_1.0_224_power",
         "files": {"graph": {"filename": "m.tflite", "location": "https://example.org/m.tflite",
                             "md5": "d8065bc96469fdc4f3fdb05b878c6bbc"}}}
COMMAND = "{program} --graph={files.graph} --warmup_runs={warmup} --num_runs={iter}"


def _load(tmp_path: Path, **test: Any) -> BenchmarkSpec:
    data = {"model": MODEL, "tests": [{"identifier": "p", "commands": [COMMAND], **test}]}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    return load_spec(path)


def test_the_power_keys_are_no_longer_listed_as_ignored() -> None:
    assert not {"monsoon", "collection_time", "voltage"} & set(UNHONOURED_TEST_KEYS)


def test_collection_time_and_voltage_ask_for_a_monsoon(tmp_path: Path) -> None:
    # mobilenet_v2_1.0_224_2_threads_power.json and the nine like it.
    spec = _load(tmp_path, platform_args={"sleep_before_run": 20}, iter=1000, metric="power",
                 collection_time=400, voltage=4.2, warmup=0)
    [test] = spec.tests
    assert test.energy == EnergySettings(meter="monsoon", voltage=4.2, collection_time=400.0)
    assert test.min_time == 0.0  # the floor is applied per job, while a meter measures
    assert spec.ignored == ()


def test_the_software_method_uses_the_targets_own_meter(tmp_path: Path) -> None:
    # mobilenet_v2_power_software.json: FAI-PEP reads the phone's own power figures.
    spec = _load(tmp_path, iter=1000, metric="power", method="software", warmup=1)
    assert spec.tests[0].energy == EnergySettings(meter="auto")
    assert spec.ignored == ()  # method picked the meter: it is acted on
    compare_method = _load(tmp_path, metric="delay", method="software")
    assert [field for field, _ in compare_method.ignored] == ["tests[0].method"]


def test_a_plain_power_test_measures_with_the_targets_meter(tmp_path: Path) -> None:
    assert _load(tmp_path, metric="power").tests[0].energy == EnergySettings()


def test_a_monsoon_block_wins_over_the_tests_own_keys(tmp_path: Path) -> None:
    spec = _load(tmp_path, metric="power", collection_time=400, voltage=4.2,
                 monsoon={"collection_time": 30, "voltage": "3.85",
                          "disable_usb": "/sys/class/power_supply/usb/online"})
    assert spec.tests[0].energy == EnergySettings("monsoon", voltage=3.85, collection_time=30)
    [(field, why)] = spec.ignored
    assert field == "tests[0].monsoon.disable_usb" and "USB power" in why


def test_a_monsoon_block_without_a_voltage_gets_faipeps_default(tmp_path: Path) -> None:
    energy = _load(tmp_path, metric="power", monsoon={}).tests[0].energy
    assert energy == EnergySettings("monsoon", voltage=FAIPEP_MONSOON_VOLTAGE)
    assert FAIPEP_MONSOON_VOLTAGE == 4.0
    # A voltage beside the block is the test's own and is kept.
    beside = _load(tmp_path, metric="power", voltage=4.4, monsoon={"collection_time": 9})
    assert beside.tests[0].energy == EnergySettings("monsoon", voltage=4.4, collection_time=9)
    # Unknown keys of the block load and are listed.
    odd = _load(tmp_path, metric="power", monsoon={"serial": 123})
    assert dict(odd.ignored) == {"tests[0].monsoon.serial": "not a key of FAI-PEP's monsoon "
                                                            "block"}


def test_power_keys_outside_a_power_test_are_listed_not_acted_on(tmp_path: Path) -> None:
    spec = _load(tmp_path, collection_time=400, voltage=4.2, monsoon={"voltage": 4.0})
    assert spec.tests[0].energy is None
    ignored = dict(spec.ignored)
    assert set(ignored) == {"tests[0].collection_time", "tests[0].voltage", "tests[0].monsoon"}
    assert all("metric 'power'" in why for why in ignored.values())


def test_suite_defaults_can_make_every_test_a_power_test(tmp_path: Path) -> None:
    _load(tmp_path)  # writes spec.json
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"specs": ["spec.json"], "defaults": {
        "test": {"metric": "power", "collection_time": 60, "voltage": 4.2}}}))
    [spec] = load_suite(suite).specs
    assert spec.tests[0].energy == EnergySettings("monsoon", voltage=4.2, collection_time=60)


@pytest.mark.parametrize(
    ("test", "field"),
    [({"voltage": "high"}, "tests[0].voltage"),
     ({"voltage": 0}, "tests[0].voltage"),
     ({"collection_time": -1}, "tests[0].collection_time"),
     ({"monsoon": {"voltage": -4.2}}, "tests[0].monsoon.voltage"),
     ({"monsoon": True}, "tests[0].monsoon")],
)
def test_bad_power_values_are_spec_errors(
    tmp_path: Path, test: dict[str, Any], field: str
) -> None:
    with pytest.raises(SpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
        _load(tmp_path, metric="power", **test)


# FAI-PEP's own folder, where it is on this machine (as in test_faipep_sample.py).
FAIPEP = Path(os.environ.get("BENCHLAB_FAIPEP_SPECS", "/tmp/faipep/specifications"))


@pytest.mark.skipif(not FAIPEP.is_dir(), reason="FAI-PEP's specifications are not unpacked")
def test_every_faipep_power_spec_asks_for_energy() -> None:
    paths = sorted(p for p in FAIPEP.rglob("*.json") if '"power"' in p.read_text())
    assert paths
    for path in paths:
        for test in load_spec(path).tests:
            if test.metric == "power":
                assert test.energy is not None, path

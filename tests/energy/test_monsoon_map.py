"""FAI-PEP's ``--monsoon_map``: which Monsoon each device is wired to (``run --monsoon-map``).

The monitors are the fake of :mod:`tests.energy.fake_monsoon` with two serials on "USB", so
:class:`~benchlab.energy.monsoon.MonsoonMeter` runs its own code; the devices are real targets
(this host, an adb target named by its serial: nothing is asked of adb to name it).
"""

from __future__ import annotations

import json
import socket
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import benchlab
from benchlab.cli.labels import energy_from_options
from benchlab.energy.monsoon import monitor_for, read_monsoon_map
from benchlab.energy.session import EnergySession
from benchlab.errors import UsageError
from benchlab.schema.result import Status
from benchlab.schema.settings import EnergySettings
from benchlab.targets.adb import AdbTarget
from benchlab.targets.host import HostTarget

from .fake_monsoon import FakeMonsoon


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> FakeMonsoon:
    """Two monitors on USB: 20001 and 20002."""
    return FakeMonsoon(step_s=0.05, more_serials=(20002,)).install(monkeypatch)


def _map(tmp_path: Path, mapping: dict[str, object], name: str = "monsoon.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(mapping) if name.endswith(".json") else
                    "".join(f"{k}: {v}\n" for k, v in mapping.items()))
    return path


def test_a_map_is_read_from_json_yaml_or_faipeps_json_text(tmp_path: Path) -> None:
    pairs = (("PHONE1", "20001"), ("PHONE2", "20002"))
    as_json = _map(tmp_path, {"PHONE1": 20001, "PHONE2": "20002"})
    assert read_monsoon_map(as_json) == (pairs, str(as_json))
    as_yaml = _map(tmp_path, {"PHONE1": 20001, "PHONE2": 20002}, "monsoon.yaml")
    assert read_monsoon_map(as_yaml) == (pairs, str(as_yaml))
    # FAI-PEP passes the map itself as JSON text (run_lab.py: json.dumps(monsoon_map)).
    assert read_monsoon_map('{"PHONE1": 20001, "PHONE2": 20002}') == (pairs, "--monsoon-map")


@pytest.mark.parametrize(("text", "says"), [
    ("[1, 2]", "must map each device's serial"),
    ('{"PHONE1": [20001]}', "device 'PHONE1': the Monsoon serial number must be"),
    ("{not json", "is not JSON"),
])
def test_a_bad_map_names_the_file_and_the_entry(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "monsoon.json"
    path.write_text(text)
    with pytest.raises(UsageError, match=f"^{path}: .*{says}"):
        read_monsoon_map(path)
    with pytest.raises(UsageError, match=f"{tmp_path / 'absent.json'}: cannot read"):
        read_monsoon_map(tmp_path / "absent.json")


def test_each_device_gets_its_own_monitor(rig: FakeMonsoon, tmp_path: Path) -> None:
    path = _map(tmp_path, {"PHONE1": 20002, "PHONE2": 20001, socket.gethostname(): 20001})
    settings = energy_from_options("monsoon", str(path))
    assert settings.monsoon_map_source == str(path)
    first = monitor_for(AdbTarget("PHONE1"), settings)
    second = monitor_for(AdbTarget("PHONE2"), settings)
    here = monitor_for(HostTarget(), settings)
    assert (first.serial, second.serial, here.serial) == (20002, 20001, 20001)
    assert monitor_for(HostTarget(), EnergySettings(meter="monsoon")) is None  # no map
    # The session opens on the device's own monitor, and samples it.
    session = EnergySession.open(AdbTarget("PHONE1"), settings)
    assert session.meter is not None and session.meter.serial == 20002
    session.meter.start()
    session.meter.stop()
    assert rig.connections == [20002]


def test_a_device_without_an_entry_or_a_missing_monitor_names_file_device_and_monitor(
    rig: FakeMonsoon, tmp_path: Path
) -> None:
    path = _map(tmp_path, {"PHONE1": 20001, "PHONE3": 30003})
    settings = energy_from_options(None, str(path))  # the map implies the Monsoon
    assert settings.meter == "monsoon"
    with pytest.raises(UsageError, match=f"^{path}: no Monsoon for device PHONE2 "
                                         r"\(the map names PHONE1, PHONE3\)"):
        monitor_for(AdbTarget("PHONE2"), settings)
    with pytest.raises(UsageError, match=f"^{path}: device PHONE3 is wired to Monsoon 30003, "
                                         "which cannot be used: Monsoon 30003 not found on USB"):
        EnergySession.open(AdbTarget("PHONE3"), settings)
    with pytest.raises(UsageError, match="goes with --energy monsoon, not --energy rapl"):
        energy_from_options("rapl", str(path))


def test_run_measures_this_hosts_jobs_on_its_mapped_monitor(rig: FakeMonsoon,
                                                             tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text("import time\ntime.sleep(0.2)\nprint('PyTorchObserver {\"type\":\"NET\","
                      "\"metric\":\"latency\",\"unit\":\"ms\",\"value\":1.5}')\n")
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps({
        "model": {"name": "tiny", "format": "script",
                  "files": {"job": {"location": str(script), "md5": None}}},
        "tests": [{"identifier": "t", "commands": [f"{sys.executable} {{files.job}}"]}]}))
    path = _map(tmp_path, {socket.gethostname(): 20002})
    settings = energy_from_options("monsoon", str(path))
    [result] = benchlab.run([spec], db=tmp_path / "r.db", cache_dir=tmp_path / "cache",
                            energy=replace(settings, idle_s=0.3))
    assert result.status is Status.OK, result.error
    assert rig.connections == [20002]
    assert result.details["energy"]["meter"] == "monsoon"

"""The device-state probe: its script on this host, and its parser on a phone's output."""

from __future__ import annotations

import subprocess

from benchlab.targets.probe import PROBE_SCRIPT, clusters_of, hottest, parse_probe

PHONE = """\
cpu cpu0 scaling_governor schedutil
cpu cpu0 scaling_cur_freq 300000
cpu cpu0 scaling_max_freq 1800000
cpu cpu0 cpuinfo_min_freq 300000
cpu cpu0 cpuinfo_max_freq 1800000
cpu cpu1 scaling_governor schedutil
cpu cpu1 scaling_cur_freq 1200000
cpu cpu1 cpuinfo_max_freq 1800000
cpu cpu4 scaling_governor performance
cpu cpu4 scaling_cur_freq 2400000
cpu cpu4 cpuinfo_max_freq 2400000
cpu cpu5 scaling_governor performance
cpu cpu5 scaling_cur_freq 2400000
cpu cpu5 cpuinfo_max_freq 2400000
cpu cpu7 cpuinfo_max_freq 2850000
cpu cpu7 online 1
thermal thermal_zone0 cpu-1-0-usr 41500
thermal thermal_zone1 battery 31
thermal thermal_zone2  garbage
power battery type Battery
power battery status Discharging
power battery capacity 80
power battery temp 312
power battery voltage_now 3900000
power battery current_now -420000
power battery charge_counter 2800000
power usb online 0
load - - 1.50 0.75 0.25 2/300 1234
mem - total_kb 7864320
probe - done 1
"""


def test_a_phone_probe_becomes_clusters_temperatures_and_battery() -> None:
    state = parse_probe(PHONE)
    assert state["complete"] is True
    assert state["cpus"]["cpu0"] == {
        "governor": "schedutil", "cur_khz": 300000, "max_khz": 1800000,
        "hw_min_khz": 300000, "hw_max_khz": 1800000,
    }
    assert [c["cpus"] for c in state["clusters"]] == ["0-1", "4-5", "7"]
    assert state["clusters"][0]["cur_khz"] == [300000, 1200000]
    assert state["clusters"][1]["governors"] == ["performance"]
    # millidegrees and whole degrees are both read as °C; the unreadable zone is skipped
    assert state["temperatures_c"] == {"cpu-1-0-usr:thermal_zone0": 41.5,
                                       "battery:thermal_zone1": 31.0}
    assert hottest(state) == 41.5
    battery = state["battery"]
    assert battery["charging"] is False
    assert battery["temperature_c"] == 31.2
    assert battery["voltage_v"] == 3.9
    assert battery["current_ma"] == -420.0
    assert battery["charge_counter_uah"] == 2800000
    assert state["load_average"] == [1.5, 0.75, 0.25]
    assert state["memory_total_mib"] == 7680


def test_usb_power_counts_as_charging() -> None:
    state = parse_probe(PHONE.replace("power usb online 0", "power usb online 1"))
    assert state["battery"]["charging"] is True
    assert state["battery"]["powered_by"] == ["usb"]


def test_a_cut_off_probe_is_marked_incomplete() -> None:
    state = parse_probe(PHONE.split("power battery")[0])
    assert state["complete"] is False
    assert state["battery"] is None


def test_clusters_ignore_cpus_without_cpufreq() -> None:
    assert clusters_of({"cpu0": {"capacity": 1024}}) == []


def test_the_script_runs_under_dash_on_this_host() -> None:
    out = subprocess.run(["sh", "-c", PROBE_SCRIPT], capture_output=True, text=True, check=True)
    state = parse_probe(out.stdout)
    assert state["complete"] is True
    assert state["memory_total_mib"] > 0
    assert out.stderr == ""

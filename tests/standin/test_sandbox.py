"""The stand-in's sandbox without adb: path mapping, the booted tree, the tools, the model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from benchlab_standin import default_profile
from benchlab_standin.services import Sandbox
from benchlab_standin.simulation import PhoneSimulation


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A sandbox booted with the default profile (no server, no simulation thread)."""
    device = tmp_path / "device"
    default_profile().materialize(device)
    return device


def tool(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run a shim the way a shell command on the stand-in would."""
    env = Sandbox(root).environment()
    return subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=60,
                          cwd=root / "data/local/tmp")


def read(root: Path, relative: str) -> str:
    return (root / relative).read_text().strip()


# --- path mapping --------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "mapped"), [
    ("cat /sys/class/thermal/thermal_zone0/temp", "cat R/sys/class/thermal/thermal_zone0/temp"),
    ("ls /data", "ls R/data"),
    ("echo '/sdcard/a b' \"/system/bin\"", "echo 'R/sdcard/a b' \"R/system/bin\""),
    ("PATH=/system/bin:/data/x/bin sh", "PATH=R/system/bin:R/data/x/bin sh"),
    ("cat /proc/cpuinfo /proc/stat", "cat R/proc/cpuinfo /proc/stat"),
    ("ls /systemd /tmp/data $HOME/sys ./data ${X}/data", "ls /systemd /tmp/data $HOME/sys "
                                                         "./data ${X}/data"),
    ("x=$(cat /proc/loadavg)|grep /sys/", "x=$(cat R/proc/loadavg)|grep R/sys/"),
])
def test_rewrite_maps_device_prefixes_only(tmp_path: Path, command: str, mapped: str) -> None:
    sandbox = Sandbox(tmp_path)
    assert sandbox.rewrite(command) == mapped.replace("R/", f"{tmp_path}/")


def test_sync_paths_cannot_leave_the_sandbox(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path)
    assert sandbox.host_path("/../../etc/passwd") == tmp_path / "etc/passwd"
    assert sandbox.host_path("/") == tmp_path
    assert sandbox.host_path("sdcard//x/./y") == tmp_path / "sdcard/x/y"
    with pytest.raises(ValueError):
        Sandbox(Path("/tmp/has space"))


# --- the booted tree and the tools ---------------------------------------------------------


def test_materialized_tree(root: Path) -> None:
    cpu = "sys/devices/system/cpu"
    assert read(root, f"{cpu}/possible") == "0-7"
    assert (root / f"{cpu}/cpu5/cpufreq").resolve() == (root / f"{cpu}/cpufreq/policy4")
    assert read(root, f"{cpu}/cpu5/cpufreq/related_cpus") == "4 5 6"
    assert read(root, f"{cpu}/cpu0/cpufreq/scaling_max_freq") == "1800000"
    assert read(root, f"{cpu}/cpu7/cpu_capacity") == "1024"
    assert "1800000" in read(root, f"{cpu}/cpu3/cpufreq/scaling_available_frequencies")
    types = [read(root, f"sys/class/thermal/thermal_zone{i}/type") for i in range(6)]
    assert types[:2] == ["cpu-0-0-usr", "cpu-1-0-usr"] and "battery" in types
    assert read(root, "sys/class/thermal/thermal_zone0/temp") == "28000"
    assert read(root, "sys/class/power_supply/battery/status") == "Charging"
    assert read(root, "sys/class/power_supply/battery/temp") == "280"
    cpuinfo = read(root, "proc/cpuinfo")
    assert cpuinfo.count("processor\t:") == 8 and cpuinfo.endswith("SM8350")
    assert cpuinfo.split("processor\t: 7")[1].count("CPU part\t: 0xd44") == 1
    assert (root / "system/bin/su").exists()


def test_unrooted_profile(tmp_path: Path) -> None:
    profile = replace(default_profile(), rooted=False)
    profile.materialize(tmp_path)
    governor = tmp_path / "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"
    assert governor.stat().st_mode & 0o777 == 0o444
    assert not (tmp_path / "system/bin/su").exists()
    assert profile.props()["ro.debuggable"] == "0"


def test_getprop_setprop(root: Path) -> None:
    listing = tool(root, "getprop").stdout.splitlines()
    assert "[ro.product.cpu.abi]: [arm64-v8a]" in listing
    keys = [line[1:line.index("]")] for line in listing]
    assert keys == sorted(keys)
    assert tool(root, "getprop", "ro.soc.model").stdout == "SM8350\n"
    assert tool(root, "getprop", "no.such.prop").stdout == "\n"
    assert tool(root, "getprop", "no.such.prop", "dflt").stdout == "dflt\n"
    assert tool(root, "setprop", "debug.benchlab", "on").returncode == 0
    assert tool(root, "getprop", "debug.benchlab").stdout == "on\n"
    refused = tool(root, "setprop", "ro.product.model", "Other")
    assert refused.returncode == 1 and "Failed to set property" in refused.stderr


def test_log_and_logcat(root: Path) -> None:
    tool(root, "log", "-t", "Bench", "first", "line")
    tool(root, "log", "-p", "w", "-t", "Other", "warned")
    threadtime = tool(root, "logcat", "-d").stdout.splitlines()
    assert threadtime[0] == "--------- beginning of main"
    fields = threadtime[1].split()
    assert fields[4:] == ["I", "Bench", ":", "first", "line"]
    assert int(fields[2]) == int(fields[3])  # pid and tid of the one-threaded log tool
    assert tool(root, "logcat", "-d", "-v", "brief").stdout.splitlines()[2].startswith(
        "W/Other   (")
    assert tool(root, "logcat", "-d", "-v", "raw", "-s", "Bench").stdout == "first line\n"
    assert tool(root, "logcat", "-d", "*:W").stdout.count("\n") == 2
    tool(root, "logcat", "-c")
    assert tool(root, "logcat", "-d").stdout == ""


def test_dumpsys(root: Path) -> None:
    assert "level: 80" in tool(root, "dumpsys", "battery").stdout
    tool(root, "dumpsys", "battery", "unplug")
    assert "  USB powered: false\n" in tool(root, "dumpsys", "battery").stdout
    tool(root, "dumpsys", "battery", "reset")
    assert "  USB powered: true\n" in tool(root, "dumpsys", "battery").stdout
    thermal = tool(root, "dumpsys", "thermalservice").stdout
    assert "Temperature{mValue=28.0, mType=0, mName=cpu-0-0-usr, mStatus=0}" in thermal


# --- the physical model (ticked by hand) ---------------------------------------------------


def test_heating_cooling_and_outside_writes(root: Path) -> None:
    sim = PhoneSimulation(root, default_profile())
    zone1 = "sys/class/thermal/thermal_zone1/temp"
    sim.busy(+1)
    for _ in range(3):
        sim.tick(1.0)
    assert read(root, zone1) == "34000"  # 2 C/s at share 1.0
    assert read(root, "sys/class/thermal/thermal_zone4/temp") == "29500"  # battery, share .25
    assert read(root, "sys/class/power_supply/battery/temp") == "295"
    sim.busy(-1)
    sim.tick(1.0)
    assert 33000 < int(read(root, zone1)) < 34000  # decays toward ambient
    (root / zone1).write_text("50000\n")  # a test (or adb shell echo) sets it
    sim.tick(0.1)
    assert 49000 < int(read(root, zone1)) < 50000  # continued from 50 C, not overwritten


def test_thermal_capping_and_governors(root: Path) -> None:
    sim = PhoneSimulation(root, default_profile())
    policy = "sys/devices/system/cpu/cpufreq/policy{}/{}".format
    sim.set_temperature(70.0)
    assert read(root, policy(4, "scaling_max_freq")) == "1440000"
    assert read(root, policy(7, "scaling_max_freq")) == "1497600"
    assert read(root, policy(0, "scaling_max_freq")) == "1800000"  # little cores not capped
    assert "capping big clusters" in read(root, "data/logcat.txt")
    sim.set_temperature(40.0)
    assert read(root, policy(4, "scaling_max_freq")) == "2400000"
    (root / policy(4, "scaling_max_freq")).write_text("1900800\n")  # user limit, adopted
    (root / policy(4, "scaling_governor")).write_text("performance\n")
    (root / policy(0, "scaling_governor")).write_text("userspace\n")
    (root / policy(0, "scaling_setspeed")).write_text("1094400\n")
    (root / policy(7, "scaling_governor")).write_text("powersave\n")
    sim.tick(0.1)
    assert read(root, policy(4, "scaling_max_freq")) == "1900800"
    assert read(root, policy(4, "scaling_cur_freq")) == "1900800"
    assert read(root, policy(0, "scaling_cur_freq")) == "1094400"
    assert read(root, policy(7, "scaling_cur_freq")) == "844800"
    assert read(root, "sys/devices/system/cpu/cpu5/cpufreq/scaling_cur_freq") == "1900800"


def test_battery_discharge_and_charge(root: Path) -> None:
    sim = PhoneSimulation(root, default_profile())
    battery = "sys/class/power_supply/battery/"
    start = int(read(root, battery + "charge_counter"))
    sim.set_charging(False)
    assert read(root, battery + "status") == "Discharging"
    assert read(root, "sys/class/power_supply/usb/online") == "0"
    assert read(root, battery + "current_now") == "-80000"
    sim.busy(+1)
    sim.tick(1.0)
    assert read(root, battery + "current_now") == "-400000"
    assert int(read(root, battery + "charge_counter")) == start - round(400_000 / 3600)
    sim.busy(-1)
    sim.set_charging(True)
    sim.tick(1.0)
    assert read(root, battery + "status") == "Charging"
    assert int(read(root, battery + "current_now")) > 0
    assert int(read(root, battery + "charge_counter")) > start - 111


def test_main_runs_until_interrupted(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlab_standin", "--port", "0", "--root", str(tmp_path / "d")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        second = proc.stdout.readline()  # type: ignore[union-attr]
        assert first.startswith("stand-in phone 127.0.0.1:")
        assert second.startswith("connect with: adb connect 127.0.0.1:")
        assert (tmp_path / "d/system/bin/getprop").exists()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    assert os.path.isdir(tmp_path / "d/data/local/tmp")

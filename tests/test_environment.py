"""Tests of the environment snapshot: CPU lists, host facts, temperatures and versions."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
from pathlib import Path

import pytest

from benchlab import environment
from benchlab.environment import (
    capture_host_environment,
    cpu_features,
    package_versions,
    parse_cpu_list,
    read_temperatures,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0-2,5", {0, 1, 2, 5}),
        ("3", {3}),
        ("2-2", {2}),
        ("0,0,1", {0, 1}),
        (" 1 , 3-4 ", {1, 3, 4}),
        ("7,0-1", {0, 1, 7}),
        ("0,", {0}),
    ],
)
def test_parse_cpu_list(text: str, expected: set[int]) -> None:
    assert parse_cpu_list(text) == expected


@pytest.mark.parametrize("text", ["", ",", "a", "1-", "-1", "3-1", "0-x", "1.5", "0-2-4"])
def test_parse_cpu_list_rejects_malformed_lists(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_cpu_list(text)
    # The message quotes what was given, so a spec author can find it.
    assert repr(text) in str(info.value)


def test_capture_host_environment_describes_this_machine() -> None:
    env = capture_host_environment()
    expected_keys = {
        "hostname", "os", "kernel", "machine", "python", "cpu_model", "cpu_count",
        "cpus_allowed", "load_average", "governors", "frequencies_khz", "temperatures_c",
        "packages", "cpu_features",
    }
    assert expected_keys <= set(env)
    assert env["cpu_features"] == cpu_features(Path("/proc/cpuinfo").read_text())
    assert isinstance(env["cpu_count"], int) and env["cpu_count"] >= 1
    assert env["python"] == platform.python_version()
    assert env["cpus_allowed"] == sorted(os.sched_getaffinity(0))
    assert env["machine"] == platform.machine()
    assert env["cpu_model"] is None or isinstance(env["cpu_model"], str)
    load = env["load_average"]
    assert load is None or (len(load) == 3 and all(isinstance(x, float) for x in load))
    assert env["packages"]["torch"] == importlib.metadata.version("torch")
    assert env["packages"]["benchlab"] == importlib.metadata.version("benchlab")
    # It is stored with every result, so it must be plain JSON.
    assert json.loads(json.dumps(env)) == env


EPYC_FLAGS = "fpu vme sse sse2 ssse3 fma sse4_1 avx f16c avx2 sha_ni clzero"
SAPPHIRE_RAPIDS_FLAGS = ("fpu sse2 avx fma f16c avx2 avx512f avx512bw avx512vl avx512_vnni "
                         "avx_vnni avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8")


@pytest.mark.parametrize(("cpuinfo", "expected"), [
    (f"processor\t: 0\nflags\t\t: {EPYC_FLAGS}\n\nprocessor\t: 1\nflags\t: avx512f\n",
     ["avx", "avx2", "f16c", "fma"]),
    (f"flags\t: {SAPPHIRE_RAPIDS_FLAGS}\n",
     ["amx_bf16", "amx_int8", "amx_tile", "avx", "avx2", "avx512_bf16", "avx512_fp16",
      "avx512_vnni", "avx512bw", "avx512f", "avx512vl", "avx_vnni", "f16c", "fma"]),
    ("processor\t: 0\nFeatures\t: fp asimd evtstrm aes asimddp i8mm bf16 sve\n",
     ["asimd", "asimddp", "bf16", "i8mm", "sve"]),
    ("processor\t: 0\nmodel name\t: no flags line\n", []),
])
def test_cpu_features_keeps_the_flags_that_pick_kernels(cpuinfo: str, expected: list[str]) -> None:
    # Only the first CPU's line is read (the second one's avx512f is ignored).
    assert cpu_features(cpuinfo) == expected


def test_capture_does_not_import_runtimes() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from benchlab.environment import capture_host_environment; "
        "capture_host_environment(); "
        "print(sorted(m for m in ('torch', 'onnxruntime', 'onnx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_package_versions_reports_missing_distributions_as_none() -> None:
    versions = package_versions(("numpy", "benchlab-no-such-distribution"))
    assert versions == {
        "numpy": importlib.metadata.version("numpy"),
        "benchlab-no-such-distribution": None,
    }


def test_read_temperatures_on_this_machine() -> None:
    temps = read_temperatures()
    assert temps is None or (
        temps and all(isinstance(k, str) and isinstance(v, float) for k, v in temps.items())
    )


def _zone(root: Path, name: str, kind: str | None, temp: str | None) -> None:
    zone = root / name
    zone.mkdir(parents=True)
    if kind is not None:
        (zone / "type").write_text(kind + "\n")
    if temp is not None:
        (zone / "temp").write_text(temp + "\n")


def test_read_temperatures_from_a_sysfs_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fake /sys/class/thermal: millidegrees, a negative reading, and zones to skip.
    _zone(tmp_path, "thermal_zone0", "x86_pkg_temp", "45500")
    _zone(tmp_path, "thermal_zone1", None, "-2000")
    _zone(tmp_path, "thermal_zone2", "acpitz", None)  # no reading
    _zone(tmp_path, "thermal_zone3", "broken", "N/A")  # unreadable sensor
    (tmp_path / "cooling_device0").mkdir()
    monkeypatch.setattr(environment, "_THERMAL", tmp_path)
    assert read_temperatures() == {
        "x86_pkg_temp:thermal_zone0": 45.5,
        "thermal_zone1:thermal_zone1": -2.0,
    }


def test_read_temperatures_without_sensors_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(environment, "_THERMAL", tmp_path / "absent")
    assert read_temperatures() is None


def test_frequencies_and_governors_from_a_sysfs_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for cpu, governor, khz in (("cpu0", "performance", "2400000"), ("cpu1", "powersave", "800000")):
        freq = tmp_path / cpu / "cpufreq"
        freq.mkdir(parents=True)
        (freq / "scaling_governor").write_text(governor + "\n")
        (freq / "scaling_cur_freq").write_text(khz + "\n")
    (tmp_path / "cpufreq").mkdir()  # not a CPU directory
    monkeypatch.setattr(environment, "_SYS_CPU", tmp_path)
    env = capture_host_environment()
    assert env["governors"] == {"cpu0": "performance", "cpu1": "powersave"}
    assert env["frequencies_khz"] == {"cpu0": 2400000, "cpu1": 800000}

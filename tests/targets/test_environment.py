"""Tests of the environment snapshot: CPU lists, host facts, temperatures and versions."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
from pathlib import Path

import pytest

from benchlab.targets.environment import (
    capture_host_environment,
    cpu_features,
    package_versions,
    parse_cpu_list,
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
    assert set(env) == {
        "hostname", "os", "kernel", "machine", "python", "cpu_model", "cpu_count",
        "cpu_features", "int8_instructions", "cpus_allowed", "packages", "memory_layout",
    }
    assert env["cpu_features"] == cpu_features(Path("/proc/cpuinfo").read_text())
    assert isinstance(env["cpu_count"], int) and env["cpu_count"] >= 1
    assert env["python"] == platform.python_version()
    assert env["cpus_allowed"] == sorted(os.sched_getaffinity(0))
    assert env["machine"] == platform.machine()
    assert env["cpu_model"] is None or isinstance(env["cpu_model"], str)
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
        "import sys; from benchlab.targets.environment import capture_host_environment; "
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




def test_the_memory_layout_settings_are_recorded_as_the_kernel_has_them() -> None:
    layout = capture_host_environment()["memory_layout"]
    aslr = Path("/proc/sys/kernel/randomize_va_space")
    assert layout["aslr"] == (aslr.read_text().strip() if aslr.exists() else None)
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists():
        assert f"[{layout['transparent_hugepages']}]" in thp.read_text()
    else:
        assert layout["transparent_hugepages"] is None

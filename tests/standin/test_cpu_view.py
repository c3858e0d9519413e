"""The ARM phone's CPU as its aarch64 programs read it: per process, not per command text.

A static aarch64 program, compiled here, opens ``/proc/cpuinfo`` and the CPU sysfs by paths
compiled into it (no command text names them, so the stand-in's textual mapping cannot reach
them) and prints what it reads beside what the emulated core itself answers (``mrs midr_el1``,
``getauxval``). The host's own files must be the host's before and after.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab_standin import StandinPhone, arm_profile, default_profile
from benchlab_standin.adbserver import AdbServer
from benchlab_standin.emulation import aarch64_ready

from benchlab.targets.armcpu import hwcap_features

# Every path is a C literal: what the program opens, no shell ever sees.
_PROGRAM = r"""
#include <stdio.h>
#include <sys/auxv.h>
static const char *paths[] = {
  "/proc/cpuinfo", "/sys/devices/system/cpu/possible", "/sys/devices/system/cpu/present",
  "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1",
  "/sys/devices/system/cpu/cpu1/cache/index2/shared_cpu_list",
  "/sys/devices/system/cpu/cpu1/cache/index2/size", "/sys/devices/system/cpu/cpu0/cache/index0/type",
  "/sys/devices/system/cpu/cpu3/topology/core_siblings_list",
  "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", 0};
int main(void) {
  unsigned long midr;
  __asm__ volatile("mrs %0, midr_el1" : "=r"(midr));
  printf("core midr 0x%016lx\ncore hwcap %lu %lu\n", midr, getauxval(AT_HWCAP),
         getauxval(AT_HWCAP2));
  for (int i = 0; paths[i]; i++) {
    char line[512];
    FILE *f = fopen(paths[i], "r");
    if (!f) { printf("%s missing\n", paths[i]); continue; }
    while (fgets(line, sizeof line, f)) printf("%s %s", paths[i], line);
    fclose(f);
  }
  return 0;
}
"""
_SYS = "/sys/devices/system/cpu"


def _host_view() -> tuple[str, str, list[str]]:
    """The host's cpuinfo (without the clock, which moves), CPU list, and the mounts on them."""
    cpuinfo = "".join(line for line in Path("/proc/cpuinfo").read_text().splitlines(True)
                      if not line.startswith("cpu MHz"))
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return cpuinfo, Path(f"{_SYS}/possible").read_text(), [
        m for m in mounts if m in ("/proc/cpuinfo", _SYS)]


@pytest.fixture
def a53_phone(tmp_path: Path) -> Iterator[StandinPhone]:
    """The Cortex-A53 stand-in phone (no adb server: the test brings its own)."""
    why = aarch64_ready()
    if why:
        pytest.skip(why)
    with StandinPhone(tmp_path / "a53", profile=arm_profile("cortex-a53")) as phone:
        yield phone


def test_an_aarch64_program_reads_the_phones_cpu_by_its_own_open(
        a53_phone: StandinPhone, adb_server: AdbServer, tmp_path: Path) -> None:
    if a53_phone.sandbox.cpu_view is None:
        pytest.skip("no private mount namespace here (not root): the phone says why in its log")
    compiler = shutil.which("aarch64-linux-gnu-gcc")
    if compiler is None:
        pytest.skip("no aarch64 cross compiler (apt-get install gcc-aarch64-linux-gnu)")
    (tmp_path / "view.c").write_text(_PROGRAM)
    subprocess.run([compiler, "-static", "-O1", "-o", str(tmp_path / "view"),
                    str(tmp_path / "view.c")], check=True, capture_output=True, timeout=120)
    before = _host_view()
    assert not before[2], "the host has a mount on its CPU files before the test"
    adb_server.connect(a53_phone.serial)
    adb = ("-s", a53_phone.serial)
    adb_server.run(*adb, "push", str(tmp_path / "view"), "/data/local/tmp/view", check=True)
    out = adb_server.run(*adb, "shell", "chmod +x /data/local/tmp/view && /data/local/tmp/view",
                         check=True).stdout
    read: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        read.setdefault(key, []).append(value)
    features = [v.split(":", 1)[1].split() for v in read["/proc/cpuinfo"]
                if v.startswith("Features")]
    hwcap, hwcap2 = (int(word) for word in read["core"][1].split()[1:])
    # An ARM kernel's file, one block per phone CPU, listing what the core itself announces.
    assert len(features) == 4
    assert all(f == hwcap_features(hwcap, hwcap2) for f in features)
    assert "CPU part\t: 0xd03" in read["/proc/cpuinfo"] and "asimddp" not in features[0]
    assert not any("model name" in v for v in read["/proc/cpuinfo"])
    # The sysfs MIDR is what the core answers to mrs (r0p4 Cortex-A53, QEMU's model).
    assert read[f"{_SYS}/cpu0/regs/identification/midr_el1"] == [
        read["core"][0].split()[1]] == ["0x00000000410fd034"]
    for name in ("possible", "present", "online"):
        assert read[f"{_SYS}/{name}"] == ["0-3"]
    assert read[f"{_SYS}/cpu1/cache/index2/shared_cpu_list"] == ["0-3"]
    assert read[f"{_SYS}/cpu1/cache/index2/size"] == ["512K"]
    assert read[f"{_SYS}/cpu0/cache/index0/type"] == ["Data"]
    assert read[f"{_SYS}/cpu3/topology/core_siblings_list"] == ["0-3"]
    assert read[f"{_SYS}/cpu0/cpufreq/cpuinfo_max_freq"] == ["1401600"]
    # `adb shell cat /proc/cpuinfo`: the same file, whether the text is mapped or not.
    shown = adb_server.run(*adb, "shell", "cat /proc/cpuinfo </dev/null", check=True).stdout
    assert shown.replace("\r\n", "\n") == (a53_phone.root / "proc/cpuinfo").read_text()
    # The host's files are the host's, and no mount leaked into its namespace.
    assert _host_view() == before


def test_without_a_private_namespace_the_phone_says_so_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        ) -> None:
    why = aarch64_ready()
    if why:
        pytest.skip(why)
    monkeypatch.setattr("benchlab_standin.adbd.cannot_mount_views",
                        lambda *_: "a private mount namespace needs root")
    with caplog.at_level(logging.WARNING, "benchlab_standin"), StandinPhone(
            tmp_path / "a53", profile=arm_profile("cortex-a53")) as phone:
        said = [r.getMessage() for r in caplog.records if "host's /proc/cpuinfo" in r.getMessage()]
        logcat = (phone.root / "data/logcat.txt").read_text()
        argv = phone.sandbox.argv("cat /proc/cpuinfo")
    assert len(said) == 1 and said[0].endswith("a private mount namespace needs root")
    assert "W standin : aarch64 programs read the host's /proc/cpuinfo" in logcat
    # Today's behaviour: the command text alone is mapped into the sandbox.
    assert argv == ["/bin/sh", "-c", f"cat {phone.root}/proc/cpuinfo"]


def test_a_phone_without_an_emulated_core_runs_commands_as_they_were(tmp_path: Path) -> None:
    with StandinPhone(tmp_path / "phone", profile=default_profile()) as phone:
        assert phone.sandbox.cpu_view is None
        assert phone.sandbox.argv("true") == ["/bin/sh", "-c", "true"]

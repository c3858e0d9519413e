"""The ssh probe's CPU reading (targets/boardcpu.py) on the lines a board prints: x86-64, an ARM
board, an ARM board under user-mode emulation, and one whose auxiliary vector is unreadable.
The real reading on emulated boards is in test_arm_board.py."""

from __future__ import annotations

from benchlab.schema.result import EnvKey
from benchlab.targets.boardcpu import board_cpu

# od -An -tx8 on /proc/self/auxv: (type, value) words; 0x10 AT_HWCAP, 0x1a AT_HWCAP2.
A76_AUXV = "0000000000000006 0000000000001000 0000000000000010 0000000000119ffb " \
           "000000000000001a 0000000000000000 0000000000000000 0000000000000000"


def test_an_x86_board_reads_its_flags() -> None:
    facts = board_cpu({"machine": "x86_64", "cpu_flags": "fpu avx2 fma avx512f avx512_vnni"})
    assert facts[EnvKey.CPU_FEATURES] == ["avx2", "avx512_vnni", "avx512f", "fma"]
    assert facts[EnvKey.INT8_INSTRUCTIONS] == "AVX-512 VNNI (VPDPBUSD)"
    assert EnvKey.EMULATED not in facts and "unread" not in facts


def test_an_arm_board_is_read_from_its_hwcaps_and_midr() -> None:
    facts = board_cpu({"machine": "aarch64", "shell_exe": "/usr/bin/bash", "auxv": A76_AUXV,
                       "midr": "0x00000000414fd0b1", "cpu_flags": "fp asimd"})
    assert facts["cpu_core"] == facts[EnvKey.CPU_MODEL] == "Cortex-A76"
    assert facts[EnvKey.INT8_INSTRUCTIONS] == "dot product (SDOT)"
    assert "asimddp" in facts[EnvKey.CPU_FEATURES]
    assert EnvKey.EMULATED not in facts and "unread" not in facts


def test_user_mode_emulation_is_said_and_the_hosts_cpuinfo_is_not_believed() -> None:
    facts = board_cpu({"machine": "aarch64", "shell_exe": "/usr/bin/qemu-aarch64-static",
                       "cpuinfo_x86": "1", "cpu_model": "AMD EPYC", "auxv": A76_AUXV})
    assert "QEMU user mode (/usr/bin/qemu-aarch64-static)" in facts[EnvKey.EMULATED]
    assert facts[EnvKey.CPU_MODEL] is None  # not the host's "AMD EPYC", and no MIDR to name it
    assert facts[EnvKey.INT8_INSTRUCTIONS] == "dot product (SDOT)"
    assert any("/proc/cpuinfo" in why for why in facts["unread"])
    assert any("MIDR_EL1" in why for why in facts["unread"])
    # Without the emulator's name, an x86-64 cpuinfo under aarch64 still gives it away.
    other = board_cpu({"machine": "aarch64", "cpuinfo_x86": "1", "auxv": A76_AUXV})
    assert other[EnvKey.EMULATED].startswith("user-mode emulation")


def test_an_unreadable_auxv_falls_back_on_cpuinfo_and_says_so() -> None:
    facts = board_cpu({"machine": "aarch64", "cpu_flags": "fp asimd asimddp i8mm"})
    assert facts[EnvKey.INT8_INSTRUCTIONS] == "i8mm (SMMLA)"
    assert facts["unread"] == ["the hwcaps (/proc/self/auxv could not be read)"]

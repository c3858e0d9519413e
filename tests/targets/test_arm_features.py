"""A device's ARM CPU features decide, before anything is pushed, whether a runner's library
runs there (LiteRT-LM's aarch64 library needs ARMv8.3's LDAPR). The emulated phones' end-to-end
case is tests/targets/test_arm_phone.py's; here the reading and the decision, on a fake target."""

from __future__ import annotations

from benchlab.frameworks.tflite.native import LRCPC_MISSING
from benchlab.harness.devicefit import ArmFeatures, on_this_arm_cpu
from benchlab.plugins import load_framework
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.armcpu import parse_arm_features

A76 = ("processor\t: 0\nBogoMIPS\t: 38.40\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 "
       "crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU part\t: 0xd0b\n")
A53 = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\n"


class Phone:
    """A target that lists its features and counts how often it was asked."""

    def __init__(self, cpuinfo: str) -> None:
        self.cpuinfo = cpuinfo
        self.asked = 0

    def arm_features(self) -> frozenset[str] | None:
        self.asked += 1
        return parse_arm_features(self.cpuinfo)


def test_the_features_line_is_read_and_a_file_without_one_says_nothing() -> None:
    assert {"lrcpc", "asimddp", "fp"} <= parse_arm_features(A76)  # type: ignore[operator]
    assert "lrcpc" not in parse_arm_features(A53)  # type: ignore[operator]
    assert parse_arm_features("processor : 0\nflags : fpu avx2\n") is None  # x86-64's
    assert parse_arm_features("") is None  # a vendor's cut-down file


def test_litert_s_runner_is_refused_on_a_cpu_without_lrcpc_and_the_phone_is_asked_once() -> None:
    tflite = load_framework("tflite")
    configs = [FrameworkConfig("tflite", {}), FrameworkConfig("tflite", {"xnnpack": False})]
    a53 = Phone(A53)
    features = ArmFeatures(a53)
    assert on_this_arm_cpu(tflite, "", configs, features) == ([], [LRCPC_MISSING])
    assert on_this_arm_cpu(tflite, "", configs, features)[1] == [LRCPC_MISSING]
    assert a53.asked == 1  # read once per plan
    assert on_this_arm_cpu(tflite, "", configs, ArmFeatures(Phone(A76))) == (configs, [])
    # The Python binding where the phone has Python: no runner of benchlab's, nothing asked.
    with_python = Phone(A53)
    assert on_this_arm_cpu(tflite, "/data/python3", configs[:1],
                           ArmFeatures(with_python)) == (configs[:1], [])
    assert with_python.asked == 0
    # Unlisted features are unknown: the job's own first command decides (NEEDS_LRCPC).
    assert on_this_arm_cpu(tflite, "", configs, ArmFeatures(Phone(""))) == (configs, [])


def test_a_runner_that_needs_no_feature_never_reads_the_device() -> None:
    phone = Phone(A53)
    configs = [FrameworkConfig("onnxruntime", {})]
    assert on_this_arm_cpu(load_framework("onnxruntime"), "", configs,
                           ArmFeatures(phone)) == (configs, [])
    assert phone.asked == 0

"""A device's ARM CPU features decide, before anything is pushed, which build of a runner runs
there (LiteRT-LM's aarch64 library needs ARMv8.3's LDAPR; an ARMv8.0 core runs the runner over
Debian's TensorFlow Lite, which has no XNNPACK). The emulated phones' end-to-end case is
tests/targets/test_arm_phone.py's; here the reading and the decision, on a fake target."""

from __future__ import annotations

from benchlab.frameworks.tflite.native import C_RUNNER, NEEDS_LRCPC, XNNPACK_MISSING
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


def test_a_cpu_without_lrcpc_runs_debians_tflite_and_refuses_xnnpack_asked_once() -> None:
    tflite = load_framework("tflite")
    plain, kernels, xnnpack = (FrameworkConfig("tflite", {}),
                               FrameworkConfig("tflite", {"xnnpack": False}),
                               FrameworkConfig("tflite", {"xnnpack": True}))
    a53 = Phone(A53)
    features = ArmFeatures(a53)
    # The A53 runs the runner over Debian's library: unset or false XNNPACK runs, true is one
    # line with its reason, decided before anything is exported or pushed.
    assert on_this_arm_cpu(tflite, "", [plain, kernels, xnnpack], features) == (
        [plain, kernels], [XNNPACK_MISSING])
    assert on_this_arm_cpu(tflite, "", [xnnpack], features)[1] == [XNNPACK_MISSING]
    assert a53.asked == 1  # read once per plan
    assert [build.tag for build in C_RUNNER.builds] == ["litert", "litert-debian"]
    assert C_RUNNER.build_for(features.get)[0] is C_RUNNER.builds[1]
    # The A76 has lrcpc: LiteRT-LM's library, XNNPACK included.
    a76 = ArmFeatures(Phone(A76))
    assert on_this_arm_cpu(tflite, "", [plain, xnnpack], a76) == ([plain, xnnpack], [])
    assert C_RUNNER.build_for(a76.get)[0] is C_RUNNER.builds[0]
    # The Python binding where the phone has Python: no runner of benchlab's, nothing asked.
    with_python = Phone(A53)
    assert on_this_arm_cpu(tflite, "/data/python3", [xnnpack],
                           ArmFeatures(with_python)) == ([xnnpack], [])
    assert with_python.asked == 0
    # Unlisted features (x86-64's file, a cut-down one) are unknown: LiteRT-LM's build, whose
    # job's own first command decides (NEEDS_LRCPC).
    unlisted = ArmFeatures(Phone(""))
    assert on_this_arm_cpu(tflite, "", [plain, xnnpack], unlisted) == ([plain, xnnpack], [])
    assert C_RUNNER.build_for(unlisted.get) == (C_RUNNER.builds[0], None)
    assert C_RUNNER.builds[0].guards() == [NEEDS_LRCPC]
    assert C_RUNNER.builds[1].guards() == []


def test_a_runner_that_needs_no_feature_never_reads_the_device() -> None:
    phone = Phone(A53)
    configs = [FrameworkConfig("onnxruntime", {})]
    assert on_this_arm_cpu(load_framework("onnxruntime"), "", configs,
                           ArmFeatures(phone)) == (configs, [])
    assert phone.asked == 0

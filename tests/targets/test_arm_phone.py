"""The ARM stand-in phone, through the real adb client: aarch64 code on an emulated core
(QEMU user mode, a CPU model per phone), no Python, and llama.cpp built by benchlab for it;
ExecuTorch and ONNX Runtime through benchlab's runners in their bundles with glibc, kept on
the phone by content.

The runners are built before the tests start (tests/prebuild.py: about two minutes on two
cores the first time on a machine, docs/performance.md), into benchlab's artifact cache, which
the run's shared cache links to; every test and worker finds them there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from prebuild import prepared
from typer.testing import CliRunner
from usermodels.nets import MYNET, write
from benchlab_standin import StandinPhone, arm_profile
from benchlab_standin.adbserver import AdbServer, isolated_adb_server

import benchlab
from benchlab.cli.commands import app
from benchlab.devicetools import (BuiltTools, build_llama_tools, device_tools_dir,
                                  elf_architecture, prepare_device_tools)
from benchlab.errors import InfrastructureError
from benchlab.devicetools.etrunner import ET_LIBRARIES, ET_RUNNER, ET_VERSION, build_et_runner
from benchlab.devicetools.ortrunner import ORT_LIBRARY, ORT_RUNNER, ORT_VERSION, build_ort_runner
from benchlab.devicetools.glibcbundle import GlibcBundle, elf_dependencies, glibc_bundle
from benchlab.devicetools.litertrunner import (DEBIAN_TFLITE, LITERT_LIBRARY, LITERT_RUNNER,
                                               build_debian_litert_runner, build_litert_runner,
                                               litert_runner_tool)
from benchlab.frameworks.tflite.native import LRCPC_MISSING, NEEDS_LRCPC, XNNPACK_MISSING
from benchlab.devicetools.llamacpp import RUNNER
from benchlab.harness.devicefit import export_readers
from benchlab.harness.keptfiles import KEPT_FOLDER
from benchlab.runner.generate import load_generative_reference, save_generative_reference
from benchlab.schema.generation import Generation
from benchlab.schema.result import EnvKey, Metric, Status, metric_key
from benchlab.targets.adb import AdbTarget
from benchlab.targets.armcpu import arm_cpu
from benchlab.targets.base import RunRequest
from benchlab.spec.artifacts import ArtifactCache
from benchlab.zoo import ZOO, export_models

pytestmark = [pytest.mark.arm, pytest.mark.slow]

GENERATION = [Generation(prompt_tokens=16, new_tokens=8)]
# One thread: under emulation a second llama.cpp thread spins while it waits, a host core
# burnt on emulated polling.
QUICK = benchlab.TestOverrides(repeat=1, iter=2, warmup=0, min_time=0.0, threads=1)
#: Tokens of the reference text the phone measures perplexity on in these tests: the zoo's
#: first 64 of 512. The runner's pass over the text (every position's logits) was 60-75% of its
#: emulated time at 512; nothing asserted here depends on the text's length.
SHORT_TEXT = 64


@pytest.fixture(scope="module")
def arm_phones(tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[AdbServer, dict[str, StandinPhone]]]:
    """A Cortex-A53 phone and a Cortex-A76 one on an adb server of their own."""
    if shutil.which("adb") is None:
        pytest.skip("the adb client is not installed (apt-get install adb)")
    root = tmp_path_factory.mktemp("arm")
    phones: dict[str, StandinPhone] = {}
    try:
        for cpu in ("cortex-a53", "cortex-a76"):
            phones[cpu] = StandinPhone(root / cpu, profile=arm_profile(cpu)).start()
    except RuntimeError as exc:
        for phone in phones.values():
            phone.stop()
        pytest.skip(str(exc))
    try:
        with isolated_adb_server() as server:
            for phone in phones.values():
                server.connect(phone.serial)
            yield server, phones
    finally:
        for phone in phones.values():
            phone.stop()


@pytest.fixture(scope="module")
def arm_tools(zoo_cache_dir: Path) -> BuiltTools:
    """benchlab's llama.cpp runner for aarch64, built before the tests (tests/prebuild.py),
    in the cache the test sweeps use."""
    prepared("phone-tools", zoo_cache_dir)
    return build_llama_tools("aarch64", device_tools_dir(zoo_cache_dir))


@pytest.fixture(scope="module")
def llama_15m_spec(llama_15m_export: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A spec of the zoo's llama_15m GGUF files (fp32 and q8_0) and its reference, its
    perplexity text cut to :data:`SHORT_TEXT` tokens: the prompt, the prompt's logits and the
    greedy continuation (what SQNR and token agreement judge) are the zoo's own."""
    files = llama_15m_export.files  # type: ignore[attr-defined]
    folder = tmp_path_factory.mktemp("llama_15m_spec")
    reference = load_generative_reference(str(files["reference"]))
    save_generative_reference(folder / "reference.npz",
                              replace(reference, text=reference.text[:SHORT_TEXT]))
    path = folder / "llama_15m.json"
    path.write_text(json.dumps({
        "model": {"name": "llama_15m", "format": "gguf", "files": {
            "gguf": {"location": str(files["gguf"]), "md5": None},
            "gguf_q8_0": {"location": str(files["gguf_q8_0"]), "md5": None},
            "reference": {"location": "reference.npz", "md5": None}}},
        "tests": [{"identifier": "generate", "generate": {
            "prompt_tokens": GENERATION[0].prompt_tokens,
            "new_tokens": GENERATION[0].new_tokens}}]}))
    return path


def _target(server: AdbServer, phone: StandinPhone) -> str:
    return f"adb:serial={phone.serial},server_port={server.port}"


def test_the_arm_phone_is_an_arm64_phone_without_python(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]]) -> None:
    server, phones = arm_phones
    target = AdbTarget(phones["cortex-a53"].serial, server_port=server.port)
    assert target.properties()["ro.product.cpu.abi"] == "arm64-v8a"
    said = target.shell("command -v python3 python || echo no-python").stdout.strip()
    assert said == "no-python"
    described = target.describe()
    assert described[EnvKey.EMULATED].startswith("QEMU (ro.boot.qemu=1)")
    assert described[EnvKey.HOSTNAME].endswith("(emulated)")
    # The kernel's view of the cores, as the stand-in writes it: no dot product on the A53.
    cpuinfo = target.shell("cat /proc/cpuinfo").stdout
    assert "CPU part\t: 0xd03" in cpuinfo and "asimddp" not in cpuinfo


def test_pushed_aarch64_code_runs_on_each_phones_own_core(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], arm_tools: BuiltTools,
        tmp_path: Path) -> None:
    server, phones = arm_phones
    runner = arm_tools.program(RUNNER)
    assert elf_architecture(runner) == "aarch64"
    seen = {}
    for cpu, phone in phones.items():
        target = AdbTarget(phone.serial, server_port=server.port)
        workdir = target.make_workdir("cpu")
        pushed = target.push(runner, workdir)
        result = target.run(RunRequest(argv=f"chmod +x {pushed} && {pushed} --cpu",
                                       cwd=workdir, timeout=120))
        target.remove_workdir(workdir)
        assert result.returncode == 0, result.stderr
        line = next(x for x in result.stdout.splitlines() if x.startswith("BENCHLAB_DEVICE "))
        seen[cpu] = arm_cpu(json.loads(line.removeprefix("BENCHLAB_DEVICE "))["cpu"])
    assert seen["cortex-a53"]["core"] == "Cortex-A53"
    assert "asimddp" not in seen["cortex-a53"]["features"]
    assert seen["cortex-a53"]["int8_instructions"] == "NEON without dot product"
    assert seen["cortex-a76"]["core"] == "Cortex-A76"
    assert "asimddp" in seen["cortex-a76"]["features"]
    assert seen["cortex-a76"]["int8_instructions"] == "dot product (SDOT)"
    # Under Debian's QEMU, the emulator's own /proc/cpuinfo is the host's: the reason the
    # runner reads hwcaps and MIDR instead.
    host = subprocess.run(["qemu-aarch64-static", "-cpu", "cortex-a53", str(runner), "--cpu"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert '"midr":1091555380' in host.stdout  # 0x410fd034: ARM, part 0xd03, the A53


def test_llama_15m_runs_on_the_arm_phone_as_benchlab_built_it(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], arm_tools: BuiltTools,
        llama_15m_spec: Path, zoo_cache_dir: Path, tmp_path: Path) -> None:
    server, phones = arm_phones
    phone = phones["cortex-a53"]
    results = benchlab.run(
        [llama_15m_spec], frameworks=["llamacpp:precision=fp32"],
        target=_target(server, phone),
        overrides=benchlab.TestOverrides(repeat=1, iter=2, warmup=0, min_time=0.0,
                                         threads=1, profile_ops=True),
        cache_dir=zoo_cache_dir, db=tmp_path / "arm.db")
    by_precision = {r.identity.framework_config.get("precision", "fp32"): r for r in results}
    assert set(by_precision) == {"fp32"}
    for result in by_precision.values():
        assert result.status is Status.OK, result.error
        summaries = result.summaries
        assert summaries[metric_key("NET", Metric.TTFT)].p50 > 0
        assert summaries[metric_key("NET", Metric.TPOT)].p50 > 0
        # Per-operator rows from the device, in the same table as a host run's.
        assert summaries[metric_key("MUL_MAT", Metric.LATENCY)].p50 > 0
        details, env = result.details, result.environment
        assert details["tool"] == RUNNER
        assert details["device_cpu"]["core"] == "Cortex-A53"
        assert "NEON = 1" in details["kernels"]
        assert details["device_build"]["architecture"] == "aarch64"
        assert details["device_build"]["key"] == arm_tools.key  # built once, reused
        # The code it brought onto the phone: the runner benchlab built, statically linked.
        built = details["native_files"]["built"]
        assert list(built) == [RUNNER] and built[RUNNER] > 0
        assert summaries[metric_key("NET", Metric.CODE_SIZE)].p50 == built[RUNNER] / 2**20
        assert env[EnvKey.ABI] == "arm64-v8a" and env[EnvKey.EMULATED]
        assert result.identity.device_label.endswith("(emulated)")
    fp32 = by_precision["fp32"].summaries
    # The device's fp32 answer against the host's transformers reference: its greedy tokens
    # (teacher-forced) and its prefill logits.
    assert fp32[metric_key("NET", Metric.TOKEN_AGREEMENT)].p50 == 1.0
    assert fp32[metric_key("NET", Metric.SQNR)].p50 > 60
    # ...and its perplexity on the reference's text (SHORT_TEXT tokens here).
    assert fp32[metric_key("NET", Metric.PERPLEXITY)].p50 > 1
    # Nothing is left on the phone: every job's workdir was removed.
    leftovers = list((phone.root / "data/local/tmp/benchlab").glob("benchlab-*"))
    assert leftovers == []


def test_a_users_gguf_file_and_a_broken_one_on_the_arm_phone(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], arm_tools: BuiltTools,
        llama_15m_export: object, zoo_cache_dir: Path, tmp_path: Path) -> None:
    server, phones = arm_phones
    files = llama_15m_export.files  # type: ignore[attr-defined]
    mine = Path(shutil.copy(files["gguf_q4_k_m"], tmp_path / "my-model.gguf"))
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(mine.read_bytes()[: mine.stat().st_size // 3])
    common = dict(target=_target(server, phones["cortex-a76"]), generations=GENERATION,
                  overrides=QUICK, cache_dir=zoo_cache_dir)
    ok = benchlab.run(model=str(mine), db=tmp_path / "mine.db", **common)
    (result,) = ok
    assert result.status is Status.OK, result.error
    assert result.identity.model_name == "my-model"
    assert result.summaries[metric_key("NET", Metric.TPOT)].p50 > 0
    assert result.details["device_cpu"]["core"] == "Cortex-A76"
    # A file llama.cpp cannot load fails its job with the runner's reason.
    (failed,) = benchlab.run(model=str(broken), db=tmp_path / "broken.db", **common)
    assert failed.status is Status.FAILED
    assert "cannot load" in (failed.stderr_tail or "") + (failed.error or "")


def test_a_binary_for_another_cpu_is_refused_before_anything_is_pushed(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], onnx_file: Path,
        tmp_path: Path) -> None:
    server, phones = arm_phones
    phone = phones["cortex-a53"]
    x86 = Path(shutil.copy("/bin/true", tmp_path / "onnxruntime_perf_test"))
    assert elf_architecture(x86) == "x86_64"
    (result,) = benchlab.run(model=str(onnx_file), inputs=["1x8"],
                             frameworks=[f"onnxruntime:binary={x86}"],
                             target=_target(server, phone), overrides=QUICK,
                             cache_dir=tmp_path / "cache", db=tmp_path / "r.db")
    assert result.status is Status.USER_ERROR
    assert "built for x86_64" in result.error and "arm64-v8a (aarch64)" in result.error
    pushed = [p.name for p in (phone.root / "data").rglob("*") if p.is_file()]
    assert "onnxruntime_perf_test" not in pushed and onnx_file.name not in pushed


def test_outputs_come_back_from_the_phone_as_arrays_and_tensors(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], arm_tools: BuiltTools,
        llama_15m_spec: Path, zoo_cache_dir: Path) -> None:
    server, phones = arm_phones
    # q8_0: llama.cpp's int8 arithmetic on ARM, against the fp32 reference (x86-64's AVX2
    # kernels give 33.7 dB here, docs/performance.md §17).
    got = benchlab.outputs(llama_15m_spec, "llamacpp:precision=q8_0",
                           target=_target(server, phones["cortex-a76"]), cache_dir=zoo_cache_dir)
    (logits,) = got.outputs
    (reference,) = got.reference or []
    assert logits.shape == reference.shape == (len(got.inputs["tokens"]), 8192)
    assert logits.dtype == np.float32
    assert 25 < got.errors["sqnr"] < 45 and got.errors["token_agreement"] > 0.9
    assert got.errors["perplexity"] > 1  # on the reference's text, through the phone's answers
    (tensor,) = got.as_torch()
    assert tuple(tensor.shape) == logits.shape


def test_a_runner_that_outruns_its_timeout_is_killed_on_the_phone(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], arm_tools: BuiltTools,
        llama_15m_export: object, zoo_cache_dir: Path, tmp_path: Path) -> None:
    server, phones = arm_phones
    mine = Path(shutil.copy(llama_15m_export.files["gguf"],  # type: ignore[attr-defined]
                            tmp_path / "slow.gguf"))
    # 1500 new tokens under emulation take over a minute; the timeout is 5 s.
    (result,) = benchlab.run(model=str(mine), target=_target(server, phones["cortex-a53"]),
                             generations=[Generation(prompt_tokens=16, new_tokens=1500)],
                             overrides=benchlab.TestOverrides(repeat=1, iter=1, warmup=0,
                                                              min_time=0.0, timeout=5.0),
                             cache_dir=zoo_cache_dir, db=tmp_path / "r.db")
    assert result.status is Status.TIMEOUT, (result.status, result.error)
    left = subprocess.run(["pgrep", "-f", "slow.gguf"], capture_output=True, text=True)
    assert left.stdout.strip() == "", "the runner outlived its job on the phone"


def test_prepare_finds_the_runner_the_run_built_and_names_a_missing_compiler(
        arm_tools: BuiltTools, zoo_cache_dir: Path) -> None:
    """`benchlab prepare` and `python -m benchlab_standin --prepare` (which the suite ran
    before its tests, tests/prebuild.py) find the runner in the cache, saying where."""
    from typer.testing import CliRunner

    from benchlab.cli.commands import app

    ready = CliRunner().invoke(app, ["prepare", "--arch", "aarch64", "--cache-dir",
                                     str(zoo_cache_dir)], env={"COLUMNS": "60"})
    assert ready.exit_code == 0, ready.output
    assert (f"llama.cpp's runner ({RUNNER}) for aarch64: found in the cache "
            f"({arm_tools.program(RUNNER)})") in ready.output
    standin = subprocess.run(
        [sys.executable, "-m", "benchlab_standin", "--prepare", "--only", "phone-tools",
         "--cache-dir", str(zoo_cache_dir)], capture_output=True, text=True, timeout=300,
        check=False)
    assert standin.returncode == 0, standin.stdout
    assert "for the ARM phone (aarch64): found in the cache" in standin.stdout
    assert "prepared 1 of 1 in" in standin.stdout
    with pytest.raises(InfrastructureError, match="no C\\+\\+ compiler builds for sparc64"):
        prepare_device_tools("sparc64", zoo_cache_dir)


# --- ExecuTorch on the phone: benchlab's runner in a bundle with glibc (issue 64) -----------

ET_FP32 = "executorch:delegate=xnnpack"
ET_INT8 = "executorch:delegate=xnnpack,precision=int8"
ORT_FP32 = "onnxruntime:precision=fp32"
ORT_INT8 = "onnxruntime:precision=int8"


@pytest.fixture(scope="module")
def et_bundle(zoo_cache_dir: Path) -> GlibcBundle:
    """benchlab's ExecuTorch runner for aarch64 in its bundle with glibc, as the run prepared
    them (tests/prebuild.py: ``arm-et-runner``), and the host's runner (``host-et-runner``),
    which answers the host's int8 reference."""
    prepared("arm-et-runner", zoo_cache_dir)
    prepared("host-et-runner", zoo_cache_dir)
    tools = build_et_runner("aarch64", device_tools_dir(zoo_cache_dir))
    return glibc_bundle(tools, ET_RUNNER, device_tools_dir(zoo_cache_dir))


@pytest.fixture(scope="module")
def ort_bundle(zoo_cache_dir: Path) -> GlibcBundle:
    """benchlab's ONNX Runtime runner for aarch64 in its bundle with glibc (the runner as the
    run prepared it for the board: ``arm-ort-runner``)."""
    prepared("arm-ort-runner", zoo_cache_dir)
    tools = build_ort_runner("aarch64", device_tools_dir(zoo_cache_dir))
    return glibc_bundle(tools, ORT_RUNNER, device_tools_dir(zoo_cache_dir))


@pytest.fixture(scope="module")
def litert_bundle(zoo_cache_dir: Path) -> GlibcBundle:
    """benchlab's LiteRT runner for aarch64 in its bundle with glibc, as the run prepared it
    (``arm-litert-runner``)."""
    prepared("arm-litert-runner", zoo_cache_dir)
    tools = build_litert_runner("aarch64", device_tools_dir(zoo_cache_dir))
    return glibc_bundle(tools, LITERT_RUNNER, device_tools_dir(zoo_cache_dir))


def _debian_litert(zoo_cache_dir: Path) -> tuple[BuiltTools, GlibcBundle]:
    """benchlab's LiteRT runner over Debian's TensorFlow Lite for aarch64 and its bundle, as
    the run prepared them (``arm-litert-debian-runner``)."""
    prepared("arm-litert-debian-runner", zoo_cache_dir)
    tools = build_debian_litert_runner("aarch64", device_tools_dir(zoo_cache_dir))
    return tools, glibc_bundle(tools, LITERT_RUNNER, device_tools_dir(zoo_cache_dir))


def test_the_bundles_hold_what_the_runners_load_and_glibc_from_debians_cross_packages(
        et_bundle: GlibcBundle, ort_bundle: GlibcBundle, litert_bundle: GlibcBundle,
        zoo_cache_dir: Path) -> None:
    needed, interpreter = elf_dependencies(et_bundle.files[ET_RUNNER])
    assert interpreter == "/lib/ld-linux-aarch64.so.1" and "libexecutorch.so" in needed
    assert et_bundle.loader == "ld-linux-aarch64.so.1"
    # What the runner and the wheel's libraries NEED, transitively, and nothing else.
    assert set(et_bundle.files) == {ET_RUNNER, *ET_LIBRARIES, "ld-linux-aarch64.so.1",
                                    "libc.so.6", "libm.so.6", "libstdc++.so.6",
                                    "libgcc_s.so.1", "libdl.so.2", "libpthread.so.0"}
    assert {elf_architecture(p) for p in et_bundle.files.values()} == {"aarch64"}
    assert 12 * 2**20 < et_bundle.size < 24 * 2**20
    assert et_bundle.argv("/d", "--x") == ["/d/ld-linux-aarch64.so.1", "--library-path", "/d",
                                           f"/d/{ET_RUNNER}", "--x"]
    # ONNX Runtime's: the runner, the wheel's C library under its soname, and the glibc
    # libraries that library asks for.
    needed, interpreter = elf_dependencies(ort_bundle.files[ORT_RUNNER])
    assert interpreter == "/lib/ld-linux-aarch64.so.1" and ORT_LIBRARY in needed
    assert {ORT_RUNNER, ORT_LIBRARY, "ld-linux-aarch64.so.1", "libc.so.6",
            "libstdc++.so.6"} <= set(ort_bundle.files)
    assert not {name for name in ort_bundle.files if name.startswith("libexecutorch")}
    assert {elf_architecture(p) for p in ort_bundle.files.values()} == {"aarch64"}
    # LiteRT's: LiteRT-LM's library, which links its C++ runtime in and asks glibc only.
    needed, interpreter = elf_dependencies(litert_bundle.files[LITERT_RUNNER])
    assert interpreter == "/lib/ld-linux-aarch64.so.1" and LITERT_LIBRARY in needed
    assert set(litert_bundle.files) == {LITERT_RUNNER, LITERT_LIBRARY, "ld-linux-aarch64.so.1",
                                        "libc.so.6", "libm.so.6", "libpthread.so.0",
                                        "libdl.so.2", "librt.so.1"}
    assert {elf_architecture(p) for p in litert_bundle.files.values()} == {"aarch64"}
    # LiteRT's for an ARMv8.0 core: Debian's TensorFlow Lite under its soname, what it loads
    # (abseil, cpuinfo, farmhash, pthreadpool, the C++ runtime) and sid's glibc, not the
    # cross packages' 2.36: all from the packages apt resolved, which the entry records.
    tools, debian = _debian_litert(zoo_cache_dir)
    packages = tools.facts["debian"]["packages"]  # type: ignore[index]
    assert DEBIAN_TFLITE in packages and "libc6" in packages and "libstdc++6" in packages
    [library] = [name for name in tools.programs if name != LITERT_RUNNER]
    assert library.startswith("libtensorflow-lite.so.")
    needed, interpreter = elf_dependencies(debian.files[LITERT_RUNNER])
    assert interpreter == "/lib/ld-linux-aarch64.so.1" and library in needed
    assert {LITERT_RUNNER, library, "ld-linux-aarch64.so.1", "libc.so.6", "libm.so.6",
            "libstdc++.so.6", "libgcc_s.so.1", "libcpuinfo.so.0", "libpthreadpool.so.0",
            "libfarmhash.so.0"} <= set(debian.files)
    assert {name for name in debian.files if not name.startswith("libabsl_")} == {
        LITERT_RUNNER, library, "ld-linux-aarch64.so.1", "libc.so.6", "libm.so.6",
        "libstdc++.so.6", "libgcc_s.so.1", "libcpuinfo.so.0", "libpthreadpool.so.0",
        "libfarmhash.so.0"}
    sysroot = Path(tools.folder.parent, tools.facts["sysroot"]["folders"][0])  # type: ignore[index]
    assert debian.files["libc.so.6"].read_bytes() == (sysroot / "libc.so.6").read_bytes()
    assert {elf_architecture(p) for p in debian.files.values()} == {"aarch64"}
    assert 6 * 2**20 < debian.size < 24 * 2**20  # 11.4 MiB: a tenth of LiteRT-LM's


def test_executorch_and_onnx_runtime_run_on_the_phone_without_python_through_their_bundles(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], et_bundle: GlibcBundle,
        ort_bundle: GlibcBundle, zoo_cache_dir: Path, tmp_path: Path) -> None:
    server, phones = arm_phones
    phone = phones["cortex-a53"]
    kept = phone.root / "data/local/tmp/benchlab" / KEPT_FOLDER
    shutil.rmtree(kept, ignore_errors=True)  # a bundle an earlier test pushed
    # runner=auto: no Python on the phone, so benchlab's runners. OpenVINO has no runner
    # here: one line saying so, no job, its file neither exported for the phone nor pushed.
    results = benchlab.run(models=["mlp"],
                           frameworks=[ET_FP32, ET_INT8, ORT_FP32, ORT_INT8, "openvino"],
                           target=_target(server, phone), cache_dir=zoo_cache_dir,
                           overrides=benchlab.TestOverrides(repeat=1, iter=2, warmup=0,
                                                            min_time=0.0, profile_ops=True),
                           db=tmp_path / "et.db")
    by_cell = {(r.identity.framework, r.identity.framework_config.get("precision", "fp32")): r
               for r in results}
    assert set(by_cell) == {(fw, p) for fw in ("executorch", "onnxruntime")
                            for p in ("fp32", "int8")}
    (skip,) = results.skipped
    assert skip[0] == "mlp @ openvino" and "has no Python" in skip[1]
    # What this phone's runners read: LiteRT's .tflite too (over Debian's TensorFlow Lite on
    # the A53: the LiteRT test below).
    assert sorted(export_readers([AdbTarget(phone.serial, server_port=server.port)], [])(
        ZOO["mlp"])) == ["executorch", "onnxruntime", "tflite"]
    # The int8 programs' own error on the host: ExecuTorch's through its runner (x86-64's
    # XNNPACK), ONNX Runtime's through the binding.
    host_int8 = {"executorch": benchlab.outputs("mlp", f"{ET_INT8},runner=native",
                                                cache_dir=zoo_cache_dir),
                 "onnxruntime": benchlab.outputs("mlp", ORT_INT8, cache_dir=zoo_cache_dir)}
    bundles = {"executorch": (et_bundle, "et-aarch64"), "onnxruntime": (ort_bundle, "ort-aarch64")}
    folders = set()
    for (framework, precision), result in by_cell.items():
        assert result.status is Status.OK, (framework, precision, result.error)
        details, summaries = result.details, result.summaries
        ops = {s.type for s in result.samples if s.type != "NET"}
        if framework == "executorch":
            assert details["tool"] == f"{ET_RUNNER} (ExecuTorch {ET_VERSION} libs)"
            assert details["delegate"] == "xnnpack" and details["precision"] == precision
            # Per-operator rows from the phone's ETDump, XNNPACK's own events named.
            assert "xnnpack: DELEGATE_CALL" in ops, ops
            assert any(op.startswith("xnnpack: Fully Connected") for op in ops), ops
        else:
            assert details["tool"].startswith(f"{ORT_RUNNER} (ONNX Runtime {ORT_VERSION} C")
            assert details["precision"] == precision
            # Per-operator rows from ONNX Runtime's own profile, written on the phone.
            assert details["op_profile_source"] == "ONNX Runtime profiler"
            assert ops and all(not op.startswith("xnnpack") for op in ops), ops
        # The code it brought: the whole bundle, kept on the phone by its content.
        bundle, prefix = bundles[framework]
        assert summaries[metric_key("NET", Metric.CODE_SIZE)].p50 == bundle.size / 2**20
        assert details["kept_files"]["folder"].endswith(bundle.device_folder(prefix))
        folders.add(details["kept_files"]["folder"])
        sqnr = summaries[metric_key("NET", Metric.SQNR)].p50
        if precision == "fp32":
            assert sqnr >= 60, (framework, sqnr)
        else:  # the int8 program's own error, as on the host
            assert abs(sqnr - host_int8[framework].errors["sqnr"]) < 1.0, (
                framework, sqnr, host_int8[framework].errors)
    # Pushed once: each runtime's first job pushed its bundle, the second found it.
    for framework in ("executorch", "onnxruntime"):
        assert [by_cell[framework, p].details["kept_files"]["pushed_now"]
                for p in ("fp32", "int8")] == [True, False], framework
    assert sorted(p.name for p in kept.iterdir()) == sorted(f.rsplit("/", 1)[-1]
                                                            for f in folders)
    assert not list((phone.root / "data").rglob("*.xml"))  # OpenVINO's, never exported here
    leftovers = list((phone.root / "data/local/tmp/benchlab").glob("benchlab-*"))
    assert leftovers == []
    # The arrays themselves, from the phone, through the bundles already there.
    for framework in (ET_FP32, ORT_FP32):
        got = benchlab.outputs("mlp", framework, target=_target(server, phone),
                               cache_dir=zoo_cache_dir)
        assert [a.shape for a in got.outputs] == [(16, 10)] and got.errors["sqnr"] >= 60
        (tensor,) = got.as_torch()
        assert tuple(tensor.shape) == (16, 10)
    assert len(list(kept.iterdir())) == 2


def test_a_users_model_and_a_compare_of_two_pte_files_reach_the_phone_from_the_command_line(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], et_bundle: GlibcBundle,
        zoo_cache_dir: Path, tmp_path: Path) -> None:
    """A model benchlab has never seen, given with ``--model``, is exported to the format the
    phone's runner reads and answers with its accuracy; ``compare --target adb`` of two
    ``.pte`` files measures both on the phone in process pairs (no Python there for the
    interleaved process) and stores them as the phone's. The effect is known beforehand:
    ExecuTorch's portable kernels against XNNPACK's, about 3.4 times the latency on the
    emulated A53 (docs/targets.md)."""
    server, phones = arm_phones
    target = _target(server, phones["cortex-a53"])
    quick = ["--iter", "3", "--warmup", "0", "--min-time", "0", "-q"]
    net = write(tmp_path, "mynet.py", MYNET.format(seed=0))
    db = tmp_path / "r.db"
    ran = CliRunner().invoke(app, [
        "run", "--model", f"{net}:build", "--input", "1x3x32x32", "-f", ET_FP32, "--target",
        target, "--repeat", "1", "--cache-dir", str(zoo_cache_dir), "--db", str(db), *quick])
    assert ran.exit_code == 0, ran.output
    with benchlab.open_store(db) as store:
        [result] = [r for run in store.list_runs() for r in store.results(run.uuid)]
    assert result.status is Status.OK and result.identity.model_name == "mynet", result.error
    assert result.identity.target == "adb"
    assert result.details["tool"] == f"{ET_RUNNER} (ExecuTorch {ET_VERSION} libs)"
    assert result.summaries[metric_key("NET", Metric.SQNR)].p50 >= 60  # against the host's eager

    (mlp,) = export_models(["mlp"], ArtifactCache(zoo_cache_dir),
                           formats=["pte_xnnpack", "pte_portable"])
    xnnpack, portable = (str(mlp.files[key][0]) for key in ("pte_xnnpack", "pte_portable"))
    compared = CliRunner().invoke(app, [
        "compare", "--models", "mlp", "-f", ET_FP32, "--target", target,
        "--control-model", xnnpack, "--treatment-model", portable, "--pairs", "6",
        "--no-verify", "--cache-dir", str(zoo_cache_dir), "--db", str(db), *quick])
    assert compared.exit_code == 1, compared.output  # the portable kernels: a regression
    assert "regression" in compared.output and "process pairs" in compared.output
    with benchlab.open_store(db) as store:
        sides = [r for run in store.list_runs() for r in store.results(run.uuid)
                 if r.identity.model_name == "mlp"]
    assert {r.identity.variant for r in sides} == {"control", "treatment"}
    assert {r.identity.target for r in sides} == {"adb"}
    # track takes --target the same way: a phone that is not there is named, nothing runs.
    spec = tmp_path / "loop.json"
    spec.write_text(json.dumps({"model": {"name": "loop", "format": "generic"}, "tests": [
        {"identifier": "loop", "commands": ["{program}"]}]}))
    refused = CliRunner().invoke(app, [
        "track", str(spec), "--repo", str(tmp_path), "--program", "x", "--target",
        f"adb:serial=NOPE,server_port={server.port}", "--db", str(db)])
    assert refused.exit_code != 0 and "NOPE" in str(refused.exception) + refused.output


def test_litert_runs_on_the_a76_phone_over_litert_lm_and_on_the_a53_over_debians_tflite(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], litert_bundle: GlibcBundle,
        zoo_cache_dir: Path, tmp_path: Path) -> None:
    server, phones = arm_phones
    targets = {cpu: AdbTarget(phones[cpu].serial, server_port=server.port)
               for cpu in ("cortex-a53", "cortex-a76")}
    # LiteRT-LM's aarch64 library runs LDAPR (ARMv8.3's RCpc load) while it loads: the A53's
    # CPU lacks it, and runs the runner over Debian's TensorFlow Lite instead; both phones'
    # runners read .tflite files.
    assert "tflite" in export_readers([targets["cortex-a53"]], [])(ZOO["mlp"])
    assert "tflite" in export_readers([targets["cortex-a76"]], [])(ZOO["mlp"])
    # Where the features are not listed, a job over LiteRT-LM's library ends at its first
    # command saying so (no SIGILL).
    guard = {cpu: target.run(RunRequest(NEEDS_LRCPC, timeout=60))
             for cpu, target in targets.items()}
    assert guard["cortex-a53"].returncode == 1
    assert guard["cortex-a53"].stderr.strip() == LRCPC_MISSING
    assert guard["cortex-a76"].returncode == 0, guard["cortex-a76"].stderr
    phone = phones["cortex-a76"]
    results = benchlab.run(models=["mlp"], frameworks=["tflite"],
                           target=_target(server, phone), cache_dir=zoo_cache_dir,
                           overrides=benchlab.TestOverrides(repeat=1, iter=2, warmup=0,
                                                            min_time=0.0, profile_ops=True),
                           db=tmp_path / "litert.db")
    [result] = results
    assert result.status is Status.OK, result.error
    details, summaries = result.details, result.summaries
    assert details["tool"].startswith(f"{LITERT_RUNNER} (TensorFlow Lite 2.23.0 C API")
    # Per-operator rows from TFLite's telemetry profiler on the phone: XNNPACK's own.
    assert details["op_profile_source"] == "TensorFlow Lite telemetry profiler"
    assert {s.type for s in result.samples if s.type != "NET"} == {
        "xnnpack: Fully Connected (NC, F32) GEMM"}
    assert summaries[metric_key("NET", Metric.CODE_SIZE)].p50 == litert_bundle.size / 2**20
    assert details["kept_files"]["folder"].endswith(litert_bundle.device_folder(
        "litert-aarch64"))
    assert summaries[metric_key("NET", Metric.SQNR)].p50 >= 60
    # The arrays, from the phone, through the bundle already there.
    got = benchlab.outputs("mlp", "tflite", target=_target(server, phone),
                           cache_dir=zoo_cache_dir)
    assert [a.shape for a in got.outputs] == [(16, 10)] and got.errors["sqnr"] >= 60
    # The A53: Debian's library, which has no XNNPACK. Asked for, XNNPACK is one "not run"
    # line from the phone's listed features, before anything is pushed; unset, the built-in
    # kernels run, and the result names the library that ran.
    tools, debian = _debian_litert(zoo_cache_dir)
    results = benchlab.run(models=["mlp"], frameworks=["tflite", "tflite:xnnpack=true"],
                           target=_target(server, phones["cortex-a53"]),
                           cache_dir=zoo_cache_dir, overrides=benchlab.TestOverrides(
                               repeat=1, iter=2, warmup=0, min_time=0.0),
                           db=tmp_path / "litert-a53.db")
    assert [reason for _, reason in results.skipped] == [XNNPACK_MISSING]
    [result] = results
    assert result.status is Status.OK, result.error
    details, summaries = result.details, result.summaries
    version = tools.facts["debian"]["packages"][DEBIAN_TFLITE]  # type: ignore[index]
    assert details["tool"] == litert_runner_tool(
        "2.14.1", f"Debian's {DEBIAN_TFLITE} {version}", xnnpack=False)
    assert details["xnnpack"] is False and details["runtime_version"] == "2.14.1"
    assert summaries[metric_key("NET", Metric.CODE_SIZE)].p50 == debian.size / 2**20
    assert details["kept_files"]["folder"].endswith(debian.device_folder(
        "litert-debian-aarch64"))
    assert summaries[metric_key("NET", Metric.SQNR)].p50 >= 60


def test_a_text_generator_on_the_phone_plans_llamacpp_alone_and_says_why_not_the_rest(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], llama_15m_spec: Path) -> None:
    server, phones = arm_phones
    target = AdbTarget(phones["cortex-a53"].serial, server_port=server.port)
    plan = benchlab.plan_sweep([llama_15m_spec], target=[target],
                               frameworks=["llamacpp", "executorch", "onnxruntime"])
    assert {job.identity.framework for job in plan.jobs} == {"llamacpp"}
    reasons = {skip.framework: skip.reason for skip in plan.skipped}
    assert set(reasons) == {"executorch", "onnxruntime"}
    assert "ExecuTorch runner runs forward passes" in reasons["executorch"]
    assert "has no Python" in reasons["onnxruntime"]
    # The export of a zoo text generator for the phone: llama.cpp's files alone.
    assert export_readers([target], [])(ZOO["llama_15m"]) == ["llamacpp"]


def test_a_runner_that_crashes_mid_run_fails_its_job_and_leaves_nothing_running(
        arm_phones: tuple[AdbServer, dict[str, StandinPhone]], et_bundle: GlibcBundle,
        zoo_cache_dir: Path, tmp_path: Path) -> None:
    server, phones = arm_phones
    crashed: list[int] = []

    def crash_the_runner() -> None:
        # The emulated runner's process (QEMU's, holding the runner's command line), sent
        # SIGSEGV once it runs: a crash mid-run, as a fault in the runtime would be.
        for _ in range(600):
            for pid in _runner_pids():
                os.kill(pid, signal.SIGSEGV)
                crashed.append(pid)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=crash_the_runner)
    killer.start()
    try:
        (result,) = benchlab.run(
            models=["mlp"], frameworks=[ET_FP32], target=_target(server, phones["cortex-a76"]),
            cache_dir=zoo_cache_dir, db=tmp_path / "crash.db",
            overrides=benchlab.TestOverrides(repeat=1, iter=100_000, warmup=0, min_time=0.0,
                                             timeout=120.0))
    finally:
        killer.join()
    assert crashed, "the runner never ran"
    assert result.status is Status.FAILED, (result.status, result.error)
    assert "killed by SIGSEGV" in (result.error or ""), result.error
    assert _runner_pids() == []
    leftovers = list((phones["cortex-a76"].root / "data/local/tmp/benchlab").glob("benchlab-*"))
    assert leftovers == []


def _runner_pids() -> list[int]:
    """The processes of benchlab's ExecuTorch runner on this machine (emulated ones run as
    QEMU with the runner's command line)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            exe = os.readlink(proc / "exe")
        except OSError:
            continue
        if ET_RUNNER.encode() in cmdline and "qemu" in exe:
            found.append(int(proc.name))
    return found

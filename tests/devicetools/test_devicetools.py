"""What benchlab builds for devices, without building it: ELF architectures, compilers, the
build cache's rules, the raw-tensor file protocol, and the device runner's output read on the
host (tests/targets/test_arm_phone.py builds and runs the real thing)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchlab.devicetools import (
    BuildCache,
    architecture_of_abi,
    elf_architecture,
    find_toolchain,
    host_architecture,
    refuse_wrong_architecture,
)
from benchlab.errors import InfrastructureError, TargetError, UsageError
from benchlab.frameworks.llamacpp.device import parse_device_output
from benchlab.protocol.tensorfiles import decode_raw, read_tensors, write_tensors
from benchlab.runner.generate import GenerativeReference, save_generative_reference
from benchlab.schema.result import Metric
from benchlab.targets.armcpu import arm_cpu, hwcap_features
from benchlab.targets.base import CommandResult


def _aarch64_elf(path: Path) -> Path:
    """A file whose ELF header says aarch64 (e_machine 183), as a cross-built program's does."""
    header = bytearray(64)
    header[:4], header[4], header[5] = b"\x7fELF", 2, 1
    header[16:18], header[18:20] = (2).to_bytes(2, "little"), (183).to_bytes(2, "little")
    path.write_bytes(bytes(header))
    return path


def test_the_architecture_is_read_from_the_elf_header(tmp_path: Path) -> None:
    assert elf_architecture(Path("/bin/true")) == host_architecture()
    assert elf_architecture(_aarch64_elf(tmp_path / "arm")) == "aarch64"
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    assert elf_architecture(script) is None
    assert architecture_of_abi("arm64-v8a") == architecture_of_abi("aarch64") == "aarch64"
    assert architecture_of_abi("mips") is None


def test_a_program_for_another_cpu_is_refused_naming_both(tmp_path: Path) -> None:
    arm = _aarch64_elf(tmp_path / "tool")
    refuse_wrong_architecture(arm, "arm64-v8a")  # the same CPU: fine
    refuse_wrong_architecture(tmp_path / "missing", "arm64-v8a")  # not a program: not judged
    with pytest.raises(UsageError) as caught:
        refuse_wrong_architecture(Path("/bin/true"), "arm64-v8a", device="adb device X")
    said = str(caught.value)
    assert f"built for {host_architecture()}" in said and "arm64-v8a (aarch64)" in said
    assert "adb device X" in said and "nothing was pushed" in said
    with pytest.raises(UsageError, match="built for aarch64"):
        refuse_wrong_architecture(arm, "x86_64")


def test_a_missing_cross_compiler_names_the_package_to_install() -> None:
    if shutil.which("riscv64-linux-gnu-g++"):
        pytest.skip("a RISC-V cross compiler is installed here")
    with pytest.raises(InfrastructureError) as caught:
        find_toolchain("riscv64")
    assert "apt-get install g++-riscv64-linux-gnu" in str(caught.value)
    host = find_toolchain(host_architecture())
    assert host.version != "unknown" and "-DCMAKE_SYSTEM_NAME=Linux" not in host.cmake_args()


def _entry(cache: BuildCache, key: str, program: Path, architecture: str) -> None:
    folder = cache.folder(key)
    (folder / "bin").mkdir(parents=True)
    shutil.copy(program, folder / "bin" / "tool")
    cache.finish(key, architecture, {"tool": "bin/tool"}, {"arch_flags": "armv8-a"})


def test_a_cache_entry_for_the_wrong_architecture_is_never_reused(tmp_path: Path) -> None:
    cache = BuildCache(tmp_path / "devicetools")
    # A finished aarch64 entry is found, with what it holds.
    _entry(cache, "good", _aarch64_elf(tmp_path / "arm"), "aarch64")
    found = cache.find("good", "aarch64", ("tool",))
    assert found is not None and not found.built_now
    assert found.program("tool").read_bytes()[18] == 183
    # An entry keyed aarch64 whose program is the host's: discarded, and said so.
    _entry(cache, "lying", Path("/bin/true"), "aarch64")
    said: list[str] = []
    assert cache.find("lying", "aarch64", ("tool",), on_discard=said.append) is None
    assert not cache.folder("lying").exists()
    assert said and f"built for {host_architecture()}, not aarch64" in said[0]
    # A build cut before it finished left no entry.json: not an entry.
    (cache.folder("cut") / "bin").mkdir(parents=True)
    assert cache.find("cut", "aarch64", ("tool",)) is None
    # An entry without a program asked for is not the entry for it.
    assert cache.find("good", "aarch64", ("tool", "llama-bench")) is None


def test_raw_tensors_travel_with_a_manifest_and_a_wrong_size_is_named(tmp_path: Path) -> None:
    arrays = {"logits": np.arange(12, dtype=np.float32).reshape(3, 4),
              "tokens": np.array([5, 7], dtype=np.int32)}
    manifest = write_tensors(tmp_path / "out", arrays, manifest="outputs.json")
    back = read_tensors(manifest)
    assert set(back) == {"logits", "tokens"}
    np.testing.assert_array_equal(back["logits"], arrays["logits"])
    assert back["tokens"].dtype == np.int32
    (tmp_path / "out" / "logits.bin").write_bytes(b"\0" * 40)  # a truncated pull
    with pytest.raises(ValueError, match=r"logits.bin holds 40 bytes; a float32 tensor of "
                                         r"shape \[3, 4\] is 48 bytes"):
        read_tensors(manifest)
    with pytest.raises(ValueError, match="lists logits.bin, which did not come back"):
        read_tensors(manifest, {"logits.bin": tmp_path / "nowhere"})
    raw = tmp_path / "executor_runner-0.bin"
    np.ones((2, 3), dtype=np.float32).tofile(raw)
    assert decode_raw(raw, "float32", [2, 3]).shape == (2, 3)
    with pytest.raises(ValueError, match="is 4 bytes"):
        decode_raw(raw, "float32", [1])


def test_several_tensors_in_one_file_are_read_at_their_offsets(tmp_path: Path) -> None:
    # What benchlab's ExecuTorch runner writes: every output back to back, one file to pull.
    first, second = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([9, 8], np.int64)
    (tmp_path / "outputs.bin").write_bytes(first.tobytes() + second.tobytes())
    entries = [{"name": "output0", "dtype": "float32", "shape": [2, 3], "file": "outputs.bin",
                "offset": 0},
               {"name": "output1", "dtype": "int64", "shape": [2], "file": "outputs.bin",
                "offset": 24}]
    manifest = tmp_path / "outputs.json"
    manifest.write_text(json.dumps({"tensors": entries}))
    back = read_tensors(manifest)
    np.testing.assert_array_equal(back["output0"], first)
    np.testing.assert_array_equal(back["output1"], second)
    (tmp_path / "outputs.bin").write_bytes(first.tobytes() + b"\0" * 8)  # cut short
    with pytest.raises(ValueError, match="holds 32 bytes; tensor 'output1' .* ends at byte 40"):
        read_tensors(manifest)
    entries[1]["offset"] = -8
    manifest.write_text(json.dumps({"tensors": entries}))
    with pytest.raises(ValueError, match="offset -8"):
        read_tensors(manifest)


def test_hwcaps_read_as_an_arm_kernel_names_them() -> None:
    # Measured under QEMU 7.2: the Cortex-A53's AT_HWCAP and MIDR_EL1.
    a53 = arm_cpu({"arch": "aarch64", "hwcap": 0x8FB, "hwcap2": 0, "midr": 0x410FD034})
    assert a53["features"] == ["fp", "asimd", "aes", "pmull", "sha1", "sha2", "crc32", "cpuid"]
    assert a53["core"] == "Cortex-A53" and a53["int8_instructions"] == "NEON without dot product"
    assert "i8mm" in hwcap_features(0, 1 << 13)
    unread = arm_cpu({"arch": "aarch64", "hwcap": 0x3})
    assert unread["core"] is None and "MIDR_EL1" in unread["unread"][0]
    assert arm_cpu({"arch": "x86_64", "hwcap": 1}) == {"arch": "x86_64"}


def _device_lines(*objects: dict) -> str:
    return "\n".join("BENCHLAB_DEVICE " + json.dumps(o) for o in objects) + "\n"


READINGS = [{"cpu": {"arch": "aarch64", "hwcap": 0x8FB, "hwcap2": 0, "midr": 0x410FD034}},
            {"load_ms": 12.5, "threads": 2, "n_ctx": 256, "prompt_tokens": 4, "new_tokens": 3,
             "depth": 0},
            {"generation": "cold", "start": 0, "tokens": [40_000_000, 50_000_000, 60_000_000]},
            {"generation": "timed", "start": 0, "tokens": [20_000_000, 30_000_000, 50_000_000]},
            {"ops": {"MUL_MAT": {"ms": 7.5, "nodes": 10}}}, {"peak_rss_kib": 2048}]


def test_the_device_runners_readings_become_benchlabs_metrics() -> None:
    parsed = parse_device_output([CommandResult(0, _device_lines(*READINGS), "", 1.0)])
    values = {(s.type, s.metric): s.value for s in parsed.samples}
    assert values[("NET", Metric.LOAD_TIME)] == 12.5
    assert values[("NET", Metric.FIRST_INFERENCE)] == 40.0  # the cold generation's TTFT
    assert values[("NET", Metric.TTFT)] == 20.0
    assert values[("NET", Metric.TPOT)] == 15.0  # (50 - 20) / 2
    assert values[("NET", Metric.PREFILL_RATE)] == 200.0  # 4 tokens in 20 ms
    assert values[("MUL_MAT", Metric.LATENCY)] == 7.5
    assert values[("NET", Metric.MEMORY_PEAK)] == 2.0
    assert parsed.details["device_cpu"]["core"] == "Cortex-A53"


def _reference(tmp_path: Path, vocab: int = 6) -> Path:
    rng = np.random.default_rng(0)
    reference = GenerativeReference(
        prompt=np.array([1, 2, 3]), logits=rng.normal(size=(3, vocab)).astype(np.float32),
        tokens=np.array([4, 5]), text=np.array([1, 2, 3, 4]))
    path = tmp_path / "ref.npz"
    save_generative_reference(path, reference)
    return path


def test_the_devices_answers_are_scored_here_and_bad_ones_fail_the_job(tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    with np.load(reference) as data:
        logits = data["logits"]
    forced = np.concatenate([logits, np.eye(6, dtype=np.float32)[[5]]])  # then picks token 5
    forced[2] = 0
    forced[2, 4] = 9.0  # the last prompt position picks token 4: both agree
    answers = {"forced_logits": forced, "free_tokens": np.array([4, 5], dtype=np.int32),
               "text_logprobs": np.log(np.full(3, 0.5, dtype=np.float32))}
    manifest = write_tensors(tmp_path / "pulled", answers, manifest="outputs.json")
    files = {"outputs.json": manifest, "files.reference": reference,
             **{f"{name}.bin": tmp_path / "pulled" / f"{name}.bin" for name in answers}}
    line = _device_lines({"answers": "/data/x/outputs.json", "compare": 2})
    parsed = parse_device_output([CommandResult(0, line, "", 1.0, files=files)])
    values = {s.metric: s.value for s in parsed.samples}
    assert values[Metric.TOKEN_AGREEMENT] == 1.0
    assert values[Metric.FIRST_DIVERGENCE] == 2.0
    assert values[Metric.PERPLEXITY] == pytest.approx(2.0)
    noise = np.sum((forced[:3].astype(np.float64) - logits) ** 2)
    assert values[Metric.SQNR] == pytest.approx(10 * np.log10(np.sum(logits.astype(np.float64) ** 2) / noise))
    # Logits of another vocabulary, a truncated file, a manifest that never came back.
    write_tensors(tmp_path / "other", {**answers, "forced_logits": np.zeros((4, 7), np.float32)},
                  manifest="outputs.json")
    other = {**files, "outputs.json": tmp_path / "other" / "outputs.json",
             "forced_logits.bin": tmp_path / "other" / "forced_logits.bin"}
    with pytest.raises(TargetError, match="vocabulary has 6 tokens"):
        parse_device_output([CommandResult(0, line, "", 1.0, files=other)])
    (tmp_path / "pulled" / "free_tokens.bin").write_bytes(b"\0\0")
    with pytest.raises(TargetError, match="free_tokens.bin holds 2 bytes"):
        parse_device_output([CommandResult(0, line, "", 1.0, files=files)])
    missing = {k: v for k, v in files.items() if k != "outputs.json"}
    with pytest.raises(TargetError, match="outputs.json did not come back"):
        parse_device_output([CommandResult(0, line, "", 1.0, files=missing)])

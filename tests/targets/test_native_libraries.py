"""FAI-PEP's ``--shared_libs`` and ``--wipe_cache`` (issue 55): a native tool's shared
libraries pushed beside it and found by the dynamic loader on the target, and the caches
evicted before each process, on the host and on the ARM stand-in phone through the real adb
client.

The tool and its library are built here (a few C lines; about a tenth of a second per build):
the tool prints one metric line whose value comes from the library, so a result carrying that
value proves the loader found the library where benchlab put it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchlab_standin import StandinPhone, arm_profile
from benchlab_standin.adbserver import AdbServer, isolated_adb_server
from typer.testing import CliRunner

import benchlab
from benchlab.cli.commands import app
from benchlab.errors import UsageError
from benchlab.schema.result import DetailKey, Metric, Status
from benchlab.spec import load_spec

LIBRARY = "libbenchlabvalue.so"
VALUE = 42
LIBRARY_C = f"int benchlab_library_value(void) {{ return {VALUE}; }}\n"
TOOL_C = r"""#include <stdio.h>
int benchlab_library_value(void);
int main(void) {
  printf("BENCHLAB_METRIC {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\","
         "\"value\":%d}\n", benchlab_library_value());
  return 0;
}
"""
#: Where Debian's cross libc lies: the aarch64 tool finds its own libc there (its loader and
#: RUNPATH name it), and the tool's library only through LD_LIBRARY_PATH.
AARCH64_LIBC = Path("/usr/aarch64-linux-gnu/lib")
QUICK = benchlab.TestOverrides(repeat=1, iter=1, warmup=0, min_time=0.0)


def _build(compiler: str, folder: Path, *extra: str) -> tuple[Path, Path]:
    """The library and the tool linked against it (by name only: no path to it is built in)."""
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "value.c").write_text(LIBRARY_C)
    (folder / "tool.c").write_text(TOOL_C)
    library, tool = folder / LIBRARY, folder / "benchmark_model"
    subprocess.run([compiler, "-shared", "-fPIC", f"-Wl,-soname,{LIBRARY}", "-o", str(library),
                    str(folder / "value.c")], check=True, timeout=120)
    subprocess.run([compiler, "-o", str(tool), str(folder / "tool.c"), f"-L{folder}",
                    "-lbenchlabvalue", *extra], check=True, timeout=120)
    return library, tool


def _spec(folder: Path, libraries: list[dict] | None = None) -> Path:
    """A tflite spec whose model file the tool never reads (it is the tool's model)."""
    (folder / "m.tflite").write_bytes(b"TFL3 read by no one")
    model = {"name": "libvalue", "format": "tflite",
             "files": {"tflite": {"location": "m.tflite", "md5": None}}}
    if libraries is not None:
        model["libraries"] = libraries
    path = folder / "spec.json"
    path.write_text(json.dumps({"model": model, "tests": [{"identifier": "t", "inputs": {}}]}))
    return path


def test_a_host_tool_finds_its_library_and_each_process_starts_with_caches_wiped(
        tmp_path: Path) -> None:
    library, tool = _build("gcc", tmp_path / "build")
    overrides = benchlab.TestOverrides(repeat=1, iter=1, warmup=0, wipe_cache=True)
    (result,) = benchlab.run(_spec(tmp_path), frameworks=[f"tflite:binary={tool},libs={library}"],
                             overrides=overrides, db=tmp_path / "r.db",
                             cache_dir=tmp_path / "cache")
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.samples_of("NET latency") == [VALUE]
    code = tool.stat().st_size + library.stat().st_size
    assert result.details[DetailKey.NATIVE_FILES] == {
        "binary": tool.stat().st_size, "libs": {LIBRARY: library.stat().st_size}, "bytes": code}
    # The tool's code size is what it brought: its binary and its library.
    assert result.summaries[Metric.CODE_SIZE.key].p50 == pytest.approx(code / 2**20)
    wipe = result.details[DetailKey.CACHE_WIPE]
    sizes = list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cache/index*/size"))
    if sizes:
        assert wipe["cpu_source"] == "sysfs" and wipe["cpu_bytes"] == 2 * wipe["llc_bytes"] > 0
    else:
        assert wipe["cpu_source"] == "fallback" and wipe["cpu_bytes"] == 64 * 1024 * 1024
    # The one drop of this machine's page cache the suite makes (as root), else why not.
    assert wipe["file_cache"] == "dropped" or wipe["file_cache"].startswith("not dropped: ")
    assert wipe["processes"] == 1


def test_a_faipep_specs_libraries_are_verified_pushed_and_found(tmp_path: Path) -> None:
    library, tool = _build("gcc", tmp_path / "build")
    digest = hashlib.md5(library.read_bytes()).hexdigest()  # noqa: S324 - FAI-PEP's hash
    spec = _spec(tmp_path, [{"location": str(library), "md5": digest}])
    loaded = load_spec(spec)
    assert list(loaded.model.libraries) == [LIBRARY]
    assert not [key for key, _ in loaded.ignored if key == "model.libraries"]
    (result,) = benchlab.run(spec, frameworks=[f"tflite:binary={tool}"], overrides=QUICK,
                             db=tmp_path / "r.db", cache_dir=tmp_path / "cache")
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.samples_of("NET latency") == [VALUE]
    # A library whose content is not the one the spec names is refused before the job runs.
    spec = _spec(tmp_path, [{"location": str(library), "md5": "0" * 32}])
    (refused,) = benchlab.run(spec, frameworks=[f"tflite:binary={tool}"], overrides=QUICK,
                              db=tmp_path / "r.db", cache_dir=tmp_path / "cache")
    assert refused.status is Status.USER_ERROR and LIBRARY in refused.error


def test_the_command_line_takes_faipeps_spellings(tmp_path: Path) -> None:
    library, tool = _build("gcc", tmp_path / "build")
    outcome = CliRunner().invoke(app, [
        "run", str(_spec(tmp_path)), "-f", f"tflite:binary={tool}", "--shared_libs",
        str(library), "--wipe_cache", "false", "--repeat", "1", "--iter", "1", "--quiet",
        "--db", str(tmp_path / "r.db"), "--cache-dir", str(tmp_path / "cache"),
        "--json-dir", str(tmp_path / "json")])
    assert outcome.exit_code == 0, outcome.output
    (written,) = (tmp_path / "json").rglob("*.json")
    details = json.loads(written.read_text())["details"]
    assert details[DetailKey.NATIVE_FILES]["libs"] == {LIBRARY: library.stat().st_size}
    assert DetailKey.CACHE_WIPE not in details  # --wipe_cache false
    wrong = CliRunner().invoke(app, ["run", "--wipe_cache", "maybe", "--dry-run"])
    # The command's UsageError (exit status 2 from the `benchlab` entry point).
    assert isinstance(wrong.exception, UsageError)
    assert str(wrong.exception) == "--wipe_cache takes true or false, not 'maybe'"


@pytest.fixture(scope="module")
def arm_phone(tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[tuple[AdbServer, StandinPhone]]:
    """A Cortex-A53 stand-in phone (aarch64 code on an emulated core) on its own adb server."""
    if shutil.which("adb") is None:
        pytest.skip("the adb client is not installed (apt-get install adb)")
    if not (AARCH64_LIBC / "ld-linux-aarch64.so.1").is_file():
        pytest.skip("Debian's aarch64 libc is missing (apt-get install libc6-dev-arm64-cross)")
    try:
        phone = StandinPhone(tmp_path_factory.mktemp("arm") / "a53",
                             profile=arm_profile("cortex-a53")).start()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    try:
        with isolated_adb_server() as server:
            server.connect(phone.serial)
            yield server, phone
    finally:
        phone.stop()


@pytest.mark.arm
def test_the_library_is_found_on_the_arm_phone_and_its_absence_names_it(
        arm_phone: tuple[AdbServer, StandinPhone], tmp_path: Path) -> None:
    server, phone = arm_phone
    library, tool = _build(
        "aarch64-linux-gnu-gcc", tmp_path / "build",
        f"-Wl,--dynamic-linker={AARCH64_LIBC}/ld-linux-aarch64.so.1", f"-Wl,-rpath,{AARCH64_LIBC}")
    common = dict(frameworks=[f"tflite:binary={tool}"], db=tmp_path / "r.db",
                  target=f"adb:serial={phone.serial},server_port={server.port}",
                  cache_dir=tmp_path / "cache")
    overrides = benchlab.TestOverrides(repeat=1, iter=1, warmup=0, wipe_cache=True,
                                       shared_libs=str(library))
    (result,) = benchlab.run(_spec(tmp_path), overrides=overrides, **common)
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.samples_of("NET latency") == [VALUE]
    assert result.details[DetailKey.NATIVE_FILES]["libs"] == {LIBRARY: library.stat().st_size}
    assert result.summaries[Metric.CODE_SIZE.key].p50 == pytest.approx(
        (tool.stat().st_size + library.stat().st_size) / 2**20)
    # The phone's sysfs lists its Cortex-A53 cluster's 512K L2 as the last level (the files
    # its own processes read: benchlab_standin.cpuview), and root's drop reached the phone's
    # own switch, not this machine's.
    wipe = result.details[DetailKey.CACHE_WIPE]
    assert wipe == {"cpu_bytes": 2 * 512 * 1024, "cpu_source": "sysfs",
                    "llc_bytes": 512 * 1024, "file_cache": "dropped", "processes": 1}
    assert (phone.root / "proc/sys/vm/drop_caches").read_text().strip() == "3"
    # Without the library the tool cannot start: the job fails with the loader's reason.
    (failed,) = benchlab.run(_spec(tmp_path), overrides=QUICK, **common)
    assert failed.status is Status.FAILED
    assert LIBRARY in failed.error and "cannot open shared object file" in failed.error

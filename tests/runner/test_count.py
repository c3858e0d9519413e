"""Counting mode through the real valgrind: a C program's marked calls, benchlab's runner on
ONNX Runtime, and what the launcher says when it cannot count."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import benchlab
from benchlab.protocol.lines import parse_output
from benchlab.protocol.step import include_dir
from benchlab.runner.counting import client_request, running_on_valgrind
from benchlab.schema.result import DetailKey, Metric, Status

pytestmark = [pytest.mark.valgrind, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DOT_C = ROOT / "examples" / "count" / "dot.c"


@pytest.fixture(scope="module")
def dot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("dot") / "dot"
    subprocess.run([compiler, "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror",
                    f"-I{include_dir()}", str(DOT_C), "-o", str(out)], check=True, timeout=120)
    return out


def count(*argv: str, what: str = "instructions",
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlab.runner.count", what, "--", *argv],
                          capture_output=True, text=True, timeout=300, env=env)


def test_a_c_programs_marked_calls_are_counted_exactly(dot: Path) -> None:
    natively = subprocess.run([dot, "--n", "1000", "--iter", "2"], capture_output=True,
                              text=True, check=True, timeout=60).stdout
    assert [s.metric for s in parse_output(natively).samples] == ["latency", "latency"]

    runs = {n: count(str(dot), "--n", str(n), "--iter", "3") for n in (100_000, 101_000)}
    counts = {}
    for n, run in runs.items():
        assert run.returncode == 0, run.stderr
        parsed = parse_output(run.stdout)
        # The program's own times, taken under valgrind, are left out; its calls are counted.
        assert {s.metric for s in parsed.samples} == {Metric.INSTRUCTIONS}
        values = [s.value for s in parsed.samples]
        assert len(values) == 3 and len(set(values)) == 1  # the same work, the same count
        counts[n] = values[0]
        facts = parsed.details[DetailKey.COUNTING]
        assert facts["tool"] == "callgrind" and facts["counted_calls"] == 3
        assert facts["times_dropped"].startswith("3 time samples")
        assert facts["hardware_counters"]  # probed and said, whichever way
    # 1% more elements: 1% more instructions, to the instruction (11 per element, 16 fixed).
    assert counts[101_000] - counts[100_000] == 11 * 1_000
    assert counts[101_000] / counts[100_000] == pytest.approx(1.01, abs=1e-5)


def test_cache_mode_adds_the_simulated_misses(dot: Path) -> None:
    run = count(str(dot), "--n", "1000", "--iter", "1", what="cache")
    assert run.returncode == 0, run.stderr
    metrics = [s.metric for s in parse_output(run.stdout).samples]
    assert metrics == [Metric.INSTRUCTIONS, Metric.L1D_MISSES, Metric.LL_MISSES]


def test_a_program_that_marks_nothing_or_no_valgrind_is_said_and_fails(dot: Path) -> None:
    unmarked = count(shutil.which("true") or "/bin/true")
    assert unmarked.returncode == 3
    assert "counted no call" in unmarked.stderr and "BENCHLAB_COUNTED" in unmarked.stderr

    no_valgrind = count(str(dot), env={**os.environ, "PATH": str(Path(sys.executable).parent)})
    assert no_valgrind.returncode == 3
    assert "counting needs valgrind" in no_valgrind.stderr
    assert "apt-get install valgrind" in no_valgrind.stderr

    failing = count("sh", "-c", "exit 5")  # a small program: CPython under valgrind is slow
    assert failing.returncode == 5  # the program's own failure, passed on

    usage = subprocess.run([sys.executable, "-m", "benchlab.runner.count", "seconds", "--",
                            "x"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "instructions,cache" in usage.stderr


def test_the_client_request_is_a_no_op_outside_valgrind() -> None:
    assert running_on_valgrind() == 0
    assert client_request(0x1001, default=7) == 7


def test_the_runner_counts_onnx_runtime_calls_one_thread(dot: Path, zoo_cache_dir: Path,
                                                         tmp_path: Path) -> None:
    results = benchlab.run(
        models=["mlp"], frameworks=["onnxruntime:precision=fp32"], cache_dir=zoo_cache_dir,
        db=tmp_path / "r.db", json_dir=tmp_path / "json",
        overrides=benchlab.TestOverrides(count="instructions", iter=3, warmup=1, repeat=1))
    (result,) = results
    assert result.status is Status.OK, result.error
    counted = [s.value for s in result.samples if s.metric == Metric.INSTRUCTIONS]
    assert len(counted) == 3
    # One intra-op thread, said; calls of one model agree to a fraction of a percent.
    assert result.details[DetailKey.INTRA_OP_THREADS] == 1
    assert (max(counted) - min(counted)) / min(counted) < 0.01
    assert not [s for s in result.samples if s.metric == Metric.LATENCY]  # no time under valgrind
    assert result.details[DetailKey.COUNTING]["counted_calls"] == 3
    # The answer is a timed run's to check: each call under valgrind costs seconds.
    assert "counting mode" in result.details["accuracy_skipped"]
    stored = json.loads(next((tmp_path / "json").rglob("*.json")).read_text())
    assert stored["details"]["counting"]["tool"] == "callgrind"


@pytest.fixture(scope="module")
def dot_arm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("aarch64-linux-gnu-gcc")
    if compiler is None or shutil.which("qemu-aarch64") is None:
        pytest.skip("needs aarch64-linux-gnu-gcc and Debian's qemu-user (qemu-aarch64)")
    out = tmp_path_factory.mktemp("dot-arm") / "dot"
    subprocess.run([compiler, "-O2", "-std=c99", "-static", f"-I{include_dir()}", str(DOT_C),
                    "-o", str(out)], check=True, timeout=120)
    return out


@pytest.mark.arm
def test_an_aarch64_program_is_counted_on_the_emulated_core_it_names(dot_arm: Path,
                                                                     tmp_path: Path) -> None:
    counts: dict[tuple[str, int], list[float]] = {}
    for core in ("cortex-a53", "cortex-a76"):
        for n in (100_000, 101_000):
            run = count(str(dot_arm), "--n", str(n), "--iter", "2",
                        env={**os.environ, "QEMU_CPU": core,
                             "XDG_CACHE_HOME": str(tmp_path / "cache")})
            assert run.returncode == 0, run.stderr
            parsed = parse_output(run.stdout)
            counts[core, n] = [s.value for s in parsed.samples]
            facts = parsed.details[DetailKey.COUNTING]
            assert facts["tool"] == "qemu-plugin" and facts["cpu"] == core
            assert "emulated by QEMU" in facts["emulated"]  # labelled where it appears
    # Eight aarch64 instructions per element, on either core: the same program, the same
    # instruction set; 1% more elements, 1% more instructions, to the instruction.
    for core in ("cortex-a53", "cortex-a76"):
        assert len(set(counts[core, 100_000])) == 1
        assert counts[core, 101_000][0] - counts[core, 100_000][0] == 8 * 1_000
    assert counts["cortex-a53", 100_000] == counts["cortex-a76", 100_000]
    # The plugin was built once into the cache and found again.
    assert len(list((tmp_path / "cache").rglob("libqemu_count.so"))) == 1
    # An emulated core simulates no cache: said, not faked.
    cache = count(str(dot_arm), what="cache")
    assert cache.returncode == 3 and "QEMU simulates no cache" in cache.stderr

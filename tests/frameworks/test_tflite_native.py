"""``tflite:runner=native``: benchlab's own C runner over the TFLite C API of LiteRT-LM's
library, run natively on this host (issue 64).

The runner is built before the tests (tests/prebuild.py, key ``host-litert-runner``), never
inside one. What is checked is what a user reads: the outputs score as the Python binding's
do on the same reference (every input set), the per-operator rows come from TFLite's own
telemetry profiler (XNNPACK's operators named as XNNPACK names them, the built-in kernels'
without it), the result names the runner and the library that ran, and a model or input the
runtime refuses fails with the runtime's reason.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from prebuild import prepared

import benchlab
from benchlab.devicetools import BuiltTools, host_architecture
from benchlab.devicetools.litertrunner import LITERT_RUNNER, build_litert_runner
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import UsageError
from benchlab.frameworks.base import Staging
from benchlab.frameworks.tflite import TfliteFramework
from benchlab.frameworks.tflite.native import parse_native_output, profile_rows
from benchlab.runner.accuracy import error_stats, load_reference, stack_sets
from benchlab.schema.result import Metric, Status
from benchlab.spec.artifacts import ArtifactCache, default_cache_dir
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.base import CommandResult
from benchlab.zoo import export_models

from .conftest import job_context, model_def

ITER = 3
TOOL = ("benchlab-litert-runner (TensorFlow Lite 2.23.0 C API of litert-lm-api 0.18.1's "
        "liblitert-lm.so)")


@pytest.fixture(scope="module")
def litert_runner() -> BuiltTools:
    """The runner for this host, as the run prepared it (found in benchlab's own cache)."""
    prepared("host-litert-runner")
    return build_litert_runner(host_architecture(), device_tools_dir(default_cache_dir()))


def _mlp_files(cache_dir: Path) -> dict[str, Path]:
    [export] = export_models(["mlp"], ArtifactCache(cache_dir), formats=["tflite"])
    return {key: Path(path) for key, (path, _) in export.files.items()}


def _binding_sqnr(model: Path, reference: Path) -> float:
    """ai-edge-litert's SQNR on ``model`` over every set of ``reference``, in this process."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(model))
    interp.allocate_tensors()
    [inp], [out] = interp.get_input_details(), interp.get_output_details()
    loaded = load_reference(reference)
    got = []
    for inputs, _ in [(loaded.inputs, loaded.outputs), *loaded.more]:
        interp.set_tensor(inp["index"], next(iter(inputs.values())))
        interp.invoke()
        got.append([interp.get_tensor(out["index"]).copy()])
    want = [loaded.outputs, *(outs for _, outs in loaded.more)]
    return error_stats(stack_sets(got), stack_sets(want), loaded.task)[Metric.SQNR]


@pytest.mark.slow
def test_the_zoo_mlp_scores_as_the_binding_does_with_xnnpacks_and_the_kernels_rows(
        litert_runner: BuiltTools, zoo_cache_dir: Path, tmp_path: Path) -> None:
    # The bare name beside a configured one: both run (the binding, then the runner twice).
    results = benchlab.run(
        models=["mlp"], frameworks=["tflite", "tflite:runner=native",
                                    "tflite:runner=native,xnnpack=false"],
        overrides=benchlab.TestOverrides(iter=ITER, warmup=1, min_time=0.0, repeat=1,
                                         profile_ops=True),
        cache_dir=zoo_cache_dir, db=tmp_path / "r.db")
    by_config = {(r.identity.framework_config.get("runner", "auto"),
                  r.identity.framework_config.get("xnnpack", True)): r for r in results}
    assert set(by_config) == {("auto", True), ("native", True), ("native", False)}, [
        (r.identity.label, r.error) for r in results]
    local = _mlp_files(zoo_cache_dir)
    binding = _binding_sqnr(local["tflite"], local["reference"])
    ops = {}
    for (runner, xnnpack), result in by_config.items():
        assert result.status is Status.OK, (runner, xnnpack, result.error)
        if runner == "auto":
            assert "tool" not in result.details  # the Python binding
            continue
        details = result.details
        # Honest about what ran: benchlab's runner over LiteRT-LM's library, not the
        # ai-edge-litert the host's Python runs.
        assert details["tool"] == TOOL and details["runtime_version"] == "2.23.0"
        assert details["xnnpack"] is xnnpack and details["xnnpack_applied"] is xnnpack
        assert len([s for s in result.samples if s.key == "NET latency"]) == ITER
        assert result.summaries["NET memory_peak"].p50 > 1
        assert details["outputs"] == [{"index": 0, "sizes": [16, 10]}]
        assert details["reference_sets"] == len(load_reference(local["reference"]).more) + 1
        # Both at float32's own rounding (two TFLite builds round differently: 123 to 127 dB
        # here), far above the 60 dB an fp32 run is held to.
        native = result.summaries[f"NET {Metric.SQNR}"].p50
        assert native > 100 and binding > 100, (xnnpack, native, binding)
        assert details["op_profile_source"] == "TensorFlow Lite telemetry profiler"
        ops[xnnpack] = {s.type for s in result.samples if s.type != "NET"}
        for op in ops[xnnpack]:
            assert len([s for s in result.samples if s.type == op]) == ITER, op
    # XNNPACK's own operators with the delegate; the interpreter's kernels without it.
    assert ops[True] == {"xnnpack: Fully Connected (NC, F32) GEMM"}, ops
    assert ops[False] == {"FULLY_CONNECTED"}, ops


def test_profile_lines_become_one_row_per_timed_run() -> None:
    text = ("# run\tkind\toperator\tnode\tsubgraph\tus\n"
            "1\tnode\tPAD\t0\t0\t10.0\n"
            "2\tnode\tPAD\t0\t0\t4.0\n2\tdelegate\tConvolution (NHWC, F32) IGEMM\t1\t0\t500\n"
            "2\tdelegate\tConvolution (NHWC, F32) IGEMM\t2\t0\t250\n"
            "3\tnode\tPAD\t0\t0\t6.0\nnot a line\n")
    assert profile_rows(text, warmup_runs=1) == [
        {"PAD": 0.004, "xnnpack: Convolution (NHWC, F32) IGEMM": 0.75}, {"PAD": 0.006}]


def test_the_tool_names_the_library_the_runner_says_it_loaded() -> None:
    debian = "Debian's libtensorflow-lite2.14.1 2.14.1+dfsg-3.1+b1"
    lines = (f"benchlab-litert-runner: TensorFlow Lite 2.14.1 C API of {debian}\n"
             "XNNPACK delegate: off (this library has none)\n"
             "Iteration 1 of 1: 2.5 ms\nModel executed successfully 1 time(s) in 2.5 ms.\n")
    details = parse_native_output([CommandResult(0, lines, "", 1.0)]).details
    assert details["tool"] == f"benchlab-litert-runner (TensorFlow Lite 2.14.1 C API of " \
                              f"{debian}, without XNNPACK)"
    assert details["library"] == debian and details["xnnpack"] is False
    # LiteRT-LM's, with XNNPACK off as asked: the library has it, the tool says no more.
    lines = lines.replace(f"2.14.1 C API of {debian}", "2.23.0 C API of litert-lm-api "
                          "0.18.1's liblitert-lm.so").replace(" (this library has none)", "")
    assert parse_native_output([CommandResult(0, lines, "", 1.0)]).details["tool"] == TOOL


@pytest.mark.slow
def test_a_bad_model_or_input_fails_with_the_runtimes_reason(
        litert_runner: BuiltTools, zoo_cache_dir: Path, tmp_path: Path) -> None:
    runner = str(litert_runner.program(LITERT_RUNNER))
    model = _mlp_files(zoo_cache_dir)["tflite"]
    cut = tmp_path / "cut.tflite"
    cut.write_bytes(model.read_bytes()[:3000])
    done = subprocess.run([runner, f"--model_path={cut}", f"--output_dir={tmp_path}"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and f"TensorFlow Lite refused the model {cut}" in done.stderr
    assert not (tmp_path / "outputs.json").exists()
    wrong = tmp_path / "in.bin"
    wrong.write_bytes(np.ones((16, 256), np.float32).tobytes())
    done = subprocess.run([runner, f"--model_path={model}", f"--input={wrong}"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stdout
    assert "does not hold the 32768 bytes the model takes (a float32 tensor of sizes " \
           "[16, 512])" in done.stderr, done.stderr
    done = subprocess.run([runner, f"--model_path={model}", "--xnnpack=maybe"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--xnnpack takes true, false or auto" in done.stderr


def test_runner_option_is_declared_and_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    fw = TfliteFramework()
    declared = {o.name: o for o in fw.declared_options}
    assert declared["runner"].choices == ("auto", "python", "native")
    bare = job_context(model_def({"tflite": "m.tflite"}), FrameworkConfig("tflite", {}))

    def stage(options: dict[str, object], abi: str = "x86_64",
              features: frozenset[str] | None = None) -> object:
        config = FrameworkConfig("tflite", options)
        return fw.device_files(Staging(spec=bare.spec, test=bare.test, config=config,
                                       python=sys.executable, abi=abi, local_files={},
                                       scratch=tmp_path, cache_root=tmp_path,
                                       arm_features=lambda: features))

    assert stage({}) == {} and stage({"runner": "python"}) == {}
    with pytest.raises(UsageError, match="binary= runs your own benchmark_model"):
        stage({"runner": "native", "binary": "/x/benchmark_model"})
    with pytest.raises(UsageError, match="flags= are a native tool's"):
        stage({"runner": "native", "flags": "--use_gpu=true"})
    assert stage({"runner": "native"}, abi="arm64-v8a") == {}  # a phone: in the bundle
    # An ARMv8.0 CPU runs Debian's TensorFlow Lite, which has no XNNPACK: asked for, refused
    # (benchlab.outputs has no plan to say it first).
    with pytest.raises(UsageError, match="Debian builds without it"):
        stage({"runner": "native", "xnnpack": True}, abi="arm64-v8a",
              features=frozenset({"fp", "asimd"}))
    assert not (tmp_path / "devicetools").exists()  # refused before anything was fetched
    assert not fw.runs_native_runner(sys.executable, {})
    assert fw.runs_native_runner("", {}) and not fw.runs_native_runner(
        "", {"binary": "/x/benchmark_model"})
    model = bare.spec.model
    assert fw.why_not_without_python(model, {}) is None
    assert "runner=python" in str(fw.why_not_without_python(model, {"runner": "python"}))

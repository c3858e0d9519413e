"""``onnxruntime:runner=native``: benchlab's own C runner over the C library of ONNX Runtime's
wheel, run natively on this host (issue 64).

The runner is built before the tests (tests/prebuild.py, key ``host-ort-runner``), never
inside one. What is checked is what a user reads: the outputs score as the Python binding's
do on the same reference (every input set), the per-operator rows come from ONNX Runtime's
own profiler, the result names the runner and the library that ran, and a model or input the
runtime refuses fails its job with the runtime's reason.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from prebuild import prepared

import benchlab
from benchlab.devicetools import BuiltTools, host_architecture
from benchlab.devicetools.ortrunner import ORT_VERSION, build_ort_runner, ort_header
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import InfrastructureError, UsageError
from benchlab.frameworks.base import Staging
from benchlab.frameworks.onnxruntime import OnnxRuntimeFramework
from benchlab.runner.accuracy import error_stats, load_reference, save_reference, stack_sets
from benchlab.schema.result import Metric, Status
from benchlab.spec.artifacts import ArtifactCache, default_cache_dir
from benchlab.spec.types import FrameworkConfig
from benchlab.targets.base import RunRequest
from benchlab.targets.host import HostTarget
from benchlab.zoo import export_models

from .conftest import job_context, model_def

ITER = 3
TOOL = f"benchlab-ort-runner (ONNX Runtime {ORT_VERSION} C library, API 21 header)"


@pytest.fixture(scope="module")
def ort_runner() -> BuiltTools:
    """The runner for this host, as the run prepared it (found in benchlab's own cache)."""
    prepared("host-ort-runner")
    return build_ort_runner(host_architecture(), device_tools_dir(default_cache_dir()))


def _mlp_files(cache_dir: Path) -> dict[str, Path]:
    """The zoo mlp's ONNX files and reference, by key (exported once per run)."""
    [export] = export_models(["mlp"], ArtifactCache(cache_dir), formats=["onnx", "onnx_int8"])
    return {key: Path(path) for key, (path, _) in export.files.items()}


def _binding_sqnr(model: Path, reference: Path) -> float:
    """The Python binding's SQNR on ``model`` over every set of ``reference``, computed as
    benchlab's Python runner does (in this process: no runner process to pay for)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [arg.name for arg in session.get_inputs()]
    loaded = load_reference(reference)
    sets = [(loaded.inputs, loaded.outputs), *loaded.more]
    got = [session.run(None, dict(zip(names, ins.values(), strict=True))) for ins, _ in sets]
    return error_stats(stack_sets(got), stack_sets([outs for _, outs in sets]),
                       loaded.task)[Metric.SQNR]


@pytest.mark.slow
def test_the_zoo_mlp_fp32_and_int8_score_as_the_binding_does_with_profile_rows(
        ort_runner: BuiltTools, zoo_cache_dir: Path, tmp_path: Path) -> None:
    results = benchlab.run(
        models=["mlp"], frameworks=["onnxruntime:runner=native",
                                    "onnxruntime:runner=native,precision=int8"],
        overrides=benchlab.TestOverrides(iter=ITER, warmup=1, min_time=0.0, repeat=1,
                                         profile_ops=True),
        cache_dir=zoo_cache_dir, db=tmp_path / "r.db")
    by_precision = {r.details.get("precision"): r for r in results}
    assert set(by_precision) == {"fp32", "int8"}, [(r.identity.label, r.error) for r in results]
    local = _mlp_files(zoo_cache_dir)
    ops = {}
    for precision, result in by_precision.items():
        assert result.status is Status.OK, (precision, result.error)
        details = result.details
        # Honest about what ran: benchlab's runner over the wheel's C library.
        assert details["tool"] == TOOL and details["runtime_version"] == ORT_VERSION
        assert len([s for s in result.samples if s.key == "NET latency"]) == ITER
        assert result.summaries["NET first_inference"].p50 > 0
        assert result.summaries["NET memory_peak"].p50 > 1
        assert details["outputs"] == [{"index": 0, "sizes": [16, 10]}]
        # Every reference set scored, as the Python runner scores them, to the binding's dB.
        assert details["reference_sets"] == len(load_reference(local["reference"]).more) + 1
        binding = _binding_sqnr(local["onnx_int8" if precision == "int8" else "onnx"],
                                local["reference"])
        native = result.summaries[f"NET {Metric.SQNR}"].p50
        assert abs(native - binding) < 0.1, (precision, native, binding)
        # ONNX Runtime's own profile, one row per timed run, as a host run's profile_ops.
        assert details["op_profile_source"] == "ONNX Runtime profiler"
        assert details["delegation"]["by_engine"] == {
            "CPUExecutionProvider": details["delegation"]["nodes"]}
        ops[precision] = {s.type for s in result.samples if s.type != "NET"}
        for op in ops[precision]:
            assert len([s for s in result.samples if s.type == op]) == ITER, op
    assert by_precision["fp32"].summaries[f"NET {Metric.SQNR}"].p50 > 60
    assert "DynamicQuantizeMatMul" in ops["int8"] and "DynamicQuantizeMatMul" not in ops["fp32"]


def _run_mlp(fw: OnnxRuntimeFramework, onnx: Path, reference: Path, tmp_path: Path,
             ) -> tuple[object, object]:
    """One repetition through the adapter as the harness drives it on the host: stage the
    runner and the reference's inputs, run the command, attach what it pulled."""
    config = FrameworkConfig("onnxruntime", {"runner": "native"})
    model = model_def({"onnx": onnx.name, "reference": "ref.npz"})
    local = {"files.onnx": onnx, "files.reference": reference}
    bare = job_context(model, config, workdir=str(tmp_path), iter=1, warmup=0)
    made = fw.device_files(Staging(
        spec=bare.spec, test=bare.test, config=config, python=sys.executable,
        abi=host_architecture(), local_files=local, scratch=tmp_path,
        cache_root=default_cache_dir()))
    files = {key: str(path) for key, path in {**local, **made}.items()}
    [invocation] = fw.invocations(replace(bare, files=files))
    done = HostTarget().run(RunRequest(invocation.argv, env=invocation.env, cwd=str(tmp_path),
                                       timeout=60))
    return done, invocation


@pytest.mark.slow
def test_an_input_of_the_wrong_size_is_refused_naming_the_input(
        ort_runner: BuiltTools, zoo_cache_dir: Path, tmp_path: Path) -> None:
    wrong = tmp_path / "ref.npz"
    save_reference(wrong, {"input0": np.ones((16, 256), np.float32)}, [])
    done, _ = _run_mlp(OnnxRuntimeFramework(), _mlp_files(zoo_cache_dir)["onnx"], wrong,
                       tmp_path)
    assert not done.ok  # type: ignore[attr-defined]
    assert "input 0 (input0)" in done.stderr, done.stderr  # type: ignore[attr-defined]
    assert "does not hold the 32768 bytes" in done.stderr  # type: ignore[attr-defined]
    assert "[16, 512]" in done.stderr  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_truncated_model_fails_with_the_runtimes_reason(
        ort_runner: BuiltTools, zoo_cache_dir: Path, tmp_path: Path) -> None:
    # Through the adapter: benchlab.run(model=cut.onnx) refuses the file earlier, when it
    # reads the user's model with the Python binding, and so never reaches the runner.
    local = _mlp_files(zoo_cache_dir)
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(local["onnx"].read_bytes()[:3000])
    done, _ = _run_mlp(OnnxRuntimeFramework(), cut, local["reference"], tmp_path)
    assert done.returncode == 1, done.stdout  # type: ignore[attr-defined]
    assert f"ONNX Runtime refused the model {cut}" in done.stderr, (  # type: ignore[attr-defined]
        done.stderr)  # type: ignore[attr-defined]
    assert "Protobuf parsing failed" in done.stderr  # type: ignore[attr-defined]
    assert not (tmp_path / "outputs.json").exists()


def test_runner_option_is_declared_and_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    fw = OnnxRuntimeFramework()
    declared = {o.name: o for o in fw.declared_options}
    assert declared["runner"].choices == ("auto", "python", "native")
    bare = job_context(model_def({"onnx": "m.onnx"}), FrameworkConfig("onnxruntime", {}))

    def stage(options: dict[str, object], abi: str = "x86_64") -> object:
        config = FrameworkConfig("onnxruntime", options)
        return fw.device_files(Staging(spec=bare.spec, test=bare.test, config=config,
                                       python=sys.executable, abi=abi, local_files={},
                                       scratch=tmp_path, cache_root=tmp_path))

    assert stage({}) == {} and stage({"runner": "python"}) == {}
    with pytest.raises(UsageError, match="binary= runs your own onnxruntime_perf_test"):
        stage({"runner": "native", "binary": "/x/onnxruntime_perf_test"})
    with pytest.raises(UsageError, match="CPU provider only"):
        stage({"runner": "native", "providers": "OpenVINOExecutionProvider"})
    # A phone: the runner travels in its glibc bundle (kept_files), not in the job's files.
    assert stage({"runner": "native"}, abi="arm64-v8a") == {}
    assert not (tmp_path / "devicetools").exists()  # refused before anything was fetched
    # auto: the binding where the target has Python, benchlab's runner where it has none, a
    # given onnxruntime_perf_test as given; options the runner cannot honour say so before
    # anything is exported for a phone.
    assert not fw.runs_native_runner(sys.executable, {})
    assert fw.runs_native_runner("", {}) and fw.runs_native_runner("", {"runner": "auto"})
    assert not fw.runs_native_runner("", {"binary": "/x/onnxruntime_perf_test"})
    model = bare.spec.model
    assert fw.why_not_without_python(model, {}) is None
    assert "runner=python" in str(fw.why_not_without_python(model, {"runner": "python"}))
    assert "CPU provider only" in str(fw.why_not_without_python(
        model, {"providers": "OpenVINOExecutionProvider"}))


@pytest.mark.skipif(shutil.which("riscv64-linux-gnu-g++") is not None,
                    reason="this machine has a riscv64 cross compiler")
def test_a_missing_cross_compiler_is_named_before_anything_is_fetched(tmp_path: Path) -> None:
    with pytest.raises(InfrastructureError, match="g\\+\\+-riscv64-linux-gnu"):
        build_ort_runner("riscv64", tmp_path)
    assert not (tmp_path / "sources").exists()


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="no apt-get here")
def test_an_unreachable_archive_is_named(tmp_path: Path) -> None:
    # Nothing listens on port 9 here: apt fails at once, as with no network.
    with pytest.raises(InfrastructureError,
                       match="could not fetch libonnxruntime-dev from Debian trixie "
                             "\\(http://127.0.0.1:9/debian\\)"):
        ort_header(tmp_path, archive="http://127.0.0.1:9/debian")

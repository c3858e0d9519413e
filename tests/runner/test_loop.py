"""Tests of benchlab's runner: ``python -m benchlab.runner '<json>'`` as a real process.

Each configuration runs once per module (a torch process takes seconds to start) and the
tests read its metric lines back through :func:`benchlab.protocol.lines.parse_output`, exactly as
the harness does.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from benchlab.protocol.lines import ParsedOutput, parse_output
from benchlab.runner.config import InputConfig, RunnerConfig
from benchlab.runner.loop import make_inputs

TORCH = "benchlab.frameworks.pytorch.backend:PyTorchBackend"
ORT = "benchlab.frameworks.onnxruntime.backend:OnnxRuntimeBackend"


@dataclass
class Run:
    config: dict[str, Any]
    proc: subprocess.CompletedProcess[str]
    parsed: ParsedOutput

    def values(self, type_: str, metric: str) -> list[float]:
        return [s.value for s in self.parsed.samples if s.type == type_ and s.metric == metric]

    def op_types(self) -> set[str]:
        return {s.type for s in self.parsed.samples if s.type != "NET"}


def run_runner(config: dict[str, Any], timeout: float = 120) -> Run:
    proc = subprocess.run(
        [sys.executable, "-m", "benchlab.runner", json.dumps(config)],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
    )
    return Run(config, proc, parse_output(proc.stdout))


def _ok(run: Run) -> Run:
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    return run


@pytest.fixture(scope="module")
def eager_run() -> Run:
    return _ok(run_runner({
        "backend": TORCH, "runtime": "torch", "entry": "benchlab.zoo.models:mlp",
        "options": {"mode": "eager"},
        "iterations": 7, "warmup": 2, "min_time": 0, "profile_ops": True,
        "profile_iterations": 3,
    }))


@pytest.fixture(scope="module")
def torchscript_run(torchscript_file: Path) -> Run:
    return _ok(run_runner({
        "backend": TORCH, "runtime": "torch", "model_path": str(torchscript_file),
        "options": {"mode": "torchscript"},
        "inputs": [{"name": "x", "shape": [3, 8]}], "iterations": 6, "threads": 1,
        "profile_ops": True, "profile_iterations": 2,
    }))


@pytest.fixture(scope="module")
def ort_run(onnx_file: Path) -> Run:
    # Without optimisation the graph's own nodes (Gemm, Relu, MatMul) are what gets profiled.
    return _ok(run_runner({
        "backend": ORT, "runtime": "onnxruntime", "model_path": str(onnx_file),
        "iterations": 8, "threads": 1,
        "options": {"graph_optimization_level": "disable"},
        "profile_ops": True, "profile_iterations": 4,
    }))


@pytest.fixture(scope="module", params=["eager", "torchscript", "onnxruntime"])
def any_run(request: pytest.FixtureRequest) -> Run:
    name = {"eager": "eager_run", "torchscript": "torchscript_run", "onnxruntime": "ort_run"}
    return request.getfixturevalue(name[request.param])


def test_one_latency_sample_per_iteration(any_run: Run) -> None:
    latencies = any_run.values("NET", "latency")
    assert len(latencies) == any_run.config["iterations"]
    assert all(v >= 0 for v in latencies)
    # Every sample is numbered in order, as the harness expects.
    indices = [s.index for s in any_run.parsed.samples if s.key == "NET latency"]
    assert indices == list(range(len(latencies)))


def test_one_sample_each_of_the_single_shot_metrics(any_run: Run) -> None:
    for metric, unit in (
        ("import_time", "ms"), ("load_time", "ms"), ("first_inference", "ms"),
        ("memory_peak", "MiB"), ("memory_load", "MiB"),
    ):
        samples = [s for s in any_run.parsed.samples if s.key == f"NET {metric}"]
        assert len(samples) == 1, metric
        assert samples[0].unit == unit
    # Peak resident memory of a process that loaded a runtime is never zero.
    assert any_run.values("NET", "memory_peak")[0] > 0


def test_details_carry_runtime_and_stop_reason(any_run: Run) -> None:
    details = any_run.parsed.details
    runtime = "onnxruntime" if any_run.config["backend"] == ORT else "torch"
    assert details["runtime"] == runtime
    assert details["runtime_version"] == importlib.metadata.version(runtime)
    assert details["stop_reason"] == "fixed_iterations"
    assert details["iterations"] == any_run.config["iterations"]
    assert not any_run.parsed.malformed


def test_the_runtime_code_the_process_loaded_is_counted_from_its_own_distribution(
        any_run: Run) -> None:
    """Code size: the libraries of the runtime's own wheel that the runner mapped, each by
    its size on disk, and nothing of another distribution (numpy's, the C++ runtime)."""
    distribution = "onnxruntime" if any_run.config["backend"] == ORT else "torch"
    dist = importlib.metadata.distribution(distribution)
    (mib,) = any_run.values("NET", "code_size")
    code = any_run.parsed.details["code_size"]
    assert code["distribution"] == f"{dist.metadata['Name']} {dist.version}"
    root = Path(str(dist.locate_file("")))
    assert code["files"], code
    for relative, size in code["files"].items():
        assert ".so" in relative, relative
        assert (root / relative).stat().st_size == size
    assert code["bytes"] == sum(code["files"].values())
    assert mib == pytest.approx(code["bytes"] / 2**20)
    # The runtime's main library is always among them.
    main = "onnxruntime_pybind11_state" if distribution == "onnxruntime" else "libtorch_cpu.so"
    assert any(main in name for name in code["files"]), code["files"]
    assert not any("numpy" in name for name in code["files"])


def test_inputs_come_from_the_model_when_the_config_has_none(
    eager_run: Run, ort_run: Run
) -> None:
    from benchlab.zoo.models import mlp

    # The zoo's eager model declares its shapes; the ONNX graph's symbolic batch becomes 1.
    declared = [list(shape) for shape in mlp().example_shapes]
    assert eager_run.parsed.details["inputs"] == {"input0": [declared[0], "float32"]}
    assert ort_run.parsed.details["inputs"] == {"x": [[1, 8], "float32"]}


def test_inputs_from_the_config_are_used(torchscript_run: Run) -> None:
    assert torchscript_run.parsed.details["inputs"] == {"x": [[3, 8], "float32"]}


def test_options_and_threads_reach_the_runtime(
    eager_run: Run, torchscript_run: Run, ort_run: Run
) -> None:
    assert eager_run.parsed.details["mode"] == "eager"
    assert torchscript_run.parsed.details["mode"] == "torchscript"
    assert torchscript_run.parsed.details["threads"] == 1
    assert ort_run.parsed.details["graph_optimization_level"] == "disable"
    assert ort_run.parsed.details["intra_op_threads"] == 1
    assert ort_run.parsed.details["providers"] == ["CPUExecutionProvider"]


@pytest.mark.parametrize("name", ["eager_run", "torchscript_run"])
def test_pytorch_profile_gives_operator_samples(name: str, request: pytest.FixtureRequest) -> None:
    run: Run = request.getfixturevalue(name)
    assert "aten::addmm" in run.op_types()
    # One value per profiled iteration for an operator that runs in every iteration.
    addmm = run.values("aten::addmm", "latency")
    assert len(addmm) == run.config["profile_iterations"]
    # Per-operator samples never displace the whole-network ones.
    assert len(run.values("NET", "latency")) == run.config["iterations"]


def test_onnxruntime_profile_gives_operator_samples(ort_run: Run) -> None:
    ops = ort_run.op_types()
    assert {"Gemm", "MatMul"} <= ops
    for op in ops:
        assert len(ort_run.values(op, "latency")) == ort_run.config["profile_iterations"], op


def test_generous_target_ci_is_reached(onnx_file: Path) -> None:
    run = _ok(run_runner({
        "backend": ORT, "model_path": str(onnx_file), "iterations": 10, "target_ci": 0.5,
        "max_time": 60, "inputs": [{"name": "data", "shape": [3, 8]}],
    }))
    details = run.parsed.details
    assert details["stop_reason"] == "target_ci_reached"
    # Operators are profiled only on request.
    assert run.op_types() == set()
    assert details["ci_rel_halfwidth"] <= 0.5
    assert len(run.values("NET", "latency")) == details["iterations"] >= 10
    # A spec input named differently from the graph's is bound by position.
    assert details["inputs"] == {"data": [[3, 8], "float32"]}


def test_impossible_target_ci_stops_at_the_time_budget(onnx_file: Path) -> None:
    # A big batch makes each call long and its timings spread over many clock ticks: with a
    # microsecond call, hundreds of identical timings can make the median's interval exactly
    # zero wide, and then even a 1e-9 target is legitimately reached.
    run = _ok(run_runner({
        "backend": ORT, "model_path": str(onnx_file), "iterations": 5, "target_ci": 1e-9,
        "max_time": 0.5, "inputs": [{"name": "x", "shape": [100_000, 8]}],
    }))
    details = run.parsed.details
    assert details["stop_reason"] == "time_budget_exhausted"
    assert len(run.values("NET", "latency")) == details["iterations"]


def test_min_time_extends_past_the_iteration_count(onnx_file: Path) -> None:
    run = _ok(run_runner({
        "backend": ORT, "model_path": str(onnx_file), "iterations": 1, "min_time": 0.2,
    }))
    # A sub-millisecond model needs many iterations to fill 0.2 s; only more than one is certain.
    assert len(run.values("NET", "latency")) > 1
    assert run.parsed.details["elapsed_s"] >= 0.2
    assert run.parsed.details["stop_reason"] == "fixed_iterations"


@pytest.mark.parametrize(
    "argv",
    [
        ['{"backend": "x", "iterations": 0}'],  # out of range
        ['{"backend": "x", "no_such_field": 1}'],  # unknown field
        ['{"iterations": 3}'],  # no backend
        ["not json"],
        [],
        ['{"backend": "x"}', "extra"],
    ],
)
def test_invalid_invocations_exit_nonzero_without_metrics(argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchlab.runner", *argv], capture_output=True, text=True,
        timeout=60, check=False,
    )
    assert proc.returncode != 0
    assert parse_output(proc.stdout).metric_lines == 0


def test_a_backend_failure_exits_nonzero(tmp_path: Path) -> None:
    run = run_runner({"backend": ORT, "model_path": str(tmp_path / "missing.onnx")})
    assert run.proc.returncode != 0
    assert not run.parsed.samples
    assert "missing.onnx" in run.proc.stderr


def test_runner_config_validation() -> None:
    config = RunnerConfig.model_validate_json('{"backend": "m:C"}')
    assert (config.iterations, config.warmup, config.profile_iterations) == (10, 1, 10)
    for bad in ({"iterations": 0}, {"warmup": -1}, {"max_time": 0}, {"target_ci": 0},
                {"threads": 0}, {"min_time": -1}):
        with pytest.raises(ValidationError):
            RunnerConfig(backend="m:C", **bad)


def test_make_inputs_is_deterministic_per_seed() -> None:
    specs = [InputConfig(name="a", shape=[2, 3]), InputConfig(name="b", shape=[4], dtype="int64")]
    first, again, other = make_inputs(specs, 7), make_inputs(specs, 7), make_inputs(specs, 8)
    assert list(first) == ["a", "b"]
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    assert not np.array_equal(first["a"], other["a"])


@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "float64", "int64", "int32", "int8", "uint8", "bool"]
)
def test_make_inputs_honours_dtype_and_shape(dtype: str) -> None:
    array = make_inputs([InputConfig(name="t", shape=[5, 6, 7], dtype=dtype)], 0)["t"]
    assert array.dtype == np.dtype(dtype)
    assert array.shape == (5, 6, 7)
    if dtype != "bool":
        # Integer inputs are small and non-negative so they work as indices.
        assert np.all(array >= 0) or np.issubdtype(array.dtype, np.floating)
    # Random, not constant: a constant input would let a runtime shortcut the work.
    assert len(np.unique(array)) > 1


def test_make_inputs_rejects_unknown_dtypes() -> None:
    with pytest.raises(ValueError, match="complex64"):
        make_inputs([InputConfig(name="t", shape=[2], dtype="complex64")], 0)


def test_a_runtime_missing_on_the_device_says_what_to_install(tmp_path: Path) -> None:
    """A backend whose runtime is not installed for the runner's Python (a new board) fails
    with exit status 3 and a last stderr line naming the framework, module and pip command."""
    package = tmp_path / "acme" / "frameworks" / "widget"
    package.mkdir(parents=True)
    for folder in (tmp_path / "acme", tmp_path / "acme" / "frameworks", package):
        (folder / "__init__.py").write_text("")
    (package / "backend.py").write_text("import widget_runtime_xyz.core\n")
    config = json.dumps({"backend": "acme.frameworks.widget.backend:WidgetBackend"})
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "benchlab.runner", config], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 3
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("benchlab runner: widget needs 'widget_runtime_xyz', not installed")
    assert f"{sys.executable} -m pip install widget-runtime-xyz" in last

"""Tests of the ``onnxruntime`` framework adapter: what it accepts, its command, a real run."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.errors import UsageError
from benchlab.frameworks.base import Framework, JobContext, Unsupported
from benchlab.frameworks.onnxruntime import OnnxRuntimeFramework
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.host import HostTarget

from .availability import probe
from .runner_imports import assert_runner_loads_only_its_backend

DEFAULT = FrameworkConfig("onnxruntime", {})


@pytest.fixture
def fw() -> OnnxRuntimeFramework:
    return OnnxRuntimeFramework()


def _run(ctx: JobContext, fw: OnnxRuntimeFramework) -> list[CommandResult]:
    host = HostTarget()
    return [
        host.run(RunRequest(i.argv, env=i.env, cwd=ctx.workdir, timeout=120))
        for i in fw.invocations(ctx)
    ]


def test_is_a_framework(fw: OnnxRuntimeFramework) -> None:
    assert isinstance(fw, Framework)
    assert fw.name == "onnxruntime"


def test_needs_an_onnx_file(
    fw: OnnxRuntimeFramework, make_model: Callable[..., ModelDef]
) -> None:
    assert fw.configurations(make_model({"model": "m.onnx"}), []) == [DEFAULT]
    # Case does not matter; other files beside the model do not either.
    assert fw.configurations(make_model({"data": "d.bin", "model": "M.ONNX"}), []) == [DEFAULT]
    outcome = fw.configurations(make_model({"model": "m.pt"}, format="torchscript"), [])
    assert isinstance(outcome, Unsupported)
    assert ".onnx" in outcome.reason and "'torchscript'" in outcome.reason
    eager = fw.configurations(make_model({}, format="pytorch", entry="pkg:f"), [])
    assert isinstance(eager, Unsupported)


def test_requested_configurations_are_kept(
    fw: OnnxRuntimeFramework, make_model: Callable[..., ModelDef]
) -> None:
    requested = [
        FrameworkConfig("onnxruntime", {"graph_optimization_level": "basic"}),
        FrameworkConfig("onnxruntime", {"intra_op_threads": 2}),
    ]
    assert fw.configurations(make_model({"model": "m.onnx"}), requested) == requested


def test_invocation_points_the_runner_at_the_onnx_file(
    fw: OnnxRuntimeFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    model = make_model({"labels": "labels.txt", "model": "net.onnx"})
    options = {"providers": ["CPUExecutionProvider"], "graph_optimization_level": "extended"}
    ctx = make_ctx(
        model, FrameworkConfig("onnxruntime", options),
        files={"files.labels": "/t/labels.txt", "files.model": "/t/net.onnx"}, iter=3,
    )
    [invocation] = fw.invocations(ctx)
    config = RunnerConfig.model_validate_json(invocation.argv[3])
    assert config.backend == OnnxRuntimeFramework.backend
    assert config.model_path == "/t/net.onnx"
    assert config.options == {**options, "precision": "fp32"}
    assert config.iterations == 3


def test_int8_file_is_a_default_variant_and_never_silently_fp32(
    fw: OnnxRuntimeFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    both = make_model({"onnx": "m.onnx", "onnx_int8": "m.int8.onnx"})
    configs = fw.configurations(both, [])
    assert [dict(c.options) for c in configs] == [{}, {"precision": "int8"}]
    ctx = make_ctx(both, configs[1], files={"files.onnx": "/t/m.onnx",
                                            "files.onnx_int8": "/t/m.int8.onnx"})
    config = RunnerConfig.model_validate_json(fw.invocations(ctx)[0].argv[3])
    assert config.model_path == "/t/m.int8.onnx" and config.options["precision"] == "int8"
    fp32_only = make_model({"onnx": "m.onnx"})
    assert [dict(c.options) for c in fw.configurations(fp32_only, [])] == [{}]
    asked = fw.configurations(fp32_only, [FrameworkConfig("onnxruntime", {"precision": "int8"})])
    assert isinstance(asked, Unsupported) and "onnx_int8" in asked.reason


def test_run_end_to_end_through_the_host_target(
    fw: OnnxRuntimeFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    onnx_file: Path,
    tmp_path: Path,
) -> None:
    model = make_model({"model": "tiny.onnx"})
    [config] = fw.configurations(  # type: ignore[misc]
        model, [FrameworkConfig("onnxruntime", {"graph_optimization_level": "basic"})]
    )
    ctx = make_ctx(model, config, files={"files.model": str(onnx_file)}, workdir=str(tmp_path),
                   iter=5, threads=1)
    results = _run(ctx, fw)
    assert all(r.ok for r in results), results[0].stderr[-2000:]
    parsed = fw.parse(results)
    assert len([s for s in parsed.samples if s.key == "NET latency"]) == 5
    assert parsed.details["graph_optimization_level"] == "basic"
    assert parsed.details["intra_op_threads"] == 1
    assert parsed.details["runtime_version"] == importlib.metadata.version("onnxruntime")


def test_settings_the_runner_would_reject_are_a_usage_error_in_the_harness(
    fw: OnnxRuntimeFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
) -> None:
    model = make_model({"model": "net.onnx"})
    ctx = make_ctx(model, FrameworkConfig("onnxruntime", {"threads": 0}),
                   files={"files.model": "/t/net.onnx"})
    with pytest.raises(UsageError, match="the runner cannot take these settings: threads: "):
        fw.invocations(ctx)


def test_the_runner_process_loads_only_the_runner_and_this_backend(
    fw: OnnxRuntimeFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    onnx_file: Path,
    tmp_path: Path,
) -> None:
    model = make_model({"model": "tiny.onnx"})
    ctx = make_ctx(model, DEFAULT, files={"files.model": str(onnx_file)}, workdir=str(tmp_path),
                   iter=2, threads=1)
    [invocation] = fw.invocations(ctx)
    assert assert_runner_loads_only_its_backend(invocation, "onnxruntime") > 0


def test_a_bad_option_fails_the_run_with_the_reason(
    fw: OnnxRuntimeFramework,
    make_model: Callable[..., ModelDef],
    make_ctx: Callable[..., JobContext],
    onnx_file: Path,
    tmp_path: Path,
) -> None:
    model = make_model({"model": "tiny.onnx"})
    config = FrameworkConfig("onnxruntime", {"graph_optimization_level": "maximum"})
    ctx = make_ctx(model, config, files={"files.model": str(onnx_file)}, workdir=str(tmp_path))
    [result] = _run(ctx, fw)
    assert result.returncode != 0
    assert "graph_optimization_level" in result.stderr
    assert not fw.parse([result]).samples


def test_availability_does_not_import_onnxruntime() -> None:
    result = probe("onnxruntime", "onnxruntime", "torch")
    assert result == {
        "ok": True, "version": importlib.metadata.version("onnxruntime"), "imported": [],
    }

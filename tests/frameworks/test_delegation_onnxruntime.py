"""ONNX Runtime's delegation coverage, read from a real runner process: which provider ran
each node, and the flag when a provider that was asked for took nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.schema.diagnosis import Coverage, coverage_warning
from benchlab.frameworks.base import JobContext
from benchlab.frameworks.onnxruntime import OnnxRuntimeFramework
from benchlab.spec.types import FrameworkConfig, ModelDef

from .one_process import run_one_process

pytest.importorskip("onnxruntime")


def _details(providers: str | None, make_model: Callable[..., ModelDef],
             make_ctx: Callable[..., JobContext], onnx_file: Path, tmp_path: Path,
             repetition: int = 0) -> tuple[dict, str]:
    fw = OnnxRuntimeFramework()
    options = {"providers": providers} if providers else {}
    ctx = make_ctx(make_model({"model": "tiny.onnx"}), FrameworkConfig("onnxruntime", options),
                   files={"files.model": str(onnx_file)}, workdir=str(tmp_path), iter=2,
                   threads=1, repetition=repetition)
    result = run_one_process(fw, ctx, timeout=120)
    return (fw.parse([result]).details if result.ok else {}), result.stderr


def test_the_cpu_session_runs_every_node_and_is_not_flagged(
        make_model: Callable[..., ModelDef], make_ctx: Callable[..., JobContext],
        onnx_file: Path, tmp_path: Path) -> None:
    details, stderr = _details(None, make_model, make_ctx, onnx_file, tmp_path)
    coverage = Coverage.from_detail(details.get("delegation"))
    assert coverage is not None, stderr[-2000:]
    assert coverage.engine == "CPUExecutionProvider" and not coverage.asked
    assert coverage.nodes and coverage.delegated == coverage.nodes and coverage.share == 1.0
    assert not coverage.fallback and coverage_warning(coverage) is None


def test_a_provider_that_takes_no_node_is_flagged_with_what_fell_back(
        make_model: Callable[..., ModelDef], make_ctx: Callable[..., JobContext],
        onnx_file: Path, tmp_path: Path) -> None:
    # The Azure provider ships in the PyPI wheel and runs no local node: a real provider
    # that is installed, accepted by the session, and takes nothing.
    import onnxruntime as ort

    if "AzureExecutionProvider" not in ort.get_available_providers():
        pytest.skip("this onnxruntime build has no AzureExecutionProvider")
    details, stderr = _details("AzureExecutionProvider+CPUExecutionProvider", make_model,
                               make_ctx, onnx_file, tmp_path)
    coverage = Coverage.from_detail(details.get("delegation"))
    assert coverage is not None, stderr[-2000:]
    assert coverage.engine == "AzureExecutionProvider" and coverage.asked
    assert coverage.delegated == 0 and coverage.nodes and coverage.nodes > 0
    assert coverage.fallback_count == coverage.nodes
    assert coverage.by_engine == {"AzureExecutionProvider": 0,
                                  "CPUExecutionProvider": coverage.nodes}
    warning = coverage_warning(coverage)
    assert warning is not None and "took no operator" in warning


def test_a_provider_that_is_not_installed_fails_the_job_naming_it(
        make_model: Callable[..., ModelDef], make_ctx: Callable[..., JobContext],
        onnx_file: Path, tmp_path: Path) -> None:
    details, stderr = _details("CUDAExecutionProvider", make_model, make_ctx, onnx_file,
                               tmp_path)
    assert not details
    assert "CUDAExecutionProvider not available here" in stderr


def test_only_the_jobs_first_process_pays_for_the_diagnosis(
        make_model: Callable[..., ModelDef], make_ctx: Callable[..., JobContext],
        onnx_file: Path, tmp_path: Path) -> None:
    details, stderr = _details(None, make_model, make_ctx, onnx_file, tmp_path, repetition=1)
    assert details, stderr[-2000:]
    assert "delegation" not in details

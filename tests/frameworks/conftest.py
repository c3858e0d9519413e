"""Builders of specs and job contexts for the framework adapter tests, and tiny model files."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from benchlab.frameworks.base import JobContext
from benchlab.spec.placeholders import placeholder_map
from benchlab.spec.types import BenchmarkSpec, FileRef, FrameworkConfig, ModelDef, TestCase



def model_def(files: Mapping[str, str] = (), **fields: Any) -> ModelDef:  # type: ignore[assignment]
    """A model whose ``files`` maps keys to locations (hash checking is not the point here)."""
    refs = {
        key: FileRef(key=key, location=location, base_dir=Path("/specs"), sha256="0" * 64)
        for key, location in dict(files).items()
    }
    fields.setdefault("name", "tiny")
    fields.setdefault("format", "onnx")
    return ModelDef(files=refs, **fields)


def job_context(
    model: ModelDef,
    config: FrameworkConfig,
    *,
    files: Mapping[str, str] | None = None,
    repetition: int = 0,
    workdir: str = "/work/dir",
    **test_fields: Any,
) -> JobContext:
    """A context as the harness builds it: ``files`` are target paths of ``files.KEY``."""
    test_fields.setdefault("identifier", "t0")
    test = TestCase(**test_fields)
    spec = BenchmarkSpec(path=Path("/specs/tiny.json"), model=model, tests=(test,))
    target_files = dict(files or {})
    placeholders = placeholder_map(
        spec, test, files=target_files, target_dir=workdir, extra={"PYTHON": sys.executable}
    )
    return JobContext(
        spec=spec, test=test, config=config, workdir=workdir, python=sys.executable,
        files=target_files, placeholders=placeholders, repetition=repetition,
    )


@pytest.fixture
def make_model() -> Callable[..., ModelDef]:
    return model_def


@pytest.fixture
def make_ctx() -> Callable[..., JobContext]:
    return job_context

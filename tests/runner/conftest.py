"""Tiny model files shared by the runner tests, made once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    import tiny_models
except ModuleNotFoundError:  # tests/ became a package
    from tests import tiny_models


@pytest.fixture(scope="session")
def onnx_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.write_onnx(tmp_path_factory.mktemp("onnx") / "tiny.onnx")


@pytest.fixture(scope="session")
def torchscript_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.write_torchscript(tmp_path_factory.mktemp("ts") / "tiny.pt")
